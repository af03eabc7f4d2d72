"""BFD offloaded to the lab's data plane (fablab-bfd-dp, FRR's distributed BFD): RFC 5880 seen
from both ends of a link, what bgpd sees when the data plane restarts or dies, bfdd's burst
of sessions on connect, and detection times against software bfdd's."""
from __future__ import annotations

import dataclasses
import os
import signal
import socket
import statistics
import struct
import time

import pytest

from harness.core.declarations import Bfd
from harness.core.errors import LabError
from harness.lab import Lab
from harness.plumbing import namespaces, wait
from harness.runtime import bfd_offload, processes
from harness.runtime.state import load
from .conftest import leftovers_of
from topologies import BUILTINS

DETECTED = "control detection time expired"
TOLD = "neighbor signaled session down"


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}o"
    with Lab.up(BUILTINS["ai-cluster"](), name=name, timeout=90) as running:
        yield running
    assert leftovers_of(name) == []


def _cable(lab: Lab) -> tuple[str, str, str, str]:
    port = lab.plan.switch("be-g1-r0").fabric_ports[0]
    return "be-g1-r0", port.name, port.peer, port.peer_port


def _session(lab: Lab, node: str, ifname: str) -> dict:
    (found,) = [s for s in bfd_offload.sessions(lab.name)[node] if s["ifname"] == ifname]
    return found


def _whole_again(lab: Lab, timeout: float = 90.0) -> None:
    wait.until(lambda: lab.shortfalls() == [], timeout, "the fabric converged again", interval=0.2)


def _bgp_drops(lab: Lab) -> int:
    return sum(p.drops for sw in lab.plan.switches if sw.fabric_ports for p in lab.bgp_peers(sw.name))


def test_the_data_plane_runs_every_session_and_bfdd_none(lab):
    counts = {node: len(s) for node, s in bfd_offload.sessions(lab.name).items()}
    for sw in lab.plan.switches:
        assert counts[sw.name] == len(lab.bfd_peers(sw.name)) == len(sw.fabric_ports), sw.name
    daemon = bfd_offload.daemon_of(load(lab.name))
    assert daemon is not None and processes.is_ours(daemon.pid, bfd_offload.tag(lab.name))
    bfdd = next(d for d in load(lab.name).daemons if d.name == "bfdd")
    assert any(a.startswith("unix:") for a in processes.cmdline(bfdd.pid)), "bfdd runs without --dplaneaddr"


def test_one_way_loss_each_end_says_why(lab):
    # The spine stops hearing the leaf; the leaf still hears the spine. RFC 5880: the spine's
    # detection time expires (diag 1) and it says Down; the leaf goes down because it was told (diag 3).
    leaf, port, spine, spine_port = _cable(lab)
    assert _session(lab, spine, spine_port)["state"] == _session(lab, leaf, port)["state"] == "up"  # control
    lab.runtime.set_gray(lab.name, spine, spine_port, on=True)
    try:
        wait.until(lambda: _session(lab, spine, spine_port)["state"] == "down"
                   and _session(lab, leaf, port)["diag"] == TOLD, 10, "both ends down")
        at_spine, at_leaf = _session(lab, spine, spine_port), _session(lab, leaf, port)
        assert at_spine["diag"] == DETECTED
        assert at_leaf["remote_diag"] == DETECTED and at_leaf["state"] in ("down", "init")
        # bfdd shows the peer's diagnostic (FRR's protocol carries no other) and bgpd acted on it
        wait.until(lambda: not next(b for b in lab.bfd_peers(leaf) if b.interface == port).up, 10, "bfdd told")
        others = [s for s in bfd_offload.sessions(lab.name)[spine] if s["ifname"] != spine_port]
        assert others and all(s["state"] == "up" for s in others)  # one link's loss, not the spine's
    finally:
        lab.runtime.set_gray(lab.name, spine, spine_port, on=False)
    _whole_again(lab)


def test_gray_failure_both_ways_is_detected_at_both_ends(lab):
    leaf, port, spine, spine_port = _cable(lab)
    link = lab.link(leaf, spine)
    drops = _bgp_drops(lab)
    link.gray()
    try:
        wait.until(lambda: _session(lab, spine, spine_port)["state"] == "down"
                   and _session(lab, leaf, port)["state"] == "down", 10, "both ends down")
        assert _session(lab, spine, spine_port)["diag"] == _session(lab, leaf, port)["diag"] == DETECTED
        wait.until(lambda: _bgp_drops(lab) >= drops + 2, 10, "bgpd dropping the link's session at both ends")
    finally:
        link.heal()
    _whole_again(lab)


