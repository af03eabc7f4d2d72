"""The convergence poll at scale: FIBs read as text, only unconverged switches looked at again,
a confirming look at all, and a timeout that says which sessions are stuck in which state."""
from __future__ import annotations

import re
import socket
import threading
from pathlib import Path

import pytest

from harness.core.errors import LabError
from harness.plumbing import wait
from harness.core.model import build
from harness.observe.convergence import Shortfall, cached_expectations, shortfall, stuck_detail
from harness.observe.routing import BfdPeer, BgpPeer, route_widths
from harness.core.plan import make_plan
from harness.runtime.base import wait_converged
from harness.runtime.vty import VtyClient, daemon_of
from topologies import BUILTINS

ONELINE = (
    "default via 10.0.1.0 dev rail0 \n"
    "10.0.0.1 via 169.254.0.1 dev Ethernet64 proto bgp metric 20 onlink \n"
    "10.0.0.18 proto bgp metric 20 \\\tnexthop via 169.254.0.1 dev Ethernet68 weight 1 onlink "
    "\\\tnexthop via 169.254.0.1 dev Ethernet72 weight 1 onlink \n"
    "10.0.1.0/31 dev Ethernet0 proto kernel scope link src 10.0.1.0 \n"
)


def test_route_widths_counts_next_hops_per_prefix():
    assert route_widths(ONELINE) == {"0.0.0.0/0": 1, "10.0.0.1/32": 1, "10.0.0.18/32": 2, "10.0.1.0/31": 1}


def test_expectations_are_computed_once_per_plan():
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    assert cached_expectations(plan) is cached_expectations(plan)
    again = make_plan(build(BUILTINS["ai-cluster"]()))
    assert cached_expectations(again) is not cached_expectations(plan)


def test_a_switch_whose_sessions_are_down_counts_its_routes_as_unknown():
    exp = cached_expectations(make_plan(build(BUILTINS["ai-cluster"]())))["be-g1-r0"]
    peers = (BgpPeer("be-g1-r0", "Ethernet16", "Idle", 0, 0, 0), BgpPeer("be-g1-r0", "Ethernet20", "Active", 64600, 0, 0))
    bfd = (BfdPeer("be-g1-r0", "Ethernet16", "fe80::1", "down", 3, 300, 300),)
    s = shortfall(exp, peers, bfd, None)
    assert not s.ok and s.sessions_up == 0
    assert all("?/" in m for m in s.missing_routes)
    assert s.stuck == ("Ethernet16: BGP Idle (no peer address learned)",
                       "Ethernet20: BGP Active (no TCP connection to the peer)", "Ethernet16: BFD down")


def test_timeout_detail_counts_states_then_names_switches():
    short = [Shortfall("be-s1", 0, 2, 0, 2, (), ("Ethernet0: BGP Idle (no peer address learned)",
                                                 "Ethernet4: BGP Idle (no peer address learned)")),
             Shortfall("be-s2", 1, 2, 1, 2, (), ("Ethernet4: BGP Active (no TCP connection to the peer)",))]
    text = stuck_detail(short)
    assert text.startswith("sessions not up: 2 BGP Idle (no peer address learned), 1 BGP Active")
    assert "be-s1: 0/2 BGP sessions" in text and "Ethernet0: BGP Idle" in text


class _Runtime:
    """Answers observe() from a script of which switches are short, round by round."""

    def __init__(self, plan, rounds):
        self.plan, self.rounds, self.asked = plan, list(rounds), []

    def observe(self, plan, lab, only=None, fib=True, bfd=True):
        self.asked.append(None if only is None else set(only))
        short = self.rounds.pop(0) if self.rounds else set()
        names = [s.name for s in plan.switches if only is None or s.name in only]
        return [Shortfall(n, 0 if n in short else 2, 2, 2, 2, ()) for n in names]


def test_the_poll_looks_again_only_at_what_is_short_then_confirms_everything():
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    rt = _Runtime(plan, [{"be-s1", "be-s2"}, {"be-s2"}, set(), set()])
    said = []
    wait_converged(rt, plan, "x", timeout=10, progress=lambda p, m: said.append((p, m)))
    assert rt.asked == [None, {"be-s1", "be-s2"}, {"be-s2"}, None]
    assert said[-1][0] == "converged"


def test_the_confirming_look_goes_on_if_a_switch_fell_back():
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    rt = _Runtime(plan, [{"be-s1"}, set(), {"be-s2"}, set(), set()])
    wait_converged(rt, plan, "x", timeout=10)
    assert rt.asked == [None, {"be-s1"}, None, {"be-s2"}, None]


def test_a_timeout_names_the_stuck_sessions():
    plan = make_plan(build(BUILTINS["ai-cluster"]()))

    class Stuck(_Runtime):
        def observe(self, plan, lab, only=None, fib=True, bfd=True):
            return [Shortfall("be-s1", 0, 4, 0, 4, (), ("Ethernet0: BGP Idle (no peer address learned)",))]

    ticks = iter(range(100))
    with pytest.raises(LabError, match=r"1 BGP Idle \(no peer address learned\)"):
        wait_converged(Stuck(plan, []), plan, "x", timeout=1, now=lambda: next(ticks))


