"""The `hamburger` command line."""

from hamburger.cli.main import main

__all__ = ["main"]