def _stale(lab: Lab, leaf: str, port: str, spine: str, spine_port: str, states: str) -> None:
    """BFD packets as a link that flapped leaves them in flight, spoofed from the spine's end to
    the leaf's session: its own discriminators, TTL 255, one per state in `states` (D, I, U)."""
    at_leaf, at_spine = _session(lab, leaf, port), _session(lab, spine, spine_port)
    codes = {"D": 1, "I": 2, "U": 3}

    def send() -> None:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
            index = socket.if_nametoindex(spine_port)
            sock.bind((at_leaf["peer"], 49999, 0, index))
            for st in states:
                packet = struct.pack("!BBBBIIIII", 1 << 5, codes[st] << 6, 3, 24, at_spine["lid"], at_leaf["lid"],
                                     300000, 300000, 0)
                sock.sendto(packet, (at_spine["peer"], 3784, 0, index))
        finally:
            sock.close()

    namespaces.run_in(lab.namespace(spine), send)


def test_stale_packets_of_a_flapped_link_settle_in_a_few_changes(lab):
    """Packets in flight from a link's flap (Down, Init, Down, Init) reach a session that is Up:
    it must go down, come back, and settle. Before each change was told at once without a gap,
    both ends of the cable, served by one process, went round Up-Down-Init-Up 11,854 times in
    3 s, and beside other labs the kernel ended the data plane (RLIMIT_RTTIME)."""
    leaf, port, spine, spine_port = _cable(lab)
    before = {end: _session(lab, *end)["down_events"] for end in ((leaf, port), (spine, spine_port))}
    _stale(lab, leaf, port, spine, spine_port, "DIDIDI")
    wait.until(lambda: _session(lab, leaf, port)["down_events"] > before[(leaf, port)], 5,
               "the stale packets to reach the leaf's session")  # the control: they took it down
    wait.until(lambda: _session(lab, leaf, port)["state"] == _session(lab, spine, spine_port)["state"] == "up"
               and _session(lab, leaf, port)["since_ms"] > 1000, 10, "both ends up and settled for 1 s")
    changes = {end: _session(lab, *end)["down_events"] - n for end, n in before.items()}
    assert all(n <= 5 for n in changes.values()), changes
    assert bfd_offload.daemon_of(load(lab.name)) is not None
    bfd_offload.check_running(lab.name)  # the data plane lives
    _whole_again(lab)


def test_admin_down_is_told_to_the_peer(lab):
    leaf, port, spine, spine_port = _cable(lab)
    profile = lab.plan.fabric.cluster.bfd.profile
    lab.vtysh(spine, "configure terminal", "bfd", f"profile {profile}", "shutdown")
    try:
        wait.until(lambda: _session(lab, leaf, port)["remote_state"] == "admin-down", 10, "the leaf told")
        at_spine, at_leaf = _session(lab, spine, spine_port), _session(lab, leaf, port)
        assert at_spine["state"] == "admin-down" and at_spine["diag"] == "administratively down"
        assert at_leaf["state"] == "down" and at_leaf["diag"] == TOLD
    finally:
        lab.vtysh(spine, "configure terminal", "bfd", f"profile {profile}", "no shutdown")
    wait.until(lambda: _session(lab, leaf, port)["state"] == "up", 20, "the session up again")
    _whole_again(lab)


def test_a_restarted_data_plane_brings_every_session_back(lab, capsys):
    # bfdd takes every session back when its data plane goes (and tells bgpd they are down when
    # they return to it); the restarted one gets them all again and brings them up.
    total = sum(len(s) for s in bfd_offload.sessions(lab.name).values())
    drops = _bgp_drops(lab)
    t = time.monotonic()
    bfd_offload.restart(lab.name)
    wait.until(lambda: sum(1 for ss in bfd_offload.sessions(lab.name).values() for s in ss if s["state"] == "up")
               == total, 20, "every session up in the new data plane", interval=0.05)
    bfd_back = time.monotonic() - t
    _whole_again(lab)
    with capsys.disabled():
        print(f"\n  data plane restart: {total} BFD sessions up in {bfd_back:.2f} s, fabric whole in "
              f"{time.monotonic() - t:.1f} s; BGP sessions reset: {_bgp_drops(lab) - drops}")


