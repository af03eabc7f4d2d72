"""The corpus no one on the team invented (issue 31, item 6): fablab's render of several built-ins,
rewritten in the styles of SONiC's bgpcfgd templates and sample config_db.json, FRR's documentation,
Cumulus/NVUE and FRR's own running-config (tests/corpus/styles.py names the sources of each).

- FRR itself accepts every rewritten frr.conf (`vtysh --dryrun`);
- `fablab diff` finds no difference in any of them: the same meaning in other words;
- a semantic fault made in each style is named, on its switch, by the behaviour it changes;
- random rewordings that keep the meaning never give a difference; random mutations always do.

No root; the renders are made once per session, in process.
"""
from __future__ import annotations

import functools
import json
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from corpus import faults as F
from corpus import rewrites as R
from corpus.model import parse, write_fablab
from corpus.styles import STYLES, peer_asns, rewrite, write_switch
from harness.catalog import load_fabric
from harness.core.declarations import Bfd
from harness.cli.diff import differences
from harness.core.meaning.compare import diff_frr
from harness.core.plan import make_plan
from harness.plumbing.frr_reader import readings
from harness.render import artifacts

STYLE_NAMES = sorted(STYLES)
TOPOLOGIES = ["ai-cluster", "dual-homed", "rail-only"]


def _render(topology: str, out: Path) -> Path:
    """What `fablab render TOPOLOGY -o OUT` writes under configs/ (frr.conf, config_db.json)."""
    files = artifacts(make_plan(load_fabric(topology)))
    for rel, text in files.items():
        if rel.startswith("configs/") and rel.endswith(("frr.conf", "config_db.json")):
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return out


@pytest.fixture(scope="session")
def renders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("renders")
    return {t: _render(t, root / t) for t in TOPOLOGIES}


@pytest.fixture(scope="session")
def corpus(renders, tmp_path_factory) -> dict[tuple[str, str], Path]:
    """(style, topology) -> the render rewritten in that style."""
    root = tmp_path_factory.mktemp("corpus")
    out = {}
    for t, src in renders.items():
        for s in STYLE_NAMES:
            rewrite(s, src, root / s / t)
            out[(s, t)] = root / s / t
    return out


def _shown(found, limit: int = 8) -> str:
    return "\n".join(str(d) for d in found[:limit]) + (f"\n... {len(found) - limit} more" if len(found) > limit else "")


# -- the corpus itself ---------------------------------------------------------------------------------

def test_every_style_changes_the_words(renders, corpus):
    """A rewriter that wrote fablab's words back would prove nothing."""
    for (style, t), d in corpus.items():
        for f in (d / "configs").glob("*/frr.conf"):
            ours = (renders[t] / "configs" / f.parent.name / "frr.conf").read_text()
            assert f.read_text() != ours, (style, t, f.parent.name)


def test_sonic_style_uses_sonics_names_and_wording(corpus):
    d = corpus[("sonic", "ai-cluster")] / "configs" / "be-g1-r0"
    frr = (d / "frr.conf").read_text()
    for words in ("neighbor PEER_V4 peer-group", "route-map FROM_BGP_PEER_V4 permit 10",
                  "route-map TO_BGP_PEER_V4 permit 10", "  address-family ipv4\n", "frr defaults traditional",
                  "no bgp ebgp-requires-policy", "timers bgp 3 9", "bfd profile fast-failover", " ge 32\n"):
        assert words in frr, words
    assert "\nexit\n" not in frr and "ipv4 unicast" not in frr and " le 32" not in frr
    assert "permit 100" not in frr  # SONiC's permit-all entry would let every prefix in
    db = json.loads((d / "config_db.json").read_text())
    assert set(db["DSCP_TO_TC_MAP"]) == {"AZURE"} and set(db["WRED_PROFILE"]) == {"AZURE_LOSSLESS"}
    assert all("mtu" not in p for p in db["PORT"].values())  # 9100: SONiC's default
    assert any(k.startswith("pg_lossless_") for k in db["BUFFER_PROFILE"])
    fe = json.loads((corpus[("sonic", "ai-cluster")] / "configs" / "fe-l1" / "config_db.json").read_text())
    assert set(fe["ACL_TABLE"]) == {"DATAACL"} and fe["ACL_TABLE"]["DATAACL"]["stage"] == "INGRESS"
    assert all(k.split("|")[1].startswith(("RULE_", "DEFAULT_RULE")) for k in fe["ACL_RULE"])


