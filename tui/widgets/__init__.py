"""Widgets of the delta-forensics TUI: one per module, each with its own keys, actions and workers."""
