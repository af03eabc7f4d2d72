"""The capability table says, for every runtime, whether its data plane does each feature, and
why not where it does not: a row with a hole would let a check guess."""
from __future__ import annotations

import pytest

from harness.core.capabilities import DATA_PLANE, Feature, lacks
from harness.core.kinds import RuntimeName


def test_every_runtime_says_every_feature():
    assert set(DATA_PLANE) == set(RuntimeName)
    for runtime, row in DATA_PLANE.items():
        assert set(row) == set(Feature), runtime
        assert all(why is None or len(why) > 30 for why in row.values()), runtime  # a reason, not a word


@pytest.mark.parametrize("runtime, feature, does", [
    ("netns", Feature.ACL_DATA_PATH, True), ("clab", Feature.ACL_DATA_PATH, False),
    ("netns", Feature.BFD_OFFLOAD, True), ("clab", Feature.BFD_OFFLOAD, False),
    ("netns", Feature.LOSSLESS_DATA_PATH, True), ("clab", Feature.LOSSLESS_DATA_PATH, False),
    ("clab", Feature.GRAY_FAILURE, True)])
def test_what_each_runtime_does(runtime, feature, does):
    assert (lacks(runtime, feature) is None) is does


def test_an_unknown_runtime_is_refused():
    with pytest.raises(ValueError):
        lacks("kvm", Feature.ACL_DATA_PATH)
