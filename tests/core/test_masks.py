"""The one attention-mask builder (core/masks) against a brute-force construction."""

import pytest
import torch

from hamburger.core.masks import slot_mask


def brute_force_mask(valid, first, q):
    b, k = valid.shape
    out = torch.zeros(b, 1, q, k, dtype=torch.bool)
    for row in range(b):
        for i in range(q):
            for j in range(k):
                out[row, 0, i, j] = (j <= first + i and bool(valid[row, j])) or j == first + i
    return out


@pytest.mark.parametrize("seed", range(4))
def test_slot_mask_matches_brute_force(seed):
    g = torch.Generator().manual_seed(seed)
    valid = torch.rand(3, 7, generator=g) > 0.4
    assert torch.equal(slot_mask(valid), brute_force_mask(valid, 0, 7))
    for first, q in [(4, 3), (2, 1), (0, 5), (6, 1)]:
        assert torch.equal(slot_mask(valid, first, q), brute_force_mask(valid, first, q))
    assert torch.equal(slot_mask(valid, 5), brute_force_mask(valid, 5, 2))
