"""The `delta-forensics` command line: argument parsing, one module per command, terminal rendering.
It talks to the front object, forensics.Table.
"""
