"""delta-forensics: who beat whom in a Delta Lake table, by which rule, and what to change."""

__version__ = "0.1.0"
