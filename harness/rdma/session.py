"""`harness.rdma.run`: one RDMA test between two GPU NICs of a running lab, with real rdma_rxe.

Where the runner's kernel has no rdma_rxe (this one loads no modules), both endpoints run in
one microVM whose NICs take the nodes' places on their cables (`microvm`). The figures come
from perftest or rping in the guest and from rxe's own counters, read before and after.
"""
from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.plumbing import wait
from harness.core.errors import HarnessError, LabError
from harness.plumbing.labview import LabView
from harness.core.model import Plane
from harness.rdma import perftest, vmimage
from harness.rdma.microvm import Endpoint, VmRun, vm_tag
from harness.rdma.perftest import MAX_QPS, PERFTEST_PORT, TESTS, Bandwidth, Latency, QueuePair, Rping
from harness.render.templates import render_template
from harness.runtime.base import Progress, quiet


class RdmaSpecError(HarnessError):
    """Bad arguments to an RDMA test, every one named; raised before anything is started."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("rdma: " + "; ".join(problems))


DEFAULT_SIZE = {"write_bw": 65536, "send_lat": 2, "rping": 64}  # perftest's and rping's usual sizes


@dataclass(frozen=True)
class RdmaSpec:
    src_node: str
    src_nic: str
    dst_node: str
    dst_nic: str
    test: str = "write_bw"
    qps: int = 1
    size: int = 0  # bytes; 0: the test's usual size (DEFAULT_SIZE)
    duration: float = 5.0  # write_bw; 0: `iterations` messages on every QP instead
    iterations: int = 1000  # send_lat and rping
    # Each endpoint also routes the other's prefix via its own gateway, beyond its NIC's
    # planned routes: hosts set up to reach where the plan gives them no path (another rail),
    # to see what the fabric does with it. RC needs the way back too, for its ACKs.
    force_route: bool = False

    @property
    def message_size(self) -> int:
        return self.size or DEFAULT_SIZE[self.test]

    def problems(self, plan) -> list[str]:
        """Everything wrong with the spec, each naming the argument and a fix."""
        found = []
        for role, node, nic in (("src", self.src_node, self.src_nic), ("dst", self.dst_node, self.dst_nic)):
            hosts = {h.name: h for h in plan.hosts}
            if node not in hosts:
                gpus = [h.name for h in plan.hosts if any(n.plane is Plane.BE for n in h.nics)]
                found.append(f"{role}_node {node!r}: no such host; GPU nodes: {', '.join(gpus[:8])}"
                             f"{' ...' if len(gpus) > 8 else ''}")
                continue
            rdma_nics = [n.name for n in hosts[node].nics if n.plane is Plane.BE]
            if nic not in rdma_nics:
                found.append(f"{role}_nic {nic!r}: {node} has no backend (RDMA) NIC of that name; "
                             f"its RDMA NICs: {', '.join(rdma_nics) or 'none'}")
        if (self.src_node, self.src_nic) == (self.dst_node, self.dst_nic):
            found.append("dst: the same NIC as src; choose another NIC or node")
        if self.test not in TESTS:
            found.append(f"test {self.test!r}: valid tests: {', '.join(TESTS)}")
        if not 1 <= self.qps <= MAX_QPS:
            found.append(f"qps={self.qps}: must be 1..{MAX_QPS}")
        elif self.qps > 1 and self.test != "write_bw":
            found.append(f"qps={self.qps}: only write_bw runs several QPs; use qps=1 for {self.test}")
        if not 0 <= self.size <= 1 << 24:
            found.append(f"size={self.size}: message size in bytes, 1..16777216 (0: the test's default)")
        if not 0 <= self.duration <= 600:
            found.append(f"duration={self.duration:g}: seconds, 0..600 (0: write_bw sends `iterations` "
                         "messages on every QP instead)")
        if not 1 <= self.iterations <= 1_000_000:
            found.append(f"iterations={self.iterations}: 1..1000000")
        return found


@dataclass(frozen=True)
class RdmaResult:
    """What one RDMA test did. `ok` is the test's own success (it ran and completed), not a
    verdict on the fabric: a lab judges that from these figures."""

    spec: RdmaSpec
    src_address: str
    dst_address: str
    ok: bool
    error: str  # why not ok: the tool's last words, or the guest's
    qps: tuple[QueuePair, ...]  # the requester's (src) QPs and their UDP source ports
    bandwidth: Bandwidth | None = None
    latency: Latency | None = None
    rping: Rping | None = None
    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # "src"/"dst" -> rxe counter deltas
    guest_steps: dict[str, float] = field(default_factory=dict)  # guest uptime at each step
    # Packets the taps dropped on their way into the guest ("node:nic" -> count): the
    # emulator's queue overflowing, where RoCE with PFC would have paused; not the fabric.
    tap_drops: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # the whole call, boot included
    workdir: str = ""

    @property
    def completions(self) -> int:
        if self.bandwidth:
            return self.bandwidth.iterations
        if self.latency:
            return self.latency.iterations
        return self.rping.completed if self.rping else 0

    @property
    def retransmissions(self) -> int:
        """Requester retries at either end (rxe's completer_retry_err: a timeout or a sequence
        NAK). Both ends request in rping (the server reads from and writes to the client)."""
        return sum(c.get("completer_retry_err", 0) for c in self.counters.values())

    @property
    def retry_exceeded(self) -> int:
        return sum(c.get("retry_exceeded_err", 0) for c in self.counters.values())

    def summary(self) -> str:
        s = self.spec
        head = f"{s.test} {s.src_node}:{s.src_nic} ({self.src_address}) -> {s.dst_node}:{s.dst_nic} ({self.dst_address})"
        if not self.ok:
            return f"{head}: FAILED: {self.error}"
        if self.bandwidth:
            fig = f"{self.bandwidth.average_gbps:.3f} Gb/s average over {s.qps} QP(s), {self.bandwidth.iterations} iterations"
        elif self.latency:
            fig = (f"latency typical {self.latency.typical_us:.1f} us, p99 {self.latency.p99_us:.1f} us, "
                   f"p99.9 {self.latency.p999_us:.1f} us over {self.latency.iterations}")
        else:
            fig = f"{self.rping.completed} ping-pongs, data {'verified' if self.rping.verified else 'NOT verified'}"
        ports = ", ".join(f"{q.qpn:#x}->{q.sport}" for q in self.qps[:4]) + (" ..." if len(self.qps) > 4 else "")
        dropped = sum(self.tap_drops.values())
        lost = f", {dropped} packets dropped by the emulator's tap queues" if dropped else ""
        return f"{head}: {fig}; retransmissions {self.retransmissions}{lost}; QPN->UDP sport {ports}"


_seq = itertools.count(1)

# Under TCG the guest runs at whatever pace the machine leaves it: 16 s to "ready" alone, 60 s
# beside three labs (its 300 verified ping-pongs then took 33 s, against 17 s). So a run is not
# held to a time but to its progress: a guest with no new step, no new line from its client and
# nothing more on its console for STALL_S has hung; CAP_S past the test's own length ends even
# a slow one.
STALL_S = 60.0
CAP_S = 600.0


class _Pace:
    """When the guest last showed progress (a step, its client's output, its console)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir, self.seen, self.at = workdir, None, time.monotonic()

    def stalled_s(self) -> float:
        now = tuple(_size(self.workdir / name) for name in ("guest.log", "client.txt", "console.log"))
        if now != self.seen:
            self.seen, self.at = now, time.monotonic()
        return time.monotonic() - self.at


def endpoints_of(lab: LabView, spec: RdmaSpec) -> list[Endpoint]:
    nics = [lab.plan.host(spec.src_node).nic(spec.src_nic), lab.plan.host(spec.dst_node).nic(spec.dst_nic)]
    eps = []
    for index, (node, nic) in enumerate(zip((spec.src_node, spec.dst_node), nics)):
        link = lab.ns_exec(node, ["ip", "-j", "link", "show", "dev", nic.name], check=True).stdout
        mac = json.loads(link)[0]["address"]
        routes = nic.routes
        other = lab.plan.route_prefix(nics[1 - index])
        if spec.force_route and not any(other.subnet_of(r) for r in routes):
            routes += (other,)
        eps.append(Endpoint(node, nic.name, mac, nic.address, nic.gateway, routes, nic.mtu, index))
    return eps


def guest_script(spec: RdmaSpec, src: Endpoint, dst: Endpoint) -> str:
    """The script the microVM runs: NICs, policy routing, rxe devices, then the test."""
    server, client = perftest.commands(spec.test, src.device, dst.device, str(dst.address.ip), str(src.address.ip),
                                       spec.qps, spec.message_size, spec.duration, spec.iterations)
    ready = (f"ss -Hltn 'sport = :{PERFTEST_PORT}' | grep -q ." if spec.test != "rping"
             else "rdma res show cm_id | grep -q LISTEN")
    return render_template("rdma/guest.sh.j2", test=spec.test, endpoints=[src, dst], server=server, client=client,
                           ready=ready, server_grace=10)


class RdmaRun:
    """An RDMA test under way (`harness.rdma.start`): wait for its client to start, act on the
    lab meanwhile, then `result()`. A context manager; leaving it ends the VM."""

    def __init__(self, lab: LabView, spec: RdmaSpec, progress: Progress = quiet, timeout: float | None = None) -> None:
        problems = spec.problems(lab.plan)
        if problems:
            raise RdmaSpecError(problems)
        boot = vmimage.boot_files()
        self.spec, self.started = spec, time.monotonic()
        self.src, self.dst = endpoints_of(lab, spec)
        self.workdir = Path(lab.run_dir) / f"rdma-{next(_seq)}-{int(time.time() * 1000) % 10**8}"
        self.workdir.mkdir(parents=True)
        (self.workdir / "guest.sh").write_text(guest_script(spec, self.src, self.dst))
        self.budget = timeout  # None: held to its progress (STALL_S, CAP_S), not to a time
        self.pace = _Pace(self.workdir)
        self.vm = VmRun(lab, boot, [self.src, self.dst], self.workdir, vm_tag(lab.name, next(_seq)), progress)

    def __enter__(self) -> RdmaRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.vm.close()

    def steps(self) -> dict[str, float]:
        """The guest's steps so far: name -> its uptime then."""
        return _steps(_read(self.workdir / "guest.log"))

    def wait_for_client(self) -> None:
        """Until the guest has started the test's client (or failed before, or hung)."""

        def started() -> bool:
            if "client" in self.steps():
                return True
            if (self.workdir / "failed").exists() or self.vm.proc is None or self.vm.proc.poll() is not None:
                raise LabError(f"the RDMA guest stopped before its client started: "
                               f"{_read(self.workdir / 'failed').strip() or _read(self.workdir / 'console.log')[-400:]}")
            self._still_going("before its client started")
            return False

        wait.until(started, self._left(), "the RDMA guest's client", interval=0.05,
                   error=lambda: LabError(f"the RDMA guest did not start its client within {self._limit():.0f} s; "
                                          f"{self.where()}"))

    def result(self) -> RdmaResult:
        """Wait until the guest powers off; what the test did."""
        try:
            self.vm.wait(self._left(), busy=lambda: self._still_going("before it powered off"))
        except LabError as e:
            raise LabError(f"{e}; {self.where()}") from e
        self.vm.close()
        return _result(self.spec, self.src, self.dst, self.workdir, time.monotonic() - self.started)

    def _limit(self) -> float:
        if self.budget is not None:
            return self.budget
        spec = self.spec  # a 600 s write_bw is 600 s of test before any pace is judged
        return CAP_S + 3 * spec.duration + spec.iterations * spec.qps * 0.02

    def _left(self) -> float:
        return max(1.0, self._limit() - (time.monotonic() - self.started))

    def _still_going(self, when: str) -> None:
        """Raises once the guest has shown no progress for STALL_S (unless a budget was given)."""
        if self.budget is None and (idle := self.pace.stalled_s()) >= STALL_S:
            raise LabError(f"the RDMA guest made no progress for {idle:.0f} s {when}; {self.where()}")

    def where(self) -> str:
        """How far the guest got, for an error: a run that hangs must say at which step, and what
        its client had printed (the workdir goes with the lab)."""
        spec = self.spec
        steps = ", ".join(f"{name} {up:.1f} s" for name, up in self.steps().items()) or "none"
        client = _read(self.workdir / "client.txt").strip()[-300:] or "(nothing)"
        return (f"{spec.test} {spec.src_node}:{spec.src_nic} -> {spec.dst_node}:{spec.dst_nic}, "
                f"{time.monotonic() - self.started:.0f} s after the start; the guest's steps (its uptime): {steps}; "
                f"its client printed: {client}")


def run_rdma(lab: LabView, spec: RdmaSpec, progress: Progress = quiet, timeout: float | None = None) -> RdmaResult:
    with RdmaRun(lab, spec, progress, timeout) as run:
        return run.result()


def _steps(log: str) -> dict[str, float]:
    steps = {}
    for line in log.splitlines():
        if line.startswith("step "):
            _, name, up = line.split()
            steps[name] = float(up)
    return steps


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _counters(text: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].lstrip("-").isdigit():
            out.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return out


def _result(spec: RdmaSpec, src: Endpoint, dst: Endpoint, workdir: Path, seconds: float) -> RdmaResult:
    client, server = _read(workdir / "client.txt"), _read(workdir / "server.txt")
    before, after = _counters(_read(workdir / "counters.before")), _counters(_read(workdir / "counters.after"))
    deltas = {role: {k: v - before.get(ep.device, {}).get(k, 0) for k, v in after.get(ep.device, {}).items()}
              for role, ep in (("src", src), ("dst", dst))}
    steps = _steps(_read(workdir / "guest.log"))
    rc = _read(workdir / "client.rc").strip()
    failed = _read(workdir / "failed").strip()
    try:
        taps = json.loads(_read(workdir / "taps.json") or "{}")
    except ValueError:
        taps = {}
    drops = {k: int(v.get("to_guest", {}).get("dropped", 0)) for k, v in taps.items()}
    common = dict(spec=spec, src_address=str(src.address.ip), dst_address=str(dst.address.ip),
                  qps=perftest.local_qps(client), counters=deltas, guest_steps=steps, tap_drops=drops,
                  seconds=seconds, workdir=str(workdir))
    if failed or not rc:
        why = failed or f"the guest did not finish; console: {_read(workdir / 'console.log')[-400:]}"
        return RdmaResult(ok=False, error=why, **common)
    figures: dict = {}
    if spec.test == "write_bw":
        ran = spec.duration or (steps.get("client-done", 0.0) - steps.get("client", 0.0))
        figures["bandwidth"] = perftest.bandwidth(client, ran)
    elif spec.test == "send_lat":
        figures["latency"] = perftest.latency(client)
    else:
        figures["rping"] = perftest.rping(client, spec.iterations, int(rc))
    done = next(iter(figures.values()))
    completed = {"write_bw": lambda b: b.iterations, "send_lat": lambda lat: lat.iterations,
                 "rping": lambda r: r.completed if r.verified else 0}[spec.test](done) if done else 0
    ok = rc == "0" and completed > 0
    if rc != "0" or done is None:
        error = f"{spec.test} exited {rc}: {_last_lines(client + server)}"
    else:  # perftest's -D run ends with exit 0 even when no message completed
        error = "" if ok else f"{spec.test} completed no message ({_last_lines(client, 2)})"
    return RdmaResult(ok=ok, error=error, **common, **figures)


def _last_lines(text: str, n: int = 4) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " / ".join(lines[-n:]) or "(no output)"
