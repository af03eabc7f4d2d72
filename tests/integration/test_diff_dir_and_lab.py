"""`fablab diff T DIR` and `fablab diff T LAB` agree on any configs that boot (issue 67, item 4):
the same differences, by the same reading (what FRR itself makes of the configs, from the files or
from the running daemons). ai-cluster's render in NVUE's words with a fault of meaning on each of
three switches (two in frr.conf, one in config_db.json) (tests/corpus/faults.py), booted once; the differences of the directory and of the
lab are compared by switch, subject, behaviour, expected and found (their file and lines differ by
nature: a file's lines against a running config's)."""
from __future__ import annotations

import json

import pytest

from corpus import faults as F
from corpus.model import parse
from corpus.styles import peer_asns, rewrite, write_switch
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts, write_artifacts
from topologies import BUILTINS

from .conftest import fablab as _fablab, up_with_configs

STYLE = "nvue"
# faults that still converge (one that leaves a FIB short keeps `up` waiting to its deadline)
# and what the netns runtime applies of a config_db.json (its lossless tables; not an MTU: `up` says so)
MADE = {"BFD timers changed": "be-s2", "route-map permits with no match": "fe-l1", "DSCP -> TC changed": "be-g1-r0"}


@pytest.fixture(scope="module")
def faulted(tmp_path_factory):
    ours = tmp_path_factory.mktemp("ours")
    write_artifacts(artifacts(make_plan(build(BUILTINS["ai-cluster"]()))), ours)
    out = tmp_path_factory.mktemp("theirs") / STYLE
    rewrite(STYLE, ours, out)
    faults = {f.name: f for f in F.FAULTS}
    for name, switch in MADE.items():
        conf = parse((ours / "configs" / switch / "frr.conf").read_text())
        db = json.loads((ours / "configs" / switch / "config_db.json").read_text())
        faults[name].apply(conf if faults[name].file == "frr.conf" else db)
        write_switch(STYLE, conf, db, peer_asns(ours / "configs"), out / "configs" / switch)
    return out


@pytest.fixture(scope="module")
def lab(faulted):
    with up_with_configs("ai-cluster", "dvl", faulted) as name:
        yield name


def _said(run) -> set[tuple[str, str, str, str, str]]:
    doc = json.loads(run.stdout)
    return {(d["switch"], d["subject"], d["behaviour"], d["expected"], d["found"]) for d in doc["differences"]}


def test_the_directory_and_the_lab_have_the_same_differences(faulted, lab):
    on_disk, running = _said(_fablab("diff", "ai-cluster", str(faulted), "--json")), \
        _said(_fablab("diff", "ai-cluster", lab, "--json"))
    assert on_disk == running, f"only on disk: {on_disk - running}\nonly running: {running - on_disk}"
    # each fault made is named, on its switch, by both readings (the positive control)
    assert {switch for switch, *_ in on_disk} == set(MADE.values()), on_disk
