"""The `hamburger` command line: `main` parses a verb's arguments and calls its library function."""

from hamburger.cli.main import main

__all__ = ["main"]
