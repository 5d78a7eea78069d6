"""User-facing errors: the CLI prints these as one clear line instead of a traceback."""


class HamburgerError(Exception):
    """An error caused by user input (bad model, bad checkpoint, bad config, bad prompt...)."""
