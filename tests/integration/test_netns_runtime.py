"""The netns runtime with real FRR: boot, converge, forward, fail links, tear down clean."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from harness.plumbing import interrupt
from harness.core.declarations import Bfd
from harness.core.errors import PrerequisiteError, LabError
from harness.lab import Lab
from harness.core.model import Routing
from harness.observe.route_watch import route_change_ms
from harness.runtime import netns as netns_runtime
from harness.runtime import bgpd_rings, heap_trim, netns_daemons, zebra_ribq
from harness.runtime.frr import frr_node
from topologies import BUILTINS

from .conftest import leftovers_of

FABLAB = [sys.executable, "-m", "harness.cli"]


@pytest.fixture(scope="module")
def lab():
    name = f"t{os.getpid() % 100000}m"
    with Lab.up(BUILTINS["ai-cluster"](), name=name, timeout=90) as running:
        yield running
    assert leftovers_of(name) == []


def test_every_switch_converged(lab):
    assert lab.shortfalls() == []
    for sw in lab.plan.switches:
        peers = lab.bgp_peers(sw.name) if sw.fabric_ports else ()
        assert len(peers) == len(sw.fabric_ports)
        assert all(p.established for p in peers), peers
        assert all(b.up and b.detect_multiplier == 3 for b in (lab.bfd_peers(sw.name) if peers else ()))


def _timer_slack(lab, switch: str, daemon: str) -> int:
    pid = next(d.pid for d in lab.state.daemons if d.node == switch and d.name == daemon)
    with open(f"/proc/{pid}/timerslack_ns") as f:
        return int(f.read())


def test_offloaded_bfdd_keeps_the_default_timer_slack(lab):
    # BFD offloaded, bfdd times no packets: nothing to coalesce. Software bfdd gets slack in
    # proportion to the interval (test_bfd_started_after_bgp_converges_the_same).
    assert lab.plan.fabric.cluster.bfd.offload
    for daemon in ("bfdd", "zebra", "bgpd"):
        assert _timer_slack(lab, "be-s1", daemon) == 50_000, daemon


def test_bgpd_runs_the_preloaded_ring_wipe_and_its_rings_stay_off_memory(lab):
    # harness/runtime/bgpd_rings.py: every converged bgpd maps the library; a spine's 2 peers'
    # 640 KiB rings, wiped at least once each (an accepted connection takes its peer over), would
    # be 1.3 MB of zeros resident. The control: zebra, started alike, maps no such library.
    if not bgpd_rings.applies():
        pytest.skip("this bgpd does not take ringbuf_wipe from a shared libfrr")
    for sw in lab.plan.switches:
        bgpd = next(d.pid for d in lab.state.daemons if d.node == sw.name and d.name == "bgpd")
        assert bgpd_rings.LIBRARY.name in Path(f"/proc/{bgpd}/maps").read_text(), sw.name
    zebra = next(d.pid for d in lab.state.daemons if d.node == "be-s1" and d.name == "zebra")
    assert bgpd_rings.LIBRARY.name not in Path(f"/proc/{zebra}/maps").read_text()


def test_each_zebra_retries_its_blocked_route_queue_every_10_ms(lab):
    # harness/runtime/zebra_ribq.py: the preloaded work_queue_new found zebra's queue as FRR 8.4
    # makes it and set its retry, and said so on zebra's stderr; bgpd, started alike, maps no
    # such library (the control).
    if not zebra_ribq.applies():
        pytest.skip("this zebra does not take work_queue_new from a shared libfrr")
    for sw in lab.plan.switches:
        pids = {d.name: d.pid for d in lab.state.daemons if d.node == sw.name}
        assert zebra_ribq.LIBRARY.name in Path(f"/proc/{pids['zebra']}/maps").read_text(), sw.name
        assert zebra_ribq.LIBRARY.name not in Path(f"/proc/{pids['bgpd']}/maps").read_text(), sw.name
        said = (frr_node(lab.name, sw.name).directory / "daemons.out").read_text()
        assert f"{zebra_ribq.SAID} 10 ms (was 1)" in said, (sw.name, said[-300:])


def test_zebra_and_bgpd_run_the_heap_trimmer_and_bfdd_does_not(lab):
    # harness/runtime/heap_trim.py: a thread of its own in each zebra and bgpd; bfdd, started
    # alike, has none (the control).
    for daemon, trimmed in (("zebra", True), ("bgpd", True), ("bfdd", False)):
        pid = next(d.pid for d in lab.state.daemons if d.node == "be-s1" and d.name == daemon)
        threads = [p.read_text().strip() for p in Path(f"/proc/{pid}/task").glob("*/comm")]
        assert (heap_trim.THREAD in threads) is trimmed, (daemon, threads)


def test_leaves_reach_the_other_group_over_both_spines(lab):
    routes = lab.routes("be-g1-r0")
    other_group_host = lab.plan.switch("be-g2-r0").host_ports[0].address.network
    assert routes[other_group_host].interfaces == ("Ethernet0", "Ethernet8")
    assert routes[other_group_host].protocol == "bgp"
    # One prefix's route, as the failover check polls it, is the FIB's entry, and only an exact match.
    assert lab.route("be-g1-r0", other_group_host) == routes[other_group_host]
    assert lab.route("be-g1-r0", other_group_host.supernet(new_prefix=8)) is None


def test_ping_between_gpu_nodes_of_two_groups_over_every_rail(lab):
    a, b = "gpu01", "gpu05"
    assert lab.plan.host(a).group != lab.plan.host(b).group
    for rail in range(4):
        nic = f"rail{rail}"
        before = lab.counters(a, nic)[nic].tx_packets
        run = lab.exec(a, ["ping", "-c", "2", "-i", "0.2", "-W", "1", "-I", nic, lab.address(b, nic)])
        assert run.returncode == 0, run.stdout + run.stderr
        assert lab.counters(a, nic)[nic].tx_packets >= before + 2  # it left through that rail's NIC


def test_no_route_from_fe_to_be(lab):
    # two hosts on routed FE /31s (tenant members are L2, on their tenant's subnet only)
    src, dst = [h.name for h in lab.plan.hosts if any(n.name == "fe0" and n.tenant is None for n in h.nics)][:2]
    # out of the FE NIC only: a GPU node reaches the BE through its own rail NICs
    run = lab.exec(src, ["ping", "-I", "fe0", "-c", "1", "-W", "1", lab.address("gpu01", "rail0")])
    assert run.returncode != 0 and " 0 received" in run.stdout
    leaf = lab.plan.host(src).nic("fe0").peer
    assert not [p for p in lab.routes(leaf) if p.overlaps(IPv4Network(lab.plan.fabric.cluster.addressing.be))]
    ok = lab.exec(src, ["ping", "-I", "fe0", "-c", "1", "-W", "1", lab.address(dst, "fe0")])
    assert ok.returncode == 0  # the positive control: the FE itself works


def test_hard_failure_and_restore(lab):
    prefix = lab.plan.switch("be-g2-r1").loopback.network
    link = lab.link("be-g1-r0", "be-s1")
    link.down()
    try:
        _poll(lambda: lab.routes("be-g1-r0")[prefix].interfaces == ("Ethernet8",), "one path left")
    finally:
        link.up()
    _poll(lambda: lab.routes("be-g1-r0").get(prefix) and lab.routes("be-g1-r0")[prefix].width == 2,
          lambda: f"two paths back: {lab.routes('be-g1-r0').get(prefix)} {lab.bgp_peers('be-g1-r0')}")


def test_route_change_ms_times_a_port_leaving_and_rejoining_the_route(lab):
    """harness/observe/route_watch on real routes: the uplink to be-s1 leaves be-g1-r0's route
    to a far loopback once its carrier drops, and rejoins it after the restore."""
    prefix = lab.plan.switch("be-g2-r1").loopback.network
    port = next(p.name for p in lab.plan.switch("be-g1-r0").fabric_ports if p.peer == "be-s1")
    _poll(lambda: lab.shortfalls() == [], "converged before the test", timeout=30)
    link = lab.link("be-g1-r0", "be-s1")
    failed = time.monotonic()
    link.down()
    try:
        gone_ms = route_change_ms(lab, "be-g1-r0", prefix, port, present=False, since=failed, deadline=failed + 10)
    finally:
        restored = time.monotonic()
        link.up()
    back_ms = route_change_ms(lab, "be-g1-r0", prefix, port, present=True, since=restored, deadline=restored + 60)
    assert gone_ms is not None and 0 <= gone_ms < 10_000
    assert back_ms is not None and 0 <= back_ms < 60_000
    assert route_change_ms(lab, "be-g1-r0", prefix, port, present=False, since=failed, deadline=restored) is None
    _poll(lambda: lab.shortfalls() == [], "converged after the restore", timeout=60)


def test_gray_failure_is_seen_by_bfd_only(lab):
    link = lab.link("be-g1-r1", "be-s2")
    prefix = lab.plan.switch("be-g2-r1").loopback.network
    _poll(lambda: lab.shortfalls() == [], "converged before the test", timeout=30)
    link.gray()
    try:
        _poll(lambda: lab.routes("be-g1-r1")[prefix].interfaces == ("Ethernet0",), "BFD removed the gray path")
        assert lab.counters("be-g1-r1", "Ethernet8")["Ethernet8"].carrier  # the carrier never dropped
    finally:
        link.heal()
    _poll(lambda: lab.shortfalls() == [], "converged after heal", timeout=30)


def test_unknown_node_and_cable_are_explained(lab):
    with pytest.raises(Exception, match="no node 'nope'"):
        lab.exec("nope", ["true"])
    with pytest.raises(Exception, match="no cable between"):
        lab.link("gpu01", "be-s1")


def test_a_second_lab_runs_beside_the_first(lab, lab_name):
    with Lab.up(BUILTINS["rail-only"](), name=lab_name, timeout=90) as other:
        assert other.exec("gpu01", ["ping", "-c1", "-W1", other.address("gpu02", "rail0")]).returncode == 0
        assert lab.exec("gpu01", ["ping", "-c1", "-W1", lab.address("gpu02", "rail0")]).returncode == 0
    assert leftovers_of(lab_name) == []
    assert lab.shortfalls() == []


def test_same_name_is_refused(lab):
    with pytest.raises(LabError, match="already running"):
        Lab.up(BUILTINS["rail-only"](), name=lab.name)


def test_plain_vtysh_reaches_a_switch_by_its_namespace(lab):
    ns = lab.namespace("be-s1")
    run = subprocess.run(["ip", "netns", "exec", ns, "vtysh", "-N", ns, "-c", "show bgp summary"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "local AS number 64600" in run.stdout, run.stdout + run.stderr
    assert run.stderr == ""


def test_attach_sees_the_same_lab(lab):
    again = Lab.attach(lab.name)
    assert again.plan == lab.plan and again.bgp_peers("be-s1") and again.state.phase == "up"


def test_sigkilled_runner_is_cleaned(lab_name):
    proc = subprocess.Popen(FABLAB + ["up", "rail-only", "--name", lab_name], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    _poll(lambda: any(d for d in leftovers_of(lab_name) if d.startswith("pid")), "daemons started", timeout=60)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert leftovers_of(lab_name)  # the runner died mid-boot: its lab is still there
    run = subprocess.run(FABLAB + ["clean"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert lab_name in run.stdout
    assert leftovers_of(lab_name) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_up_leaves_nothing(lab_name, sig):
    proc = subprocess.Popen(FABLAB + ["up", "ai-cluster", "--name", lab_name], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    _poll(lambda: any(d.startswith("fl_") for d in leftovers_of(lab_name)), "namespaces exist", timeout=60)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "removing what was made" in out
    assert leftovers_of(lab_name) == []


def test_not_root_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(PrerequisiteError, match="needs root"):
        netns_runtime.check_prerequisites()


def _poll(condition, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except KeyError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {what() if callable(what) else what}")
        time.sleep(0.05)


def test_cli_validate_on_rail_only_reports_every_check(lab_name, tmp_path):
    from pathlib import Path

    # rdma-rails, on a lab of its own, is labs/test_rdma.py's: here the lane is switched off,
    # and the case is still reported, as not measurable, with the way to switch it on.
    run = subprocess.run(FABLAB + ["validate", "rail-only", "--name", lab_name, "--results", str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=900, env={**os.environ, "FABLAB_RDMA": "off"})
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["isolation"]["passed"] is True
    assert checks["ecmp"]["passed"] is None and "no spine tier" in checks["ecmp"]["reason"]
    assert checks["rdma-rails"]["passed"] is None and "FABLAB_RDMA=off" in checks["rdma-rails"]["reason"]
    run_dir = tmp_path / "latest"  # the run's own directory under --results
    assert Path(report["results"]).resolve() == run_dir.resolve() and report["provenance"]["lab"] == lab_name
    assert (run_dir / "isolation.json").exists() and (run_dir / "summary.json").exists()
    assert leftovers_of(lab_name) == []


def test_cli_up_json_and_down(lab_name):
    run = subprocess.run(FABLAB + ["up", "rail-only", "--name", lab_name, "--json"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["lab"] == lab_name and summary["switches"] == 8
    assert summary["bgp_up"] == summary["bgp_expected"] == 8  # rail-only: only the FE Clos (4 links, 2 ends)
    assert set(summary["timings_s"]) >= {"namespaces", "links", "daemons", "converged", "total"}
    status = subprocess.run(FABLAB + ["status", "--json"], capture_output=True, text=True)
    assert lab_name in status.stdout
    assert subprocess.run(FABLAB + ["down", lab_name], capture_output=True).returncode == 0
    assert leftovers_of(lab_name) == []


def test_swallowed_interrupt_still_tears_the_boot_down(lab_name):
    # CI once saw SIGINT land in logging's after-fork hook, where Python prints the
    # KeyboardInterrupt as "ignored" and carries on: the boot must still stop and clean up.
    def progress(phase: str, message: str) -> None:
        if phase == "links":
            try:
                interrupt.handler(signal.SIGINT, None)
            except KeyboardInterrupt:
                pass  # swallowed, as an at-fork hook or a finaliser would

    with pytest.raises(KeyboardInterrupt):
        Lab.up(BUILTINS["rail-only"](), name=lab_name, timeout=60, progress=progress)
    assert leftovers_of(lab_name) == []
    assert not interrupt.pending()


def test_an_interrupt_during_a_failed_boots_teardown_waits_for_its_end(lab_name):
    # gpu4096's boot ran out of time, and a Ctrl-C during its teardown left the whole lab
    # behind. The Ctrl-C is still honoured, once nothing is left.
    def progress(phase: str, message: str) -> None:
        if phase == "daemons":
            raise LabError("a boot that fails once its namespaces and links are made")
        if phase == "teardown":
            interrupt.handler(signal.SIGINT, None)  # Ctrl-C, as the teardown begins

    with pytest.raises(KeyboardInterrupt):
        Lab.up(BUILTINS["rail-only"](), name=lab_name, timeout=60, progress=progress)
    assert leftovers_of(lab_name) == []
    assert not interrupt.pending()


def test_a_large_fabrics_boot_bfd_after_bgp_and_sessions_held_converges_the_same(lab_name, monkeypatch):
    # Large fabrics with software bfdd start it once BGP has converged and every FIB was
    # checked; and from HOLD_FROM sessions every fabric session is held shut until each bgpd
    # runs. The lab must end up exactly as converged as a small one's boot, nothing held.
    monkeypatch.setattr(netns_daemons, "DEFER_BFD_FROM", 1)
    monkeypatch.setattr(netns_daemons, "HOLD_FROM", 1)
    said, before_release = [], {}
    release = netns_daemons.release

    def looked_then_released(plan, lab, held_on, progress):
        # every bgpd runs, and the held sessions have not started: the hold is real
        before_release.update(json.loads(frr_node(lab, "be-s1").vtysh("show bgp summary json")))
        release(plan, lab, held_on, progress)

    monkeypatch.setattr(netns_daemons, "release", looked_then_released)
    cluster = dataclasses.replace(BUILTINS["ai-cluster"](), bfd=Bfd(offload=False))
    with Lab.up(cluster, name=lab_name, timeout=90, progress=lambda p, m: said.append(p)) as lab:
        peers = before_release["ipv4Unicast"]["peers"]
        assert len(peers) == len(lab.plan.switch("be-s1").fabric_ports)
        assert all(p["peerState"] == "Admin" and p["connectionsEstablished"] == 0 for p in peers.values()), peers
        assert {"bgp", "bfd"} <= set(lab.state.timings)
        assert lab.shortfalls() == []
        peers = lab.bfd_peers("be-s1")
        assert all(b.up for b in peers) and len(peers) == len(lab.plan.switch("be-s1").fabric_ports)
        assert said.index("bgp") < said.index("bfd")
        # released: the running configuration is the rendered one, and so is bgpd's own part
        running = lab.vtysh("be-s1", "show running-config bgpd")
        assert "neighbor fabric peer-group" in running and "neighbor fabric shutdown" not in running
        # ... read-only while its sessions came up, then not, and retrying each second again
        assert "Begin read-only mode" in (Path(frr_node(lab.name, "be-s1").directory) / "bgpd.log").read_text()
        assert "update-delay" not in running and " neighbor fabric timers connect 1" in running.splitlines()
        assert netns_daemons.HELD not in frr_node(lab.name, "be-s1").daemon_config("bgpd").read_text()
        # 10 % of the declared interval, so neighbouring session timers expire together; the
        # other daemons keep the kernel's default (the control that the value was not inherited).
        assert _timer_slack(lab, "be-s1", "bfdd") == cluster.bfd.interval_ms * 100_000
        assert _timer_slack(lab, "be-s1", "zebra") == 50_000
    assert leftovers_of(lab_name) == []


def test_summarized_hosts_converge_and_forward_through_the_summary(lab, lab_name):
    # Each leaf advertises one summary for its GPU links instead of a /31 each. The module's
    # lab (plain) is the control: there the far leaf's links arrive one /31 at a time.
    cluster = dataclasses.replace(BUILTINS["ai-cluster"](), routing=Routing(summarize_hosts=True))
    far = lab.plan.switch("be-g2-r0")
    link = far.host_ports[0].address.network
    assert link in lab.routes("be-g1-r0")
    with Lab.up(cluster, name=lab_name, timeout=90) as summarized:
        assert summarized.shortfalls() == []  # every planned prefix, the summaries, at its width
        summary = next(p for p in summarized.plan.originated(far) if link.subnet_of(p) and p != link)
        routes = summarized.routes("be-g1-r0")
        assert routes[summary].interfaces == ("Ethernet0", "Ethernet8") and link not in routes
        dst = summarized.plan.host("gpu05").nic("rail0")
        assert summarized.plan.route_prefix(dst) == summary
        run = summarized.exec("gpu01", ["ping", "-c", "2", "-W", "2", "-I", "rail0", str(dst.address.ip)])
        assert run.returncode == 0, run.stdout
    assert leftovers_of(lab_name) == []


def test_a_boot_holds_the_machines_timed_turn_until_its_daemons_run_not_while_it_converges(lab_name):
    # Other labs' failovers wait for a boot's namespaces, links and daemon starts, not for its
    # convergence: make test's labs once queued 206 s of 823 behind boots.
    from harness.plumbing import priority
    from harness.runtime.state import run_dir

    root = run_dir(lab_name).parent
    held: dict[str, bool] = {}

    def progress(phase: str, message: str) -> None:
        held.setdefault(phase, priority.holds_turn(root, exclusive=True))

    with Lab.up(BUILTINS["rail-only"](), name=lab_name, timeout=60, progress=progress) as lab:
        assert lab.shortfalls() == []
    assert held["links"] and held["daemons"], held  # the control: held while it makes and starts
    assert not held["converged"], held
    assert leftovers_of(lab_name) == []
