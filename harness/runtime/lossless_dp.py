"""The lossless BE's data plane on the netns runtime, as a switch ASIC and a RoCE NIC would run it.

Every BE port (switch ports and the GPU NICs cabled to them) gets:
- htb as its egress scheduler (handle fb:), the port's speed / `Lossless.time_scale`, one class
  per queue its program uses (fb:10 .. fb:17; strict queues first; a CONFIG_DB change adds
  what it brings in), and under each class a tbf (20: .. 27:) that the data plane turns to a
  trickle to pause that queue;
- the two tc programs of harness/dataplane/lossless.bpf.c (clsact), attached by
  fablab-lossless-dp, one process per lab, which sends and honours PFC, sends CNPs and runs the
  PFC watchdog (harness/dataplane/lossless_dp.c).
Each port's program is what its running config says (harness.core.asic): a switch's CONFIG_DB
(a field changed by hand or by `fablab break` is reloaded), the declared contract for a NIC.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.core.asic import QUEUES, PortProgram, nic_program, switch_programs
from harness.core.errors import LabError, PrerequisiteError
from harness.core.plan import Plan
from harness.plumbing import interrupt, priority, wait
from harness.plumbing.namespaces import NETNS_DIR
from harness.runtime.dataplane_process import DataPlaneProcess, compile_to, stale
from harness.runtime.state import Daemon, namespace, run_dir

DIR = Path(__file__).resolve().parents[1] / "dataplane"
SOURCES = (DIR / "lossless_dp.c", DIR / "lossless.bpf.c", DIR / "lossless.h")
BINARY = DIR / "build" / "fablab-lossless-dp"
OBJECT = DIR / "build" / "lossless.bpf.o"
NODE = "lossless-dp"  # the data plane's Daemon.node; its -N tag is namespace(lab, NODE)
PROCESS = DataPlaneProcess(NODE, "the lossless data plane", "PFC, ECN and CNPs no longer act")
status_socket = PROCESS.status_socket
log_path = PROCESS.log_path
tag = PROCESS.tag
log_tail = PROCESS.log_tail
daemon_of = PROCESS.daemon_of
running = PROCESS.running


@dataclass(frozen=True)
class PortSpec:
    """One BE port the data plane serves; `id` indexes its maps, `local` its node's ports."""

    id: int
    node: str
    port: str
    peer: int
    local: int
    host: bool
    gbps: float


def uses(plan: Plan) -> bool:
    q = plan.fabric.cluster.lossless
    return q.emulate and any(sw.lossless for sw in plan.switches)


def build() -> tuple[Path, Path]:
    """The data plane's executable and tc object, compiled from the project's sources when
    missing or older (a few seconds; `make deps` does it ahead)."""
    if not stale(BINARY, SOURCES) and not stale(OBJECT, SOURCES):
        return BINARY, OBJECT
    cc, clang = shutil.which("cc") or shutil.which("gcc"), shutil.which("clang")
    missing = [what for what, tool in (("a C compiler (gcc)", cc), ("clang", clang)) if tool is None]
    if missing or not Path("/usr/include/bpf/libbpf.h").exists():
        raise PrerequisiteError("the lossless data plane (PFC, ECN, CNPs) needs clang, gcc and libbpf-dev to build "
                                "fablab-lossless-dp: apt-get install clang gcc libbpf-dev (or `make deps`); "
                                "or declare Lossless(emulate=False) for lossy BE links")
    compile_to(OBJECT, [clang, "-O2", "-g", "-mcpu=v3", "-target", "bpf", "-I", "/usr/include/x86_64-linux-gnu",
                        "-c", str(DIR / "lossless.bpf.c"), "-o"])
    compile_to(BINARY, [cc, "-O2", "-Wall", str(DIR / "lossless_dp.c"), "-lbpf", "-o"])
    return BINARY, OBJECT


def port_specs(plan: Plan) -> tuple[PortSpec, ...]:
    """Every BE switch port and the GPU NIC at its other end, numbered; both ends of each cable."""
    ends: list[tuple[str, str, str, str, bool, float]] = []  # node, port, peer node, peer port, host, gbps
    hosts = {h.name for h in plan.hosts}
    for sw in plan.switches:
        if not sw.lossless:
            continue
        for p in sw.ports:
            ends.append((sw.name, p.name, p.peer, p.peer_port, False, float(p.speed)))
            if p.peer in hosts:
                ends.append((p.peer, p.peer_port, sw.name, p.name, True, float(p.speed)))
    index = {(n, p): i for i, (n, p, *_) in enumerate(ends)}
    locals_: dict[str, int] = {}
    out = []
    for i, (node, port, peer, peer_port, host, gbps) in enumerate(ends):
        local = locals_.get(node, 0)
        locals_[node] = local + 1
        out.append(PortSpec(i, node, port, index.get((peer, peer_port), 0xFFFFFFFF), local, host, gbps))
    return tuple(out)