@pytest.mark.parametrize("style", STYLE_NAMES)
def test_frr_accepts_every_rewritten_config(style, corpus, vtysh):
    files = [f for (s, _), d in corpus.items() if s == style for f in sorted((d / "configs").glob("*/frr.conf"))]

    def check(f: Path):
        run = subprocess.run([vtysh, "--dryrun", "-f", str(f)], capture_output=True, text=True, timeout=30)
        return f, run.returncode, (run.stdout + run.stderr).strip()

    with ThreadPoolExecutor(8) as pool:
        bad = [(str(f), rc, msg) for f, rc, msg in pool.map(check, files) if rc != 0]
    assert not bad, bad[:5]


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("style", STYLE_NAMES)
def test_the_same_meaning_in_each_style_has_no_difference(style, topology, corpus):
    found, switches = differences(topology, corpus[(style, topology)])
    assert switches > 0
    assert not found, f"{len(found)} difference(s) on {style}/{topology}:\n{_shown(found)}"


# -- faults, in each style's own words ---------------------------------------------------------------------

FAULT_TOPOLOGY = "ai-cluster"
FAULT_SWITCH = {"frr.conf": "be-g1-r2", "config_db.json": "be-g1-r2"}
ACL_SWITCH = "fe-l1"


def _faulty_dir(style: str, fault: F.Fault, renders, tmp_path) -> tuple[Path, str]:
    """The ai-cluster corpus in STYLE with FAULT made on one switch (then written in STYLE's words)."""
    src = renders[FAULT_TOPOLOGY]
    dst = tmp_path / style
    rewrite(style, src, dst)
    switch = ACL_SWITCH if fault.name.startswith("ACL") else FAULT_SWITCH[fault.file]
    conf = parse((src / "configs" / switch / "frr.conf").read_text())
    db = json.loads((src / "configs" / switch / "config_db.json").read_text())
    target = conf if fault.file == "frr.conf" else db
    assert fault.needs(target), f"{switch} has nothing for {fault.name}"
    fault.apply(target)
    write_switch(style, conf, db, peer_asns(src / "configs"), dst / "configs" / switch)
    return dst, switch


