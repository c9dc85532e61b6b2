from forensics.cli import run

run()
