"""The knob (confidence) range is checked in one place: core/config's check_confidence."""

import pytest

from hamburger.core.config import HamburgerConfig, check_confidence
from hamburger.engine.sampling import DecodingConfig
from hamburger.errors import HamburgerError


def test_the_knob_range_is_checked_in_one_place():
    assert check_confidence(1.0) == 1.0
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(HamburgerError, match=r"confidence must be in \(0, 1\]"):
            check_confidence(bad)
    with pytest.raises(HamburgerError, match=r"^confidence must be in \(0, 1\], got 2"):
        DecodingConfig(confidence=2.0).validate()
    with pytest.raises(HamburgerError, match=r"^default_confidence must be in \(0, 1\]"):
        HamburgerConfig(default_confidence=0.0).validate()
