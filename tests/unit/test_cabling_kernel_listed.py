"""A veth peer's namespace looked for among every listed namespace: one dying as another lab
goes down (the kernel answers EINVAL) is passed over, not a failure of the check."""
from __future__ import annotations

import os
from pathlib import Path

from pyroute2.netlink.exceptions import NetlinkError

from harness.checks import cabling_kernel


class FakeIpr:
    def __init__(self, ids: dict[str, int | None]):
        self.ids = ids
        self.asked: list[str] = []

    def get_netnsid(self, fd: int):
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        self.asked.append(name)
        if self.ids[name] is None:
            raise NetlinkError(22, "Invalid argument")
        return {"nsid": self.ids[name]}


def test_a_dying_namespace_is_passed_over_and_the_rest_still_named(tmp_path):
    for name in ("fl_a_x", "fl_b_dying", "fl_c_y"):
        (tmp_path / name).write_text("")
    ipr = FakeIpr({"fl_a_x": 4, "fl_b_dying": None, "fl_c_y": 7})
    assert cabling_kernel._listed(ipr, {7}, tmp_path) == {7: "namespace fl_c_y"}
    assert ipr.asked == ["fl_a_x", "fl_b_dying", "fl_c_y"]  # the dying one was asked, and skipped


def test_nothing_wanted_asks_nothing(tmp_path):
    (tmp_path / "fl_a_x").write_text("")
    ipr = FakeIpr({"fl_a_x": 4})
    assert cabling_kernel._listed(ipr, set(), tmp_path) == {} and ipr.asked == []
