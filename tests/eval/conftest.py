"""Fixtures of the eval tests."""

import pytest

from tests.helpers import Outside


@pytest.fixture
def outside():
    """A world-writable folder, a victim file and a listener outside the sandbox (see helpers.Outside)."""
    place = Outside()
    yield place
    place.close()
