"""Screens pushed over the version list (q or Esc goes back)."""