def test_a_long_convergence_says_where_it_stands_though_no_switch_moved():
    plan = make_plan(build(BUILTINS["ai-cluster"]()))

    class Slow(_Runtime):  # be-s1 short for a while, its sessions coming up one by one
        def observe(self, plan, lab, only=None, fib=True, bfd=True):
            self.asked.append(only)
            up = min(len(self.asked) - 1, 4)
            names = [s.name for s in plan.switches if only is None or s.name in only]
            return [Shortfall(n, up, 4, up, 4, ("10.0.1.0/31 (0/2 paths)",) if up < 4 else ()) if n == "be-s1"
                    else Shortfall(n, 2, 2, 2, 2, ()) for n in names]

    ticks = iter(range(0, 1000, 20))  # 20 s a look
    said = []
    wait_converged(Slow(plan, []), plan, "x", timeout=500, now=lambda: next(ticks),
                   progress=lambda p, m: said.append(m))
    lines = [m for m in said if "still" in m]
    # the first look says 13/14; no switch moves until be-s1 converges: a line each 30 s or more
    assert lines and len(lines) < len(said)
    ups = [int(re.search(r"the 1 short have (\d)/4 BGP sessions up, \1/4 BFD, 1 prefixes not at", m).group(1))
           for m in lines]
    assert ups == sorted(ups) and ups[-1] < 4, lines  # moving, and said while still short
    assert said[-1].startswith("14/14")


@pytest.mark.parametrize("stuck, named", [
    (1, True),   # gpu4096: 364/366 for minutes, one cable's two ends short: which one is worth a line
    (8, True),
    (9, False),  # many: the counts say enough (the timeout's error names the first switches)
])
def test_a_heartbeat_names_the_few_sessions_holding_a_boot(stuck, named):
    plan = make_plan(build(BUILTINS["ai-cluster"]()))

    class Few(_Runtime):
        def observe(self, plan, lab, only=None, fib=True, bfd=True):
            items = tuple(f"Ethernet{4 * i}: BGP Active (no TCP connection to the peer)" for i in range(stuck))
            names = [s.name for s in plan.switches if only is None or s.name in only]
            return [Shortfall(n, 4 - stuck, 4, 4, 4, (), items) if n == "be-s1" else Shortfall(n, 2, 2, 2, 2, ())
                    for n in names]

    ticks = iter(range(0, 1000, 20))
    said = []
    with pytest.raises(LabError):
        wait_converged(Few(plan, []), plan, "x", timeout=200, now=lambda: next(ticks),
                       progress=lambda p, m: said.append(m))
    lines = [m for m in said if "still" in m]
    assert lines
    assert all(("; not up: be-s1 Ethernet0: BGP Active" in m) == named for m in lines), lines
    assert all(m.count("be-s1 Ethernet") == (stuck if named else 0) for m in lines)


def test_a_quick_convergence_says_nothing_more():  # the control: no look 30 s after the last line
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    rt = _Runtime(plan, [{"be-s1"}, {"be-s1"}, set(), set()])
    said = []
    ticks = iter(range(100))
    wait_converged(rt, plan, "x", timeout=10, now=lambda: next(ticks), progress=lambda p, m: said.append(m))
    assert not [m for m in said if "still" in m]


def test_a_look_that_takes_long_says_so_while_it_runs(monkeypatch):
    """One look whose daemons answer slowly (gpu4096: minutes) is heard from while it runs; the
    quick looks of the same poll are not (the control)."""
    import harness.runtime.base as base

    monkeypatch.setattr(base, "HEARTBEAT_S", 0.05)
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    said: list[str] = []
    beaten = threading.Event()

    class SlowFirst(_Runtime):
        def observe(self, plan, lab, only=None, fib=True, bfd=True):
            if not self.asked:  # the first look lasts until a heartbeat has been heard
                assert wait.until(lambda: any("still running" in m for m in said), 10, "a heartbeat")
                beaten.set()
                # the later looks are quick, but not quicker than 50 ms on a loaded machine
                monkeypatch.setattr(base, "HEARTBEAT_S", 60.0)
            return super().observe(plan, lab, only, fib, bfd)

    rt = SlowFirst(plan, [{"be-s1"}, set(), set()])
    wait_converged(rt, plan, "x", timeout=10, progress=lambda p, m: said.append(m))
    assert beaten.is_set()
    heard = [m for m in said if "still running" in m]
    assert heard and all(m.startswith("a look at 14 switches still running after ") for m in heard)
    assert said[-1].startswith("14/14")  # and the quick looks at be-s1, then at all, said no such line


def test_show_commands_go_to_their_daemon():
    assert daemon_of("show bfd peers json") == "bfdd"
    assert daemon_of("show bgp ipv4 unicast summary json") == "bgpd"
    assert daemon_of("show ip route json") is None  # vtysh decides


def _fake_daemon(path: Path, answers: dict[str, tuple[int, str]]) -> threading.Thread:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def serve():
        conn, _ = server.accept()
        with conn, server:
            buf = b""
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                buf += data
                while b"\0" in buf:
                    command, buf = buf.split(b"\0", 1)
                    status, text = answers.get(command.decode(), (1, "% Unknown command"))
                    conn.sendall(text.encode() + b"\0\0\0" + bytes([status]))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_vty_client_speaks_vtysh_protocol(tmp_path):
    path = tmp_path / "bgpd.vty"
    big = '{"peers": {' + ", ".join(f'"Ethernet{i}": {{}}' for i in range(5000)) + "}}"
    _fake_daemon(path, {"enable": (0, ""), "show bgp summary json": (0, big), "show nonsense": (1, "% Unknown")})
    client = VtyClient(path, timeout=5)
    assert client.command("show bgp summary json") == big
    with pytest.raises(LabError, match="failed"):
        client.command("show nonsense")
    client.close()


def test_vty_client_names_a_missing_socket(tmp_path):
    with pytest.raises(LabError, match="bfdd.vty"):
        VtyClient(tmp_path / "bfdd.vty", timeout=1).command("show bfd peers json")


def test_sessions_gone_down_are_counted():
    from harness.observe.routing import bgp_peers

    summary = {"peers": {"Ethernet0": {"state": "Established", "remoteAs": 64601, "connectionsDropped": 2}}}
    (peer,) = bgp_peers("be-s1", summary)
    assert peer.drops == 2 and peer.established
