"""Each daemon's part of an integrated frr.conf, as FRR's own vtysh hands it out.

FRR boots an integrated frr.conf with `vtysh -b`: vtysh reads the file with the grammar of
every daemon, follows the nodes (with or without `exit` lines), and sends each command to
the daemons whose command it is. fablab lets vtysh do exactly that, but to stand-in daemons:
one listening socket per daemon in a scratch directory, which answer every command with
success and keep what they received. What a daemon received is its part of the file, in the
file's own words and order, and the real daemon reads it at start (`-f`).

Why not `vtysh -b` into the running daemons: bgpd holds every peer configured over vty until
its route-map timer has run out (`bgp route-map delay-timer`, 5 s; FRR's "config-pending
hold"), and each command is a round trip to three daemons: large (46 switches) spent about
8 s of CPU and 10 s of wall clock applying, and every session came up 4-5 s later. A daemon
that reads its file at start does neither. vtysh keeps `hostname` to itself, so each part
starts with the node's hostname (SONiC's daemons take the container's).

The protocol is vtysh's (see runtime/vty.py): a command ends with NUL; the answer ends with
three NULs and a status byte, 0 for success.
"""
from __future__ import annotations

import hashlib
import json
import os
import selectors
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.core.errors import LabError
from harness.runtime.frr import DAEMONS

# What vtysh says to every daemon around the file's commands: its session, not the config.
START, END = "XFRR_start_configuration", "XFRR_end_configuration"
SUCCESS = b"\0\0\0\0"


