"""csro-tui: Code-Space Response Oracles in the terminal."""

__version__ = "0.1.0"
