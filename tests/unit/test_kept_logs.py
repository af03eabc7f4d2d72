"""What a failed case keeps of a lab's logs (harness.runtime.logs): each named node's own FRR
logs whole (up to a tail), the shared data planes' lines about those nodes only, and node
names found as whole words. No root: a run directory of files."""
from __future__ import annotations

import pytest

from harness.plumbing.naming import named_in
from harness.runtime import logs, state


@pytest.mark.parametrize(("text", "found"), [
    ("spine failure of be-s1", ("be-s1",)),
    ("QP 0x300 on be-g1-r0:Ethernet0, sessions be-s2:Ethernet8", ("be-g1-r0", "be-s2")),
    ("be-s10 and be-s1x and xbe-s1 and fe-l1-old", ()),  # longer names that hold one
    ("be-s1,be-s2 (be-s1)", ("be-s1", "be-s2")),
    ("", ()),
])
def test_node_names_are_found_as_whole_words(text, found):
    assert named_in(text, ["be-s1", "be-s2", "be-g1-r0", "fe-l1"]) == found


def test_a_named_nodes_logs_and_the_data_planes_lines_about_it(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    lab = tmp_path / "lab1"
    for node in ("be-s1", "be-s10"):
        (lab / node).mkdir(parents=True)
        (lab / node / "bgpd.log").write_text(f"{node} bgpd\n")
        (lab / node / "zebra.log").write_text(f"{node} zebra\n")
    (lab / "bfd-dp.log").write_text("be-s1 Ethernet0 ipv6: up -> down\nbe-s10 Ethernet0 ipv6: up -> down\n"
                                    "connected to 14 nodes\n")
    (lab / "lossless-dp.log").write_text("be-s10 Ethernet4: pause\n")
    kept = logs.netns_logs("lab1", ["be-s1"])
    assert kept == {"be-s1/bgpd.log": "be-s1 bgpd\n", "be-s1/zebra.log": "be-s1 zebra\n",
                    "bfd-dp.log": "be-s1 Ethernet0 ipv6: up -> down\n"}  # be-s10's lines are not be-s1's
    assert logs.netns_logs("lab1", []) == {}
    assert logs.netns_logs("gone", ["be-s1"]) == {}  # a lab whose directory is gone keeps nothing


def test_a_long_log_keeps_its_tail_from_a_whole_line(tmp_path):
    path = tmp_path / "bgpd.log"
    path.write_text("".join(f"line {i}\n" for i in range(1000)))
    tail = logs.tail(path, limit=100)
    assert tail.endswith("line 999\n") and tail.startswith("line ") and len(tail) <= 100
    assert logs.tail(path, limit=10**6) == path.read_text()  # a short log whole


def test_a_long_shared_log_keeps_whole_lines_about_the_node(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    (tmp_path / "lab1").mkdir()
    (tmp_path / "lab1" / "bfd-dp.log").write_text("".join(f"be-s1 Ethernet0: event {i}\nbe-s2 other\n"
                                                          for i in range(200)))
    kept = logs.netns_logs("lab1", ["be-s1"], limit=500)["bfd-dp.log"]
    assert len(kept) <= 500 and kept.endswith("event 199\n")
    assert all(line.startswith("be-s1 Ethernet0: event ") for line in kept.splitlines())


@pytest.mark.parametrize(("test", "case", "n", "name"), [
    ("test_skewed_nexthop_weight_is_caught", "ecmp", 1, "ecmp-control-skewed_nexthop_weight_is_caught"),
    ("test_skewed_nexthop_weight_is_caught", "ecmp", 2, "ecmp-control-skewed_nexthop_weight_is_caught-2"),
    ("test_a_superspine_failure[failover-superspine]", "failover-superspine", 1,
     "failover-superspine-control-a_superspine_failure-failover-superspine"),
])
def test_each_positive_control_is_kept_under_its_own_name(test, case, n, name):
    """A lab test's positive control is recorded (and, failing, keeps its logs) under the test's
    name and its run within the test: a second control in the same test never overwrites the first."""
    from harness.pytest_plugin import control_name

    assert control_name(test, case, n) == name
