"""FRR in a switch namespace: zebra, bfdd and bgpd with the switch's frr.conf.

Each daemon reads at start its part of the integrated frr.conf as FRR's own vtysh hands it
out (harness/runtime/frr_parts.py): FRR's grammar decides which command is whose, so whatever
FRR accepts boots, with or without `exit` lines. frr.conf itself sits beside the parts, whole.

Everything a daemon writes (pid, vty and zserv sockets, logs) stays in the switch's run
directory, owned by user frr; `-N <namespace>` keeps FRR's own pathspace per switch.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.plumbing import wait
from harness.core.emulation import ZEBRA_LINES
from harness.core.errors import PrerequisiteError, LabError
from harness.plumbing.namespaces import exec_argv
from harness.plumbing.priority import CONTROL_PLANE_NICE
from harness.core.plan import Plan
from harness.runtime import bgpd_rings, heap_trim, zebra_ribq
from harness.runtime.state import namespace, run_dir

FRR_BIN = Path("/usr/lib/frr")
DAEMONS = ("zebra", "bfdd", "bgpd")
FRR_STATE = Path("/var/run/frr")
FRR_CONFIG = Path("/etc/frr")


def with_emulation(daemon: str, part: str) -> str:
    """A daemon's startup part with the lines only the emulation needs (harness.core.emulation),
    last, so that they hold whatever the engineer's config says of the same settings."""
    if daemon != "zebra":
        return part
    return part + ("" if part.endswith("\n") or not part else "\n") + "".join(f"{line}\n" for line in ZEBRA_LINES)


# bgpd allocates a 640 KiB receive ring and a 128 KiB send buffer per peer (room for RFC 8654
# extended messages) with calloc. Once glibc's dynamic threshold has grown, calloc takes them
# from the heap and zeroes them: every page resident at once (about 0.9 MB a peer, 1.9 GB for
# xlarge's 2,064 peers) and page clearing high in bgpd's profile at boot. A fixed mmap threshold
# serves them from fresh zero pages that become resident only when a byte lands in them.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=131072"


def bfd_timer_slack_ns(interval_ms: int) -> int:
    """How late bfdd's timers may fire: 10 % of the BFD interval (30 ms at 300 ms).

    bfdd arms one timer per session and direction; with Linux's default slack (50 µs) each
    fires on its own, one wake-up each, and on this VM a wake-up is costly: xlarge's 2,064
    sessions at 300 ms kept bfdd at two thirds of both cores. Slack lets the kernel expire
    neighbouring timers together, and a timer that falls due while bfdd is awake anyway (a
    packet arrived) runs then. Converged xlarge, 25 s windows: 50 µs → 2 % idle; 3 ms → 14–18 %;
    30 ms → 25–32 % and a fifth fewer context switches. What it costs: a transmission may
    leave up to 10 % of an interval late (RFC 5880 wants none later than the interval; the
    peer's detection time, 3 intervals, is still 2.7 gaps away), and a detection may fire up
    to 10 % of one interval late (30 ms of 900)."""
    return max(50_000, interval_ms * 100_000)


def check_installed() -> None:
    missing = [d for d in DAEMONS if not (FRR_BIN / d).exists()]
    if missing or shutil.which("vtysh") is None:
        raise PrerequisiteError("FRR is not installed (missing " + ", ".join(missing or ["vtysh"])
                                + "): apt-get install frr   (Debian package 'frr')")
    try:
        pwd.getpwnam("frr")
    except KeyError:
        raise PrerequisiteError("user 'frr' does not exist: reinstall the Debian package 'frr'") from None
    bgpd_rings.environment()  # built now: a missing compiler is said before anything is made
    heap_trim.build()
    zebra_ribq.environment()


def preloads(daemon: str) -> dict[str, str]:
    """What one daemon's environment gains from fablab's preloaded libraries (harness/runtime/
    bgpd_rings.py, zebra_ribq.py, heap_trim.py), their LD_PRELOAD joined."""
    env: dict[str, str] = {}
    own = {"bgpd": bgpd_rings.environment, "zebra": zebra_ribq.environment}.get(daemon, dict)
    for more in (own(), heap_trim.environment(daemon)):
        libraries = " ".join(x for x in (env.get("LD_PRELOAD"), more.get("LD_PRELOAD")) if x)
        env.update(more)
        if libraries:
            env["LD_PRELOAD"] = libraries
    return env


