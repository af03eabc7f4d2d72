"""FRR reads each frr.conf (issue 67, item 1): what FRR 8.4 itself makes of a file is judged, not
its wording. The lines FRR refuses are warnings in FRR's words at file:line, never a predicted
failure FRR does not have; without FRR, fablab's model reads the files and says so first.

Pure parts on recorded output (vtysh's refusals, the line behind each line of FRR's form); the
rest with real throwaway FRR daemons in private namespaces, as root and as an unprivileged user."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.cli.diff import directory_differences
from harness.core.meaning.frr_form import Refusal
from harness.core.meaning.frr_origin import origins
from harness.plumbing import frr_reader
from harness.plumbing.frr_reader import read, readings, refusals, unavailable

ROOT = Path(__file__).resolve().parents[2]
LEAF = "be-g1-r0"
needs_frr = pytest.mark.skipif(unavailable() is not None, reason=f"FRR cannot read here: {unavailable()}")

# vtysh -f's output on a file with a daemon's refusal, vtysh's own, and a northbound transaction
# that failed whole (FRR 8.4.4, recorded)
VTYSH_OUT = """% Peer-group member cannot override remote-as of peer-group.
line 5: Failure to communicate[13] to bgpd, line:  neighbor Ethernet0 remote-as 65009

% Configuration failed.

Error type: validation
Error description: Invalid prefix range for 10.0.0.0/8: Make sure that mask length <= ge <= le
The following commands were dynamically grouped into the same transaction and rejected:
- ip prefix-list A seq 5 permit 10.0.0.0/8 ge 4
line 9: Failure to communicate[13] to zebra, line: interface Ethernet0

line 10: % Unknown command[4]:  link-detect
% Configuration failed.

Error type: validation
Error description: Invalid prefix range for 10.0.0.0/8: Make sure that mask length <= ge <= le
The following commands were dynamically grouped into the same transaction and rejected:
- ip prefix-list A seq 5 permit 10.0.0.0/8 ge 4
-  profile p
"""
FILE = """router bgp 65001
 neighbor X peer-group
 neighbor X remote-as external
 neighbor Ethernet0 interface peer-group X
 neighbor Ethernet0 remote-as 65009
bfd
 profile p
ip prefix-list A seq 5 permit 10.0.0.0/8 ge 4
interface Ethernet0
 link-detect
"""


def test_vtysh_refusals_are_named_at_their_lines_in_frrs_words():
    assert refusals(VTYSH_OUT, FILE) == (
        Refusal(5, "neighbor Ethernet0 remote-as 65009", "% Peer-group member cannot override remote-as of peer-group."),
        Refusal(8, "ip prefix-list A seq 5 permit 10.0.0.0/8 ge 4",
                "% Invalid prefix range for 10.0.0.0/8: Make sure that mask length <= ge <= le"),
        Refusal(9, "interface Ethernet0", "Failure to communicate to zebra"),
        Refusal(10, "link-detect", "% Unknown command"),
        Refusal(7, "profile p", "% Invalid prefix range for 10.0.0.0/8: Make sure that mask length <= ge <= le"),
    )
    assert refusals("", FILE) == ()  # a file FRR took whole: the positive control


def test_each_line_of_frrs_form_is_found_back_at_the_engineers_line():
    theirs = ("router bgp 65001\n bgp router-id 10.0.0.1\n address-family ipv4\n  maximum-paths 64\n"
              "interface Ethernet0\n ipv6 nd ra-interval msec 10000\n link-detect\n"
              "router bgp\n neighbor 10.1.1.1 remote-as 65002\n")
    canonical = ("frr version 8.4.4\n!\ninterface Ethernet0\n ipv6 nd ra-interval 10\nexit\n!\nrouter bgp 65001\n"
                 " bgp router-id 10.0.0.1\n neighbor 10.1.1.1 remote-as 65002\n !\n address-family ipv4 unicast\n"
                 "  maximum-paths 64\n exit-address-family\nexit\n")
    lines = origins(canonical, theirs)
    assert lines == (0, 0, 5, 6, 0, 0, 1, 2, 9, 0, 3, 4, 0, 0)


# --------------------------------------------------------------------------------------------- FRR


@pytest.fixture(scope="module")
def render(tmp_path_factory):
    out = tmp_path_factory.mktemp("render")
    subprocess.run([sys.executable, "-m", "harness.cli", "render", "ai-cluster", "-o", str(out)], check=True,
                   capture_output=True)
    return out


def _case(render: Path, tmp: Path, edit) -> tuple[list, list[str]]:
    d = tmp / "configs"
    shutil.copytree(render, d)
    f = d / "configs" / LEAF / "frr.conf"
    text = f.read_text()
    changed = edit(text)
    assert changed != text
    f.write_text(changed)
    found = directory_differences("ai-cluster", d)
    assert not found.note, found.note
    return [(x.behaviour, x.found) for x in found.differences], found.refused


_ALL = "ip prefix-list ALL seq 5 permit 0.0.0.0/0 le 32\nroute-map CONNECTED"
CASES = {  # how the leaf's frr.conf is edited -> (behaviours that differ, lines FRR refuses)
    # a member cannot override its group's remote-as: FRR refuses the line, the session comes up
    "a member's remote-as": (lambda t: t.replace(" neighbor Ethernet8 interface peer-group fabric\n",
                             " neighbor Ethernet8 interface peer-group fabric\n neighbor Ethernet0 remote-as 64600\n"),
                             [], ["Peer-group member cannot override remote-as of peer-group"]),
    "router-level timers the group overrides": (lambda t: t.replace(" bgp router-id 10.0.0.3\n",
                                                " bgp router-id 10.0.0.3\n timers bgp 30 90\n"), [], []),
    "router-level timers in force": (lambda t: t.replace(" neighbor fabric timers 3 9\n", "").replace(
        " bgp router-id 10.0.0.3\n", " bgp router-id 10.0.0.3\n timers bgp 30 90\n"), ["BGP timers"], []),
    "a profile's minimum-ttl on single-hop sessions": (
        lambda t: t.replace("  transmit-interval 200\n", "  transmit-interval 200\n  minimum-ttl 250\n"), [], []),
    "router bgp entered again without its ASN": (
        lambda t: t.replace(" bgp bestpath as-path multipath-relax\n", "") + "router bgp\n bgp bestpath as-path multipath-relax\n",
        [], []),
    "link-detect and ra-interval in msec": (
        lambda t: t.replace(" ipv6 nd ra-interval 10\n", " link-detect\n ipv6 nd ra-interval msec 10000\n"), [], []),
    # a second `match ip address prefix-list` replaces the first: the map then accepts everything
    "a second match that replaces the filter": (
        lambda t: t.replace(" match ip address prefix-list ORIGINATED\n",
                            " match ip address prefix-list ORIGINATED\n match ip address prefix-list ALL\n")
        .replace("route-map CONNECTED", _ALL, 1), ["originates"], []),
    "a first match the second replaces": (
        lambda t: t.replace(" match ip address prefix-list ORIGINATED\n",
                            " match ip address prefix-list ALL\n match ip address prefix-list ORIGINATED\n")
        .replace("route-map CONNECTED", _ALL, 1), [], []),
}


@needs_frr
@pytest.mark.parametrize("case", sorted(CASES))
def test_what_frr_makes_of_the_file_is_judged(render, tmp_path, case):
    edit, behaviours, refused = CASES[case]
    found, warnings = _case(render, tmp_path, edit)
    assert sorted({b for b, _ in found}) == behaviours, found
    assert len(warnings) == len(refused) and all(r in w for r, w in zip(refused, warnings)), warnings
    assert all(f"configs/{LEAF}/frr.conf:" in w for w in warnings)


@needs_frr
def test_a_legacy_bfd_timer_frr_does_not_write_out_is_still_judged(render, tmp_path):
    """`neighbor X bfd 3 300 300` is shown by FRR as `neighbor X bfd`: bgpd's own view of the
    neighbour keeps the timers, and the difference with the profile's 200 ms is named."""
    found, _ = _case(render, tmp_path, lambda t: t.replace(" neighbor fabric bfd profile fabric\n", "").replace(
        " neighbor fabric bfd\n", " neighbor fabric bfd 3 300 300\n"))
    assert found == [("BFD", "on, 3 × 300/300 ms (rx/tx)")]


