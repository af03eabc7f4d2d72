"""What the machine withheld from the kernel's packet work: read from /proc as the kernel writes
it (a recorded tree here), a window's as the difference of two reads, judged per CPU."""
from __future__ import annotations

import pytest

from harness.plumbing import cpu_wait
from harness.plumbing.cpu_wait import CpuWait

STAT = """cpu  927491 774 408615 852474 3460 0 73034 46353 0 0
cpu0 463000 300 204000 426000 1700 0 36000 {steal0} 0 0
cpu1 464491 474 204615 426474 1760 0 37034 {steal1} 0 0
intr 1 2 3
ctxt 4
"""


def _proc(root, waits: dict[int, int], steal: tuple[int, int]) -> None:
    """A /proc with one ksoftirqd per CPU (pid 14 + 8 x cpu), their waits in ns, and steal in ticks."""
    (root / "stat").write_text(STAT.format(steal0=steal[0], steal1=steal[1]))
    for cpu, ns in waits.items():
        d = root / str(14 + 8 * cpu)
        d.mkdir(exist_ok=True)
        (d / "comm").write_text(f"ksoftirqd/{cpu}\n")
        (d / "schedstat").write_text(f"9625602390 {ns} 459553\n")
    other = root / "900"
    other.mkdir(exist_ok=True)
    (other / "comm").write_text("ksoftirqd-like\n")
    (root / "self").mkdir(exist_ok=True)


@pytest.fixture
def proc(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_wait, "PROC", tmp_path)
    monkeypatch.setattr(cpu_wait, "_threads", [])
    monkeypatch.setattr(cpu_wait, "_TICK_MS", 10.0)
    return tmp_path


def test_a_window_is_the_difference_of_two_reads_per_cpu(proc):
    _proc(proc, {0: 1_000_000_000, 1: 2_000_000_000}, (100, 200))
    before = cpu_wait.cpu_wait_now()
    assert before.softirq_ms == (1000.0, 2000.0) and before.steal_ms == (1000.0, 2000.0)
    _proc(proc, {0: 1_250_000_000, 1: 2_030_000_000}, (103, 200))
    window = cpu_wait.cpu_wait_now().minus(before)
    assert window.softirq_ms == (250.0, 30.0) and window.steal_ms == (30.0, 0.0)
    assert window.withheld_ms == 250.0  # cpu0's wait (its steal overlaps it); not the sum over CPUs
    assert "250, 30 ms" in window.words() and "stole 30, 0 ms" in window.words()


@pytest.mark.parametrize("wait, withheld", [
    (CpuWait(), 0.0),  # nothing could be read: no claim
    (CpuWait((12.0, 40.0), ()), 40.0),  # no steal figures: the waits alone
    (CpuWait((12.0, 40.0), (50.0, 0.0)), 50.0),  # cpu0's steal, longer than any wait
])
def test_withheld_is_the_worst_cpu(wait, withheld):
    assert wait.withheld_ms == withheld


def test_reads_that_do_not_match_claim_nothing(proc):
    _proc(proc, {0: 5_000_000, 1: 6_000_000}, (1, 1))
    assert CpuWait((1.0,), (1.0,)).minus(cpu_wait.cpu_wait_now()) == CpuWait((), ())


def test_a_machine_without_the_kernels_threads_reads_zero(proc):
    (proc / "stat").write_text("cpu  1 2 3\n")
    now = cpu_wait.cpu_wait_now()
    assert now.softirq_ms == () and now.withheld_ms == 0.0


@pytest.mark.parametrize(("line", "ns"), [
    ("712173791 2009239134 10518\n", 2009239134),  # a bgpd's, as the kernel writes it
    ("0 0 0", 0),
    ("", None),
    ("712173791", None),
    ("a b c", None),
])
def test_the_run_delay_is_the_second_field(line, ns):
    assert cpu_wait.parse_schedstat(line) == ns


def test_a_daemons_wait_is_the_growth_of_its_run_delay(proc):
    for pid, ns in ((31, 1_000_000), (32, 5_000_000), (33, 7_000_000)):
        (proc / str(pid)).mkdir()
        (proc / str(pid) / "schedstat").write_text(f"9625602390 {ns} 459553\n")
    pids = {"be-s1/bgpd": 31, "be-g1-r0/zebra": 32, "be-s1/zebra": 33, "gone/bgpd": 34}
    before = cpu_wait.daemons_now(pids)
    assert set(before) == {"be-s1/bgpd", "be-g1-r0/zebra", "be-s1/zebra"}  # a process gone has no wait
    (proc / "31" / "schedstat").write_text("9625602390 41000000 459553\n")
    (proc / "33" / "schedstat").unlink()  # be-s1's zebra ended meanwhile
    assert cpu_wait.daemons_waited_ms(before, cpu_wait.daemons_now(pids)) == (("be-g1-r0/zebra", 0.0),
                                                                             ("be-s1/bgpd", 40.0))