def programs(plan: Plan, config_dbs: dict[str, dict]) -> dict[tuple[str, str], PortProgram]:
    """Each served port's program: its switch's CONFIG_DB, or the contract for a NIC."""
    q = plan.fabric.cluster.lossless
    out: dict[tuple[str, str], PortProgram] = {}
    specs = port_specs(plan)
    by_node: dict[str, list[str]] = {}
    for s in specs:
        by_node.setdefault(s.node, []).append(s.port)
    for node, ports in by_node.items():
        if node in config_dbs:
            for port, prog in switch_programs(config_dbs[node], ports).items():
                out[(node, port)] = prog
        else:
            for port in ports:
                out[(node, port)] = nic_program(port, q)
    return out


def storms_path(lab: str) -> Path:
    return run_dir(lab) / "lossless-storms.json"


def storms(lab: str) -> dict[str, list[int]]:
    """"node:port" -> the priorities a NIC gone wrong sends pause for without end (pfc-storm)."""
    try:
        return json.loads(storms_path(lab).read_text())
    except FileNotFoundError:
        return {}


# The PFC watchdog's detection and restoration times are scaled as every data-plane time is, but
# at most this much: fully scaled, a storm would take 400 s to name here. A legitimate incast
# holds a queue paused for longer than hardware ever would (it is a scaled pause): 63->1 on
# large held ten pauses past 200 ms in four runs, the longest 238 ms, and the watchdog unscaled
# called them storms and dropped. At 10x (2 s for SONiC's 200 ms) none is; a NIC stuck sending
# pause is still named within seconds.
WATCHDOG_SCALE_MAX = 10


def watchdog_scale(time_scale: int) -> int:
    return max(1, min(time_scale, WATCHDOG_SCALE_MAX))


def _line(s: PortSpec, p: PortProgram, scale: int, storm: list[int]) -> str:
    mask = lambda xs: sum(1 << x for x in xs)  # noqa: E731
    wred = p.wred
    fields = {
        "dscp": "".join(str(t) for t in p.dscp_tc), "tcq": "".join(str(q) for q in p.tc_queue),
        "pfc": mask(p.pfc), "ecn": mask(p.ecn_queues), "xoff": p.xoff_bytes, "xon": p.xon_bytes,
        "lossless_limit": p.lossless_limit, "lossy_limit": p.lossy_limit,
        "wred_min": wred.min_bytes if wred else 0, "wred_max": wred.max_bytes if wred else 0,
        "wred_prob": wred.probability_pct if wred else 0, "cnp_interval_ns": p.cnp_interval_ns,
        "cnp_dscp": p.cnp_dscp, "scale": scale,
        "wd": mask(p.watchdog.priorities) if p.watchdog and p.watchdog.action == "drop" else 0,
        "wd_detect_ms": p.watchdog.detect_ms * watchdog_scale(scale) if p.watchdog else 0,
        "wd_restore_ms": p.watchdog.restore_ms * watchdog_scale(scale) if p.watchdog else 0,
        "storm": mask(storm),
    }
    return (f"port {s.id} {s.node} {s.port} {s.peer} {s.local} {1 if s.host else 0} {s.gbps:g} "
            + " ".join(f"{k}={v}" for k, v in fields.items()))


def config_text(plan: Plan, lab: str, config_dbs: dict[str, dict],
                progs: dict[tuple[str, str], PortProgram] | None = None) -> str:
    """The data plane's configuration; `progs`: the ports' programs when already read from `config_dbs`."""
    specs = port_specs(plan)
    progs = progs if progs is not None else programs(plan, config_dbs)
    scale = plan.fabric.cluster.lossless.time_scale
    nodes = dict.fromkeys(s.node for s in specs)
    storming = storms(lab)
    return ("".join(f"node {n} {NETNS_DIR}/{namespace(lab, n)}\n" for n in nodes)
            + "".join(_line(s, progs[(s.node, s.port)], scale, storming.get(f"{s.node}:{s.port}", [])) + "\n"
                      for s in specs))


def queues_of(prog: PortProgram) -> frozenset[int]:
    """The queues a port's scheduler has a class for: those its DSCP map reaches, those its PFC
    priorities pause, its strict ones, and queue 0 (htb's default). Every class costs the
    set-up (see BLOCKS_PER_PORT): ai-cluster's ports use 3 of the 8."""
    return frozenset({0, *(prog.queue_of(d) for d in range(64)), *(prog.tc_queue[p] & 7 for p in prog.pfc),
                      *prog.strict_queues})