class _StandIns:
    """Listening sockets named like FRR's (`<daemon>.vty`) that record what vtysh sends."""

    def __init__(self, directory: Path, daemons: tuple[str, ...]):
        self.received: dict[str, list[str]] = {d: [] for d in daemons}
        self._sel = selectors.DefaultSelector()
        # close() wakes the loop through this pair: it waits on sockets only, never on the clock
        self._wake, self._waker = socket.socketpair()
        self._sel.register(self._wake, selectors.EVENT_READ, ("wake", "", None))
        for d in daemons:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(str(directory / f"{d}.vty"))
            s.listen(4)
            s.setblocking(False)
            self._sel.register(s, selectors.EVENT_READ, ("listen", d, None))
        self._thread = threading.Thread(target=self._serve, name="frr-parts", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            for key, _ in self._sel.select():
                kind, daemon, buf = key.data
                if kind == "wake":
                    return
                if kind == "listen":
                    conn, _ = key.fileobj.accept()
                    conn.setblocking(False)
                    self._sel.register(conn, selectors.EVENT_READ, ("conn", daemon, bytearray()))
                    continue
                conn = key.fileobj
                try:
                    data = conn.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self._sel.unregister(conn)
                    conn.close()
                    continue
                buf += data
                while b"\0" in buf:
                    i = buf.index(b"\0")
                    self.received[daemon].append(buf[:i].decode(errors="replace").rstrip("\r\n"))
                    del buf[:i + 1]
                    conn.sendall(SUCCESS)

    def close(self) -> None:
        self._waker.send(b"x")
        self._thread.join(5)
        self._waker.close()
        for key in list(self._sel.get_map().values()):
            key.fileobj.close()
        self._sel.close()


def config_lines(received: list[str]) -> list[str]:
    """The file's commands among what vtysh sent one daemon: those between its start and end
    markers (before them: `enable`, `configure terminal`; after: `end`, `disable`)."""
    if START not in received:
        return []
    body = received[received.index(START) + 1:]
    return body[:body.index(END)] if END in body else body


def daemon_parts(frr_conf: str, hostname: str, daemons: tuple[str, ...] = DAEMONS,
                 timeout: float = 60.0) -> tuple[dict[str, str], str]:
    """daemon -> the startup config vtysh's reading of `frr_conf` gives it, and what vtysh said
    of lines it refused ("" when none; e.g. `line 93: % Unknown command[79]: bogus`)."""
    scratch = Path(tempfile.mkdtemp(prefix="fablab-frr-parts-"))
    try:
        (scratch / "frr.conf").write_text(frr_conf)
        (scratch / "vtysh.conf").write_text("")
        stand_ins = _StandIns(scratch, daemons)
        try:
            run = subprocess.run(["vtysh", "--vty_socket", str(scratch), "--config_dir", str(scratch), "-b"],
                                 capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise LabError(f"vtysh -b on {hostname}'s frr.conf took over {timeout:g} s") from e
        finally:
            stand_ins.close()
        parts = {d: "".join(f"{line}\n" for line in [f"hostname {hostname}"] + config_lines(stand_ins.received[d]))
                 for d in daemons}
        if not any(START in stand_ins.received[d] for d in daemons):  # vtysh never talked to them
            raise LabError(f"vtysh -b did not read {hostname}'s frr.conf into its daemons "
                           f"(exit {run.returncode}): {(run.stdout + run.stderr).strip()[-400:] or 'no output'}")
        said = [line for line in (run.stdout + run.stderr).splitlines()  # not the scratch file's name
                if line.strip() and not line.startswith("Configuration file[")]
        refused = ("\n".join(said) or f"vtysh -b exited {run.returncode}") if run.returncode else ""
        return parts, refused
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


PART_WORKERS = 4
# Off unless asked for (FABLAB_FRR_PARTS_CACHE=DIR): a boot leaves nothing without the lab's
# name behind. Each switch costs one vtysh run, ~55 ms of CPU (xlarge's 86: about 5 s of CPU on
# PART_WORKERS threads, while the links are made); with the cache, a file split before costs none.
CACHE = Path(os.environ["FABLAB_FRR_PARTS_CACHE"]) if os.environ.get("FABLAB_FRR_PARTS_CACHE") else None


def _cache_key(frr_conf: str, hostname: str) -> str:
    vtysh = Path(shutil.which("vtysh") or "vtysh").resolve()
    try:
        st = vtysh.stat()
        who = f"{vtysh}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        who = str(vtysh)
    return hashlib.sha256(f"{who}\0{hostname}\0{frr_conf}".encode()).hexdigest()


def cached_parts(frr_conf: str, hostname: str, cache: Path | None = CACHE,
                 timeout: float = 60.0) -> tuple[dict[str, str], str]:
    """daemon_parts, from `cache` when the same file under the same vtysh was split before. The
    cache is best-effort: one that cannot be read or written is left aside."""
    if cache is None:
        return daemon_parts(frr_conf, hostname, timeout=timeout)
    path = cache / f"{_cache_key(frr_conf, hostname)}.json"
    try:
        doc = json.loads(path.read_text())
        return dict(doc["parts"]), str(doc["refused"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    parts, refused = daemon_parts(frr_conf, hostname, timeout=timeout)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"parts": parts, "refused": refused}))
        tmp.replace(path)
    except OSError:
        pass
    return parts, refused


def all_parts(configs: dict[str, str], timeout: float = 120.0,
              cache: Path | None = CACHE) -> dict[str, tuple[dict[str, str], str]]:
    """cached_parts for every node (node -> frr.conf), a few vtysh at once."""
    t = time.monotonic()
    with ThreadPoolExecutor(max(1, min(PART_WORKERS, len(configs))), thread_name_prefix="frr-parts") as pool:
        futures = {name: pool.submit(cached_parts, text, name, cache,
                                     max(1.0, timeout - (time.monotonic() - t)))
                   for name, text in configs.items()}
        return {name: f.result() for name, f in futures.items()}


class Background:
    """all_parts(configs) on a thread of its own from now (while the lab's namespaces and links
    are made); result() waits for it."""

    def __init__(self, configs: dict[str, str]):
        self._found: dict[str, tuple[dict[str, str], str]] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(dict(configs),), name="frr-parts", daemon=True)
        self._thread.start()

    def _run(self, configs: dict[str, str]) -> None:
        try:
            self._found = all_parts(configs)
        except BaseException as e:  # raised again by result(), in the booting thread
            self._error = e

    def result(self, theirs: Collection[str], progress: Callable[[str, str], None]) -> dict[str, dict[str, str]]:
        """node -> daemon -> its part. What vtysh refused of the engineer's frr.conf (theirs: those
        nodes) is said, and no daemon gets those lines (`fablab up --configs` has had FRR check
        the files already; a Lab.up caller may pass them unchecked); in fablab's own it is a bug."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        ours = {name: refused for name, (_, refused) in self._found.items() if refused and name not in theirs}
        if ours:
            raise LabError("FRR's vtysh refused lines of fablab's own frr.conf: " + "; ".join(
                f"{name}: {' '.join(text.split())[:300]}" for name, text in sorted(ours.items())))
        for name, (_, refused) in sorted(self._found.items()):
            if refused:
                progress("daemons", f"{name}: FRR's vtysh refused lines of your frr.conf, which no daemon gets: "
                                    f"{' '.join(refused.split())[:400]}")
        return {name: part for name, (part, _) in self._found.items()}
