"""The TUI's screens: the main one (versions and panes), the views pushed over it (q or Esc goes back), help."""
