"""CLI sub-commands, one module each.

Every module in this package defines `register(subparsers)`, which adds its
sub-command and sets `func` (called with the parsed namespace, returning an
exit code). `csro_tui.cli` discovers them, so adding a command never means
editing a shared file.
"""