@needs_frr
def test_frr_reads_a_text_once_per_process(monkeypatch):
    text = "router bgp 65001\n neighbor 10.0.0.1 remote-as 65002\n"
    first = read({"a": text})["a"]
    monkeypatch.setattr(frr_reader, "_read", lambda *a: pytest.fail("read again"))
    assert read({"b": text})["b"] is first
    assert " neighbor 10.0.0.1 remote-as 65002" in first.text.splitlines()


def test_without_frr_fablabs_model_reads_and_says_so(monkeypatch):
    monkeypatch.setattr(frr_reader, "unavailable", lambda: "vtysh missing (FRR: apt-get install frr)")
    found = readings({"a": "router bgp 1\n"})
    assert found.files["a"].text == "router bgp 1\n" and found.files["a"].origin is None
    assert found.note.startswith("FRR could not read the configs here (vtysh missing")


@needs_frr
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to become another user")
def test_frr_reads_without_root():
    """As user nobody, in a user namespace of its own (`unshare -Urn`), with Debian's python3 (the
    reader needs nothing beyond the standard library and fablab's own modules)."""
    where = Path(tempfile.mkdtemp(prefix="fablab-test-frr-read-"))  # pytest's own is root's alone
    try:
        _read_as_nobody(where)
    finally:
        shutil.rmtree(where)


def _read_as_nobody(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "harness", tree / "harness", ignore=shutil.ignore_patterns("__pycache__", "build"))
    for p in [tmp_path, *tree.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    script = ("import json; from harness.plumbing.frr_reader import read; "
              "f = read({'a': 'router bgp 65001\\n neighbor X peer-group\\n neighbor X remote-as external\\n"
              " neighbor Ethernet0 interface peer-group X\\n neighbor Ethernet0 remote-as 65009\\n'})['a']; "
              "print(json.dumps([f.text, [str(r) for r in f.refusals]]))")
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={"PATH": os.environ["PATH"], "PYTHONPATH": str(tree), "TMPDIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    text, refused = json.loads(run.stdout)
    assert " neighbor Ethernet0 interface peer-group X" in text.splitlines()
    assert refused == ["5: `neighbor Ethernet0 remote-as 65009`: % Peer-group member cannot override remote-as of "
                       "peer-group."]


@pytest.mark.skipif(unavailable() is not None, reason=f"FRR cannot read configs here: {unavailable()}")
def test_a_read_ended_by_ctrl_c_leaves_nothing_running(monkeypatch):
    """Ctrl-C (or SIGTERM, which the CLI turns into it) while FRR reads: every worker is ended,
    not only on a timeout; the positive control is that they had started."""
    started: list[subprocess.Popen] = []

    class Interrupted(subprocess.Popen):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

        def communicate(self, *args, **kwargs):
            raise KeyboardInterrupt

    monkeypatch.setattr(frr_reader.subprocess, "Popen", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        frr_reader._read({"a": "router bgp 65000\n", "b": "router bgp 65001\n"}, ["a", "b"], 2, None)
    assert len(started) == 2 and all(p.poll() is not None for p in started)
