"""Widgets of the delta-forensics TUI."""
