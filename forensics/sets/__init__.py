"""Per-commit read and write sets rebuilt from the log, and file lifetimes for snapshots at any readVersion.
Uses log/ and predicates/; the rules and the replay consume what it builds.
"""