@dataclass(frozen=True)
class FrrNode:
    """The FRR instance of one switch."""

    ns: str
    directory: Path

    @property
    def config(self) -> Path:
        return self.directory / "frr.conf"

    def daemon_config(self, daemon: str) -> Path:
        return self.directory / f"{daemon}.conf"

    def prepare(self, frr_conf: str, parts: dict[str, str]) -> None:
        """The run directory: frr.conf whole, and each daemon's part of it (daemon -> the
        config it reads at start, `frr_parts.daemon_parts`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config.write_text(frr_conf)
        (self.directory / "vtysh.conf").write_text("")
        frr = pwd.getpwnam("frr")
        paths = [self.directory, self.config, self.directory / "vtysh.conf"]
        for daemon in DAEMONS:
            path = self.daemon_config(daemon)
            path.write_text(with_emulation(daemon, parts[daemon]))
            paths.append(path)
        for path in paths:
            os.chown(path, frr.pw_uid, frr.pw_gid)
        # FRR's own paths for `-N ns` lead to the run directory, so that plain
        # `vtysh -N <namespace>` reaches this instance as FRR's docs describe.
        for link in pathspace_dirs(self.ns):
            remove_path(link)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(self.directory)

    def argv(self, daemon: str, dplane: Path | None = None) -> list[str]:
        d = self.directory
        args = [str(FRR_BIN / daemon), "-N", self.ns, "-f", str(self.daemon_config(daemon)),
                "-i", str(d / f"{daemon}.pid"),
                "-z", str(d / "zserv.api"), "--vty_socket", str(d), "--log", f"file:{d / daemon}.log",
                "-P", "0"]  # no TCP vty port: vtysh talks over the unix socket
        if daemon == "bfdd":
            args += ["--bfdctl", str(d / "bfdd.sock")]
            if dplane is not None:  # distributed BFD: the lab's data plane connects here
                args += ["--dplaneaddr", f"unix:{dplane}"]
        return ["nice", "-n", str(CONTROL_PLANE_NICE), *exec_argv(self.ns, args)]  # nice and nsenter exec

    def start(self, daemons: tuple[str, ...] = DAEMONS, bfd_interval_ms: int | None = None,
              dplane: Path | None = None) -> dict[str, int]:
        """Start daemons in the background; return daemon name -> pid. With `bfd_interval_ms`,
        bfdd's timers get slack in proportion (`bfd_timer_slack_ns`); with `dplane`, bfdd
        offloads its sessions to the data plane that connects to that socket."""
        pids = {}
        env = {**os.environ, "GLIBC_TUNABLES": MALLOC_TUNABLES}
        with open(self.directory / "daemons.out", "ab") as out:
            for daemon in daemons:
                # nsenter with only --net execs the daemon in place, so this pid is the daemon's.
                proc = subprocess.Popen(self.argv(daemon, dplane), stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True,
                                        env={**env, **preloads(daemon)})
                pids[daemon] = proc.pid
                if daemon == "bfdd" and bfd_interval_ms is not None:
                    set_timer_slack(proc.pid, bfd_timer_slack_ns(bfd_interval_ms))
        return pids

    def wait_for(self, names: list[str], timeout: float = 20.0) -> None:
        """Poll until the daemons' sockets exist in the run directory."""
        paths = [self.directory / n for n in names]

        def not_started() -> LabError:
            missing = [p.name for p in paths if not p.exists()]
            log = self.directory / "daemons.out"
            tail = log.read_text()[-500:] if log.exists() else ""
            return LabError(f"FRR in {self.ns} did not start ({', '.join(missing)} missing): {tail}")

        wait.until(lambda: all(p.exists() for p in paths), timeout, "FRR's sockets", interval=0.02,
                   error=not_started)

    def vtysh(self, *commands: str, timeout: float = 10.0) -> str:
        argv = ["vtysh", "--vty_socket", str(self.directory)]
        for c in commands:
            argv += ["-c", c]
        try:
            run = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise LabError(f"vtysh in {self.ns} timed out: {' / '.join(commands)}") from e
        if run.returncode != 0:
            raise LabError(f"vtysh in {self.ns} failed ({run.returncode}): {run.stderr.strip() or run.stdout.strip()}")
        return run.stdout

    def vtysh_json(self, *commands: str) -> list[object]:
        """Several `... json` commands in one vtysh call; one parsed document per command."""
        return json_documents(self.vtysh(*commands), len(commands), f"vtysh in {self.ns}")


def json_documents(text: str, count: int, where: str) -> list[object]:
    """The `count` JSON documents vtysh printed one after another."""
    decoder = json.JSONDecoder()
    docs: list[object] = []
    i = 0
    try:
        while len(docs) < count:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                break
            doc, i = decoder.raw_decode(text, i)
            docs.append(doc)
    except ValueError as e:
        raise LabError(f"{where}: unreadable JSON ({e}): {text[:200]!r}") from e
    if len(docs) != count:
        raise LabError(f"{where}: expected {count} JSON documents, got {len(docs)}")
    return docs


def set_timer_slack(pid: int, slack_ns: int) -> None:
    """Set a started daemon's timer slack (its main thread; bfdd has no other). A daemon that
    already died keeps its exit for `wait_for` to report."""
    try:
        Path(f"/proc/{pid}/timerslack_ns").write_text(str(slack_ns))
    except (FileNotFoundError, ProcessLookupError):
        pass


def pathspace_dirs(ns: str) -> tuple[Path, Path]:
    """FRR's state and config paths for `-N ns`: links to the run directory while the lab runs."""
    return FRR_STATE / ns, FRR_CONFIG / ns


def remove_path(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def frr_names(plan: Plan) -> list[str]:
    """The nodes that run FRR: every routed switch, then every dual-homed FE host."""
    return [sw.name for sw in plan.switches] + [h.name for h in plan.hosts if h.routed]


def frr_node(lab: str, switch: str) -> FrrNode:
    return FrrNode(namespace(lab, switch), run_dir(lab) / switch)
