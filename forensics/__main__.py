from forensics.cli.main import run

run()
