"""Inside a private user, network, mount and pid namespace (harness/plumbing/frr_reader.py
starts it with `unshare`): FRR 8.4 reads each job's frr.conf and says what it made of it.

    python -m harness.plumbing.frr_read_worker DIR JOB...

For each JOB, DIR/JOB/in.conf is given to fresh daemons (zebra, bgpd and whichever others the
file needs) with `vtysh -f`, as `vtysh -b` gives a switch its config at boot; what vtysh printed
goes to DIR/JOB/vtysh.out and FRR's `show running-config` to DIR/JOB/out.conf. The daemons end
before the next job (by pid: they are this process's children), so no job sees another's state.

Why these mounts: FRR checks at start that its user is in the vty group (lib/privs.c
zprivs_init); in a user namespace only root is mapped, so this namespace's /etc/group puts root
in frrvty. /etc/frr is an empty directory here, so neither a daemon nor vtysh reads the
machine's own config. Nothing of this is seen outside the namespace, and it ends with it.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from harness.plumbing import wait

FRR_BIN = Path("/usr/lib/frr")
# Which daemon a config needs beyond zebra and bgpd, by the first words of a line.
_NEEDS = (("bfd", "bfdd"), ("ip route", "staticd"), ("ipv6 route", "staticd"),
          ("router ospf6", "ospf6d"), ("router ospf", "ospfd"), ("router isis", "isisd"),
          ("router openfabric", "fabricd"), ("router rip", "ripd"), ("router ripng", "ripngd"),
          ("pbr-map", "pbrd"), ("nexthop-group", "pbrd"), ("router pim", "pimd"), ("vrrp", "vrrpd"))
_START_S = 10.0
_LEGACY_BFD = re.compile(r"^\s*neighbor\s+\S+\s+bfd\s+\d", re.M)


def daemons_for(text: str) -> tuple[str, ...]:
    """zebra, bgpd, and the daemons the file's statements belong to (staticd, bfdd, ...)."""
    found = ["zebra", "bgpd"]
    for raw in text.splitlines():
        line = " ".join(raw.split())
        for head, daemon in _NEEDS:
            if (line == head or line.startswith(head + " ")) and daemon not in found:
                found.append(daemon)
    return tuple(d for d in found if (FRR_BIN / d).exists())


def _private_files(scratch: Path) -> None:
    scratch.mkdir(parents=True, exist_ok=True)
    group = Path("/etc/group").read_text()
    if re.search(r"^frrvty:", group, re.M):
        group = re.sub(r"^(frrvty:[^:]*:[^:]*:)(.*)$", lambda m: m.group(1) + ",".join(
            [u for u in ["root", *m.group(2).split(",")] if u]), group, flags=re.M)
    else:
        group += "frrvty:x:64999:root\n"
    (scratch / "group").write_text(group)
    (scratch / "etc").mkdir(exist_ok=True)
    (scratch / "etc" / "vtysh.conf").write_text("")
    (scratch / "tmp").mkdir(exist_ok=True)
    for source, target in ((scratch / "group", "/etc/group"), (scratch / "etc", "/etc/frr"),
                           (scratch / "tmp", "/var/tmp")):
        subprocess.run(["mount", "--bind", str(source), target], check=True, capture_output=True)


def _start(run: Path, daemons: tuple[str, ...]) -> list[subprocess.Popen]:
    empty = run / "empty.conf"
    empty.write_text("")
    procs = []
    with open(run / "daemons.out", "ab") as out:
        for daemon in daemons:
            argv = [str(FRR_BIN / daemon), "-u", "root", "-g", "root", "-f", str(empty), "-i", str(run / f"{daemon}.pid"),
                    "-z", str(run / "zserv.api"), "--vty_socket", str(run), "-P", "0",
                    "--log", f"file:{run / daemon}.log"]
            if daemon == "bfdd":
                argv += ["--bfdctl", str(run / "bfdd.sock")]
            procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT))
    sockets = [run / f"{d}.vty" for d in daemons]

    def not_started() -> RuntimeError:
        _stop(procs)
        return RuntimeError(f"FRR did not start ({', '.join(s.name for s in sockets if not s.exists())} "
                            f"missing): {(run / 'daemons.out').read_text()[-400:]}")

    def started() -> bool:
        if any(p.poll() is not None for p in procs):
            raise not_started()
        return all(s.exists() for s in sockets)

    wait.until(started, _START_S, "FRR's vty sockets", interval=0.01, error=not_started)
    return procs


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)  # nothing of theirs outlives the job: no state to save
    for p in procs:
        p.wait()


def read_one(job: Path) -> None:
    text = (job / "in.conf").read_text()
    run = job / "run"
    run.mkdir(exist_ok=True)
    procs = _start(run, daemons_for(text))
    try:
        vtysh = ["stdbuf", "-oL", "-eL", "vtysh", "--vty_socket", str(run)]
        # stdout and stderr in one pipe, line by line: a daemon's message comes just before
        # vtysh's `line N:` that names the line it refused
        loaded = subprocess.run([*vtysh, "-f", str(job / "in.conf")], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=120)
        (job / "vtysh.out").write_text(loaded.stdout)
        shown = subprocess.run([*vtysh, "-c", "show running-config"], capture_output=True, text=True, timeout=120)
        if shown.returncode != 0:
            raise RuntimeError(f"show running-config failed: {shown.stderr.strip() or shown.stdout.strip()}")
        (job / "out.conf").write_text(shown.stdout)
        # what the running config does not write out: a legacy `neighbor X bfd M RX TX`'s
        # timers (bgpd/bgp_bfd.c bgp_bfd_peer_config_write prints only `bfd` where bfdd runs)
        peers = "{}"
        if _LEGACY_BFD.search(text):
            run = subprocess.run([*vtysh, "-c", "show bgp vrf all neighbors json"], capture_output=True, text=True,
                                 timeout=120)
            peers = run.stdout if run.returncode == 0 else "{}"
        (job / "neighbors.json").write_text(peers)
    finally:
        _stop(procs)


def _forwarding() -> None:
    """A switch forwards: without it zebra writes `no ip forwarding` into every running config."""
    for knob in ("/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"):
        try:
            Path(knob).write_text("1")
        except OSError:
            pass  # said in FRR's form as `no ip forwarding`, which no judge counts (COSMETIC)


def main(argv: list[str]) -> int:
    directory, jobs = Path(argv[0]), argv[1:]
    _private_files(directory / f"private-{jobs[0]}")  # one per worker: each has pid 1 in its namespace
    _forwarding()
    for name in jobs:
        job = directory / name
        try:
            read_one(job)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            (job / "error.txt").write_text(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