@pytest.mark.parametrize("fault", F.FAULTS, ids=lambda f: f.name)
@pytest.mark.parametrize("style", STYLE_NAMES)
def test_a_fault_in_each_style_is_named(style, fault, renders, tmp_path, vtysh):
    where, switch = _faulty_dir(style, fault, renders, tmp_path)
    if fault.file == "frr.conf":  # the fault is a config FRR takes: it is a fault of meaning, not of syntax
        run = subprocess.run([vtysh, "--dryrun", "-f", str(where / "configs" / switch / "frr.conf")],
                             capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stdout + run.stderr
    found, _ = differences(FAULT_TOPOLOGY, where)
    assert F.names_fault(found, switch, fault), (
        f"{fault.name} on {switch} in {style} style not named by {fault.words}; "
        f"{len(found)} difference(s):\n{_shown(found)}")
    assert {d.switch for d in found} == {switch}, f"differences beyond {switch}:\n{_shown(found)}"


def test_the_faults_are_in_each_styles_words(renders, tmp_path):
    """The permit-all fault reads as SONiC writes it, and the BFD one as NVUE does."""
    sonic, sw = _faulty_dir("sonic", F.FAULTS[0], renders, tmp_path / "a")
    assert "route-map FROM_BGP_PEER_V4 permit 100\n" in (sonic / "configs" / sw / "frr.conf").read_text()
    nvue, sw = _faulty_dir("nvue", next(f for f in F.FAULTS if f.name == "BFD timers changed"), renders,
                           tmp_path / "b")
    tx = Bfd().interval_ms  # the fault slows the receive interval only
    assert f"neighbor underlay bfd 3 1000 {tx}" in (nvue / "configs" / sw / "frr.conf").read_text()


# -- properties: rewordings never differ, mutations always do ------------------------------------------------

PROPERTY_SWITCHES = [("ai-cluster", "be-g1-r2"), ("ai-cluster", "be-s1"), ("ai-cluster", "fe-l1"),
                     ("ai-cluster", "fe-s1"), ("dual-homed", "fe-l1"), ("dual-homed", "be-g1-r0")]
SPINES = {"be-s1", "fe-s1"}  # each prefix behind one leaf: maximum-paths changes nothing they do


@functools.lru_cache(maxsize=None)
def _rendered(topology: str):
    """The plan and fablab's render of a built-in, made once for every example."""
    plan = make_plan(load_fabric(topology))
    return plan, artifacts(plan)


def _one_switch_diff(renders, topology: str, switch: str, text: str, vtysh: str | None):
    """One switch's frr.conf against fablab's render of it (the other switches are as rendered,
    so only this one can differ): FRR must accept it first."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "frr.conf"
        path.write_text(text)
        if vtysh:
            run = subprocess.run([vtysh, "--dryrun", "-f", str(path)], capture_output=True, text=True, timeout=30)
            assert run.returncode == 0, (run.stdout + run.stderr, text)
        plan, ours = _rendered(topology)
        read = readings({"theirs": text})  # what FRR itself makes of it, as `fablab diff` judges
        assert read.model is None, read.note
        return diff_frr(plan, switch, ours[f"configs/{switch}/frr.conf"], read.files["theirs"], str(path))


# Modest and fast: the same 25 examples every run (derandomized), no shrinking (a failing example is
# printed whole), no example database in the repo.
PROPERTY = settings(max_examples=25, deadline=None, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="session")
def vtysh_or_none():
    return shutil.which("vtysh")


def test_the_model_reads_fablabs_own_words_back(renders):
    """The corpus' reader and fablab's writer agree: written back, nothing differs."""
    for t, src in renders.items():
        for f in (src / "configs").glob("*/frr.conf"):
            c = parse(f.read_text())
            assert parse(write_fablab(c)) == c, f


@PROPERTY
@given(data=st.data())
def test_meaning_preserving_rewordings_never_differ(renders, vtysh_or_none, data):
    topology, switch = data.draw(st.sampled_from(PROPERTY_SWITCHES), label="switch")
    conf = parse((renders[topology] / "configs" / switch / "frr.conf").read_text())
    text = data.draw(R.textual(data.draw(R.structural(conf))), label="rewording")
    found = _one_switch_diff(renders, topology, switch, text, vtysh_or_none)
    assert not found, f"{switch}: {len(found)} difference(s) for a rewording:\n{_shown(found)}\n---\n{text}"


@PROPERTY
@given(data=st.data())
def test_semantic_mutations_always_differ(renders, vtysh_or_none, data):
    topology, switch = data.draw(st.sampled_from(PROPERTY_SWITCHES), label="switch")
    conf = parse((renders[topology] / "configs" / switch / "frr.conf").read_text())
    bad, kind = data.draw(R.mutated(conf, multipath_matters=switch not in SPINES), label="mutation")
    text = data.draw(R.textual(data.draw(R.structural(bad))), label="rewording")
    found = _one_switch_diff(renders, topology, switch, text, vtysh_or_none)
    assert any(d.switch == switch for d in found), f"{switch}: mutation {kind!r} not found\n---\n{text}"


def test_a_routed_hosts_frr_conf_is_judged_too(renders):
    """dual-homed renders an frr.conf for each routed host (BGP to both leaves); the netns runtime runs
    it. A host that activates no session for IPv4 is cut off: that is a difference, on the host."""
    conf = parse((renders["dual-homed"] / "configs" / "gpu01" / "frr.conf").read_text())
    v4 = conf.bgp.af("ipv4 unicast")
    for who in v4.peers:
        v4.peers[who] = [s for s in v4.peers[who] if s != "activate"]
    found = _one_switch_diff(renders, "dual-homed", "gpu01", write_fablab(conf), None)
    assert any(d.switch == "gpu01" for d in found), _shown(found)
