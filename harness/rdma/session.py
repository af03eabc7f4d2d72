"""`Lab.rdma`: one RDMA test between two GPU NICs of a running lab, with real rdma_rxe.

Where the runner's kernel has no rdma_rxe (this one loads no modules), both endpoints run in
one microVM whose NICs take the nodes' places on their cables (`microvm`). The figures come
from perftest or rping in the guest and from rxe's own counters, read before and after.
"""
from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from pathlib import Path

from harness.errors import HarnessError, RuntimeError_
from harness.model import Plane
from harness.rdma import perftest, vmimage
from harness.rdma.microvm import Endpoint, run_vm, vm_tag
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
    duration: float = 5.0  # write_bw
    iterations: int = 1000  # send_lat and rping
    # Routes the requester gets beyond its NIC's planned ones, via its gateway: a host set up
    # to send where the plan gives it no path, to see what the fabric does with it.
    src_routes: tuple[str, ...] = ()

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
        if self.duration <= 0 or self.duration > 600:
            found.append(f"duration={self.duration:g}: seconds, > 0 and <= 600")
        if not 1 <= self.iterations <= 1_000_000:
            found.append(f"iterations={self.iterations}: 1..1000000")
        for route in self.src_routes:
            try:
                IPv4Network(route)
            except ValueError:
                found.append(f"src_routes: {route!r} is not an IPv4 prefix (e.g. 10.0.2.0/24)")
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
        """Requester retries (rxe's completer_retry_err: a timeout or a sequence NAK)."""
        return self.counters.get("src", {}).get("completer_retry_err", 0)

    @property
    def retry_exceeded(self) -> int:
        return self.counters.get("src", {}).get("retry_exceeded_err", 0)

    @property
    def rocev2_packets_sent(self) -> int:
        return self.counters.get("src", {}).get("sent_pkts", 0)

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
        return f"{head}: {fig}; retransmissions {self.retransmissions}; QPN->UDP sport {ports}"


_seq = itertools.count(1)


def endpoints_of(lab, spec: RdmaSpec) -> list[Endpoint]:
    eps = []
    for index, (node, nic_name) in enumerate(((spec.src_node, spec.src_nic), (spec.dst_node, spec.dst_nic))):
        nic = lab.plan.host(node).nic(nic_name)
        link = lab.ns_exec(node, ["ip", "-j", "link", "show", "dev", nic_name], check=True).stdout
        mac = json.loads(link)[0]["address"]
        extra = tuple(IPv4Network(r) for r in spec.src_routes) if index == 0 else ()
        eps.append(Endpoint(node, nic_name, mac, nic.address, nic.gateway, nic.routes + extra, nic.mtu, index))
    return eps


def run_rdma(lab, spec: RdmaSpec, progress: Progress = quiet, timeout: float | None = None) -> RdmaResult:
    problems = spec.problems(lab.plan)
    if problems:
        raise RdmaSpecError(problems)
    boot = vmimage.boot_files()
    t = time.monotonic()
    src, dst = endpoints_of(lab, spec)
    workdir = Path(lab.state.run_dir) / f"rdma-{next(_seq)}-{int(time.time() * 1000) % 10**8}"
    workdir.mkdir(parents=True)
    server, client = perftest.commands(spec.test, src.device, dst.device, str(dst.address.ip), str(src.address.ip),
                                       spec.qps, spec.message_size, spec.duration, spec.iterations)
    ready = (f"ss -Hltn 'sport = :{PERFTEST_PORT}' | grep -q ." if spec.test != "rping"
             else "rdma res show cm_id | grep -q LISTEN")
    script = render_template("rdma/guest.sh.j2", test=spec.test, endpoints=[src, dst], server=server,
                             client=client, ready=ready, server_grace=10)
    (workdir / "guest.sh").write_text(script)
    budget = timeout or (90 + 3 * spec.duration + spec.iterations * 0.01)
    run_vm(lab, boot, [src, dst], workdir, vm_tag(lab.name, next(_seq)), budget, progress)
    return _result(spec, src, dst, workdir, time.monotonic() - t)


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
    steps = {}
    for line in _read(workdir / "guest.log").splitlines():
        if line.startswith("step "):
            _, name, up = line.split()
            steps[name] = float(up)
    rc = _read(workdir / "client.rc").strip()
    failed = _read(workdir / "failed").strip()
    common = dict(spec=spec, src_address=str(src.address.ip), dst_address=str(dst.address.ip),
                  qps=perftest.local_qps(client), counters=deltas, guest_steps=steps, seconds=seconds,
                  workdir=str(workdir))
    if failed or not rc:
        why = failed or f"the guest did not finish; console: {_read(workdir / 'console.log')[-400:]}"
        return RdmaResult(ok=False, error=why, **common)
    figures: dict = {}
    if spec.test == "write_bw":
        figures["bandwidth"] = perftest.bandwidth(client, spec.duration)
    elif spec.test == "send_lat":
        figures["latency"] = perftest.latency(client)
    else:
        figures["rping"] = perftest.rping(client, spec.iterations, int(rc))
    ok = rc == "0" and all(v is not None for v in figures.values())
    error = "" if ok else f"{spec.test} exited {rc}: {_last_lines(client + server)}"
    return RdmaResult(ok=ok, error=error, **common, **figures)


def _last_lines(text: str, n: int = 4) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " / ".join(lines[-n:]) or "(no output)"


def raise_unless_ok(result: RdmaResult) -> RdmaResult:
    if not result.ok:
        raise RuntimeError_(result.summary())
    return result