def _queue_lines(s: PortSpec, prog: PortProgram, rate: int, queues: frozenset[int]) -> list[str]:
    lines = []
    for q in sorted(queues):
        prio = 0 if q in prog.strict_queues else 1
        lines.append(f"class add dev {s.port} parent fb:1 classid fb:{0x10 + q:x} htb rate {max(8000, rate // QUEUES)}bit "
                     f"ceil {rate}bit prio {prio} quantum 9300")
        lines.append(f"qdisc add dev {s.port} parent fb:{0x10 + q:x} handle {0x20 + q:x}: tbf rate {4 * rate}bit "
                     f"burst 65536 limit 67108864")
    return lines


def _rate(s: PortSpec, scale: int) -> int:
    return max(8000, int(s.gbps * 1e9 / scale))


def qdisc_batch(specs: list[PortSpec], progs: dict[tuple[str, str], PortProgram], scale: int,
                queues: dict[tuple[str, str], frozenset[int]] | None = None) -> str:
    """tc's batch for one node: each port's scheduler, a class per queue in `queues` (by
    default queues_of its program). Strict queues are served first (htb prio 0); the others
    share what is left by DWRR, as the switch's scheduler weights them."""
    lines = []
    for s in specs:
        rate, prog = _rate(s, scale), progs[(s.node, s.port)]
        lines.append(f"qdisc replace dev {s.port} root handle fb: htb default 10")
        lines.append(f"class add dev {s.port} parent fb: classid fb:1 htb rate {rate}bit ceil {rate}bit")
        lines += _queue_lines(s, prog, rate, (queues or {}).get((s.node, s.port)) or queues_of(prog))
    return "\n".join(lines) + "\n"


def queues_path(lab: str) -> Path:
    return run_dir(lab) / "lossless-queues.json"


def _add_queues(plan: Plan, lab: str, progs: dict[tuple[str, str], PortProgram]) -> None:
    """Classes for the queues a changed CONFIG_DB now reaches (a DSCP or PFC map changed), before
    the data plane sends packets there; each port's replayed batch follows."""
    try:
        have = {k: frozenset(v) for k, v in json.loads(queues_path(lab).read_text()).items()}
    except FileNotFoundError:  # a lab set up before classes followed the queues in use: all 8
        have = {f"{s.node}:{s.port}": frozenset(range(QUEUES)) for s in port_specs(plan)}
    scale = plan.fabric.cluster.lossless.time_scale
    by_node: dict[str, list[str]] = {}
    for s in port_specs(plan):
        key, prog = f"{s.node}:{s.port}", progs[(s.node, s.port)]
        missing = queues_of(prog) - have[key]
        if missing:
            by_node.setdefault(s.node, []).extend(_queue_lines(s, prog, _rate(s, scale), missing))
            have[key] |= missing
            (run_dir(lab) / f"lossless-tc.{s.node}.{s.port}").write_text(
                qdisc_batch([s], progs, scale, {(s.node, s.port): have[key]}))
    for node, lines in by_node.items():
        _tc_batch(lab, node, "\n".join(lines) + "\n")
    queues_path(lab).write_text(json.dumps({k: sorted(v) for k, v in have.items()}))


def _tc_batch(lab: str, node: str, batch: str) -> None:
    run = subprocess.run(["tc", "-n", namespace(lab, node), "-batch", "-"], capture_output=True, text=True, input=batch)
    if run.returncode != 0:
        raise LabError(f"{node}: the BE ports' schedulers: {run.stderr.strip()[-400:]}")


PROGRESS_S = 10.0
# Every tc block bound on a device without offload (veth) joins one machine-wide list, and each
# new one is first looked for in it (the kernel's flow_indr_dev_setup_offload): a port's htb,
# its parent class and a class per queue in use bind 5 (ai-cluster's programs use 3 queues),
# the data plane's clsact 2 more, so the n-th costs a walk of n. Measured here with a class for
# every queue (12 a port): xlarge's 4,096 ports took 12.8 s (schedulers and programs),
# gpu4096's 24,576 ports 8.4 min for the schedulers alone.
BLOCKS_PER_PORT = 7
NS_PER_STEP = 15  # the walk's cost per block already listed, fitted to the figures above
SLOW_FROM_S = 60.0


def tc_seconds(ports: int) -> float:
    """About how long `ports` ports' schedulers and programs take on this machine."""
    blocks = BLOCKS_PER_PORT * ports
    return blocks * blocks / 2 * NS_PER_STEP * 1e-9


