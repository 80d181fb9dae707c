"""csro-tui's benchmark suite (not part of the tests): `python -m bench [--quick]`."""
