"""Screens of the app: start, dashboard, review, editor, inspector, play, sessions, help."""