def test_a_dead_data_plane_is_named(lab):
    daemon = bfd_offload.daemon_of(load(lab.name))
    assert lab.shortfalls() == []  # control: the same look passes while it runs
    os.kill(daemon.pid, signal.SIGKILL)
    wait.until(lambda: not processes.alive(daemon.pid), 10, "the data plane gone")
    with pytest.raises(LabError, match=rf"BFD data plane of {lab.name} .*pid {daemon.pid}.* not running"):
        lab.observe()
    bfd_offload.restart(lab.name)
    _whole_again(lab)


def test_a_burst_of_sessions_on_connect_is_taken_whole(lab):
    # bfdd hands every session over at once when a data plane connects, into an 8 KiB buffer
    # that holds 58: the data plane connects again until none is left behind.
    spine = "be-s1"
    port = lab.plan.switch(spine).fabric_ports[0].name
    real = len(bfd_offload.sessions(lab.name)[spine])
    extra = [f"fe80::dead:{i:x}" for i in range(1, 101)]
    peers = [c for a in extra for c in (f"peer {a} interface {port}", "exit")]
    lab.vtysh(spine, "configure terminal", "bfd", *peers)
    try:
        wait.until(lambda: len(bfd_offload.sessions(lab.name)[spine]) == real + 100, 10, "the added peers offloaded")
        bfd_offload.restart(lab.name)  # now bfdd has 108 sessions to hand over at once
        wait.until(lambda: len(bfd_offload.sessions(lab.name)[spine]) == real + 100, 10, "every session taken")
        log = bfd_offload.log_path(lab.name).read_text()
        assert f"{spine}: data plane connection 2 took" in log  # the burst was cut and picked up again
        wait.until(lambda: sum(s["state"] == "up" for s in bfd_offload.sessions(lab.name)[spine]) == real, 20,
                   "the real sessions up")
    finally:
        lab.vtysh(spine, "configure terminal", "bfd", *[f"no peer {a} interface {port}" for a in extra])
    wait.until(lambda: len(bfd_offload.sessions(lab.name)[spine]) == real, 10, "the extra sessions deleted")
    _whole_again(lab)


def _detection_ms(lab: Lab) -> float:
    """Gray both ends of a leaf uplink; ms until the leaf's bfdd says the session is down."""
    leaf, port, spine, _ = _cable(lab)
    link = lab.link(leaf, spine)
    t = time.monotonic()
    link.gray()
    try:
        wait.until(lambda: not next(b for b in lab.bfd_peers(leaf) if b.interface == port).up, 10,
                   lambda: f"detection: bfdd {lab.bfd_peers(leaf)}", interval=0.01)
        return (time.monotonic() - t) * 1000
    finally:
        link.heal()
        _whole_again(lab)


def test_detection_times_match_software_bfdd(lab, lab_name, capsys):
    # I ms x M: the last packet came 0-I ms before the failure (less the jitter of RFC 5880 6.8.7,
    # up to a quarter), so either detects (M-1)*I..M*I ms after it (200 ms x 3: 400-600 ms).
    bfd = BUILTINS["ai-cluster"]().bfd
    low, high = 0.75 * (bfd.multiplier - 1) * bfd.interval_ms, bfd.detect_ms + 700  # 700: bfdd's report under load
    offloaded = [_detection_ms(lab) for _ in range(3)]
    cluster = dataclasses.replace(BUILTINS["ai-cluster"](), bfd=Bfd(offload=False))
    with Lab.up(cluster, name=lab_name, timeout=90) as software:
        assert bfd_offload.daemon_of(software.state) is None  # control: no data plane there
        software_ms = [_detection_ms(software) for _ in range(3)]
    with capsys.disabled():
        print(f"\n  detection ms, offloaded {[round(x) for x in offloaded]}, bfdd {[round(x) for x in software_ms]}")
    a, b = statistics.median(offloaded), statistics.median(software_ms)
    assert low <= a <= high and low <= b <= high, (offloaded, software_ms)
    assert abs(a - b) <= bfd.interval_ms, (offloaded, software_ms)