def conf_path(lab: str) -> Path:
    return run_dir(lab) / "lossless-dp.conf"


def check_paths(lab: str) -> None:
    PROCESS.check_paths(lab)


def start(plan: Plan, lab: str, config_dbs: dict[str, dict], timeout: float = 30.0,
          progress: Callable[[str, str], None] = lambda phase, detail: None) -> Daemon:
    """Schedulers on every BE port, then the data plane, which attaches its programs. Their
    cost grows with the square of the ports (tc_seconds): minutes from about 10,000, said
    before and every PROGRESS_S after, and Ctrl-C is honoured between nodes."""
    exe, obj = build()
    specs = port_specs(plan)
    progress("lossless", f"the lossless BE data plane on {len(specs)} ports "
                         f"(links at 1/{plan.fabric.cluster.lossless.time_scale} of their speed)")
    if (slow := tc_seconds(len(specs))) > SLOW_FROM_S:
        progress("lossless", f"about {slow / 60:.0f} min: the kernel looks for each new tc block in a list of "
                             "every one on the machine (12 a port); Lossless(emulate=False) boots without them")
    progs = programs(plan, config_dbs)
    scale = plan.fabric.cluster.lossless.time_scale
    d = run_dir(lab)
    by_node: dict[str, list[PortSpec]] = {}
    for s in specs:
        by_node.setdefault(s.node, []).append(s)
    said = time.monotonic()
    for i, (node, ports) in enumerate(by_node.items()):
        interrupt.checkpoint()
        if time.monotonic() - said > PROGRESS_S:
            progress("lossless", f"schedulers on {i}/{len(by_node)} nodes' BE ports")
            said = time.monotonic()
        # each port's batch stays: the data plane runs it again when the port's interface is
        # made anew (a cable moved or re-made destroys its qdiscs)
        for s in ports:
            (d / f"lossless-tc.{node}.{s.port}").write_text(qdisc_batch([s], progs, scale))
        _tc_batch(lab, node, qdisc_batch(ports, progs, scale))
    queues_path(lab).write_text(json.dumps({f"{s.node}:{s.port}": sorted(queues_of(progs[(s.node, s.port)]))
                                            for s in specs}))
    conf_path(lab).write_text(config_text(plan, lab, config_dbs, progs))
    return PROCESS.start(lab, [str(exe), "-c", str(conf_path(lab)), "-o", str(obj), "-p", str(priority.BFD_DATAPLANE),
                               "-r", str(d)], timeout + tc_seconds(len(specs)))


def reload(plan: Plan, lab: str, config_dbs: dict[str, dict], timeout: float = 10.0) -> None:
    """Each port's program again from the running configs (a CONFIG_DB field changed)."""
    daemon = running(lab)
    if daemon is None:
        return
    before = status(lab)["generation"]
    progs = programs(plan, config_dbs)
    _add_queues(plan, lab, progs)
    conf_path(lab).write_text(config_text(plan, lab, config_dbs, progs))
    os.kill(daemon.pid, signal.SIGHUP)
    wait.until(lambda: status(lab)["generation"] > before, timeout, "the lossless data plane's reload", interval=0.02)


def set_storm(plan: Plan, lab: str, node: str, port: str, priorities: frozenset[int],
              config_dbs: dict[str, dict]) -> None:
    """Make a served port send pause for `priorities` without end (empty: stop), as a NIC gone
    wrong does; the data plane's watchdog on the other end is what must catch it."""
    if not any(s.node == node and s.port == port for s in port_specs(plan)):
        raise LabError(f"{node}:{port} is not a BE port of lab {lab}: no pause storm can start there")
    current = storms(lab)
    if priorities:
        current[f"{node}:{port}"] = sorted(priorities)
    else:
        current.pop(f"{node}:{port}", None)
    storms_path(lab).write_text(json.dumps(current))
    reload(plan, lab, config_dbs)


def running_dbs(plan: Plan, config_db) -> dict[str, dict]:
    """Each BE switch's running CONFIG_DB (`config_db(switch)`: the runtime's reading)."""
    return {sw.name: config_db(sw.name) for sw in plan.switches if sw.lossless}


def status(lab: str, timeout: float = 10.0, required: bool = False) -> dict:
    """The data plane's counters and state, every port (see lossless_dp.c: status());
    `required`: say why when the lab has none."""
    if required and running(lab) is None:
        raise LabError(f"lab {lab} runs no lossless data plane (booted with Lossless(emulate=False), or without "
                       "a lossless BE)")
    return PROCESS.ask(lab, timeout)
