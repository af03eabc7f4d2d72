"""The faults without a lab: one table (names, what each teaches, the check case that catches
it), typed targets parsed from `--on` and printed back the same way, states that survive the
codec (so `fablab fix` can undo from another process), defaults on every built-in, the
with-block form, the faults.json store, the CLI's refusals, and the old module paths still
giving every name anything imports from them (the mystery: test_mystery_units.py)."""
from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import subprocess
import sys
import types
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.checks.registry import select
from harness.core.codec import from_plain, hints, to_plain
from harness.core.errors import InputError
from harness.core.model import build
from harness.core.plan import make_plan
from harness.faults import (BY_NAME, FAULTS, KNOBS, Applied, Cable, Fault, Nic, Port, Ports, Route, Switch, Switches,
                            applied, controls, fault, parse)
from harness.faults import store
from harness.faults.protocol import GROUPS
from harness.faults.targets import KINDS
from harness.moved import MOVED
from topologies import BUILTINS

ROOT = Path(__file__).resolve().parents[2]
CASES = {c.name for check in select(None) for c in check.cases}
OLD_CLI = ("swapped-cables", "rogue-cable", "stray-cable", "route-leak", "l3-hashing", "bfd-off", "slow-bfd",
           "gray-link", "small-mtu", "pfc-priority", "dscp-map", "acl-flip", "wrong-vlan", "tenant-routed")
OLD_MODULES = ("harness.checks.sabotage", "harness.checks.faults", "harness.checks.mystery",
               "harness.checks.fault_places", "harness.checks.ecmp_faults")


def fablab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.fixture(scope="module")
def ai():
    return make_plan(build(BUILTINS["ai-cluster"]()))


# --------------------------------------------------------------------------- the table

def test_one_name_one_fault_and_each_caught_by_a_registered_case():
    names = [f.name for f in FAULTS + KNOBS]
    assert len(set(names)) == len(names)
    assert len(BY_NAME) == len(FAULTS)
    assert [f for f in FAULTS if f.caught_by not in CASES] == []
    assert all(k.caught_by == "" for k in KNOBS)  # a knob breaks nothing: no case may fail under it
    assert {f.teaches for f in FAULTS} == set(GROUPS)
    groups = [f.teaches for f in FAULTS]
    assert groups == sorted(groups, key=GROUPS.index)  # grouped, in the order listings show them


def test_the_cli_names_kept_their_meaning_and_the_two_bfd_faults_have_their_own():
    assert set(OLD_CLI) <= set(BY_NAME)
    assert BY_NAME["bfd-off"].do is not BY_NAME["bfd-removed"].do  # timers beyond BGP's hold vs BFD taken off
    assert "3 s × 50" in BY_NAME["bfd-off"].what and "taken off" in BY_NAME["bfd-removed"].what
    assert BY_NAME["stray-cable"].do is not BY_NAME["stray-cable-unfiltered"].do


def test_options_change_how_far_a_fault_goes_never_which_fault():
    heavier = BY_NAME["weighted-uplink"].but(weight=3)
    assert heavier.name == "weighted-uplink" and dict(heavier.options) == {"weight": 3}
    assert dict(BY_NAME["weighted-uplink"].options) == {"weight": 2}  # the table's own is untouched
    with pytest.raises(TypeError, match="no option 'wieght'"):
        BY_NAME["weighted-uplink"].but(wieght=3)


# --------------------------------------------------------------------------- targets

GOOD = [
    (Switch, "be-g1-r0", Switch("be-g1-r0")),
    (Switches, "be-g1-r0,be-s1", Switches(("be-g1-r0", "be-s1"))),
    (Port, "be-g1-r0:Ethernet0", Port("be-g1-r0", "Ethernet0")),
    (Port, "be-g1-r0", Port("be-g1-r0")),  # the fault picks the port
    (Ports, "gpu01:rail0,gpu01:rail1", Ports((Port("gpu01", "rail0"), Port("gpu01", "rail1")))),
    (Cable, "be-g1-r0:Ethernet0,be-s1:Ethernet0", Cable(Port("be-g1-r0", "Ethernet0"), Port("be-s1", "Ethernet0"))),
    (Cable, "fe-l1,be-g1-r0", Cable(Port("fe-l1"), Port("be-g1-r0"))),
    (Nic, "gpu03", Nic("gpu03")),
    (Nic, "gpu03:fe0", Nic("gpu03", "fe0")),
    (Route, "be-g1-r0:Ethernet0@10.0.1.8/31", Route("be-g1-r0", "Ethernet0", "10.0.1.8/31")),
]


@pytest.mark.parametrize("kind,text,expected", GOOD, ids=[f"{k.__name__}:{t}" for k, t, _ in GOOD])
def test_a_target_parses_and_prints_back_the_same(kind, text, expected):
    target = parse(kind, text)
    assert target == expected and str(target) == text
    assert from_plain(kind, json.loads(json.dumps(to_plain(target)))) == target


BAD = [
    (Switch, "", "empty"),
    (Switch, "be-g1-r0:Ethernet0", "the switch 'be-g1-r0:Ethernet0' holds ':'"),
    (Switches, "be-s1,,be-s2", "switch #2 is empty"),
    (Switches, "be-s1,be-s1", "named twice"),
    (Port, ":Ethernet0", "the node is empty"),
    (Port, "be-s1:", "the port is empty"),
    (Ports, "gpu01:rail0,gpu01", "end #2 ('gpu01') has no port"),
    (Cable, "be-g1-r0", "a cable has two ends"),
    (Cable, "be-s1,be-s1", "both ends are on be-s1"),
    (Route, "be-g1-r0:Ethernet0", "no @PREFIX"),
    (Route, "be-g1-r0@10.0.1.8/31", "no port"),
]


@pytest.mark.parametrize("kind,text,says", BAD, ids=[f"{k.__name__}:{t}" for k, t, _ in BAD])
def test_a_bad_target_is_refused_naming_what_is_wrong_and_the_form(kind, text, says):
    with pytest.raises(InputError) as e:
        parse(kind, text)
    assert says in str(e.value) and kind.form in str(e.value), str(e.value)


def test_every_kind_has_a_form_and_an_example_that_parses():
    for kind in KINDS:
        assert str(parse(kind, kind.example)) == kind.example


# --------------------------------------------------------------------------- states: what fix reads back

def _sample(tp):
    """A value of type `tp` with every field filled: enough to prove the codec round-trip."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        return tp(**{f.name: _sample(hints(tp)[f.name]) for f in dataclasses.fields(tp)})
    if origin in (typing.Union, types.UnionType):
        return _sample(next(a for a in args if a is not type(None)))
    if origin is tuple:
        return (_sample(args[0]),) if len(args) == 2 and args[1] is Ellipsis else tuple(_sample(a) for a in args)
    if origin is dict:
        return {"k": _sample(args[1])}
    return {str: "x", int: 7, float: 1.5, bool: True, dict: {"k": "v"}}[tp]


@pytest.mark.parametrize("f", FAULTS + KNOBS, ids=lambda f: f.name)
def test_a_faults_state_survives_json_as_its_own_type(f):
    assert dataclasses.is_dataclass(f.state) and f.state.__dataclass_params__.frozen
    state = _sample(f.state)
    assert from_plain(f.state, json.loads(json.dumps(to_plain(state)))) == state


# --------------------------------------------------------------------------- defaults and controls

@pytest.mark.parametrize("topology", sorted(BUILTINS))
def test_each_default_target_is_of_its_kind_in_the_plan_and_prints_back(topology):
    plan = make_plan(build(BUILTINS[topology]()))
    nodes = {n.name for n in plan.fabric.nodes}
    for f in FAULTS + KNOBS:
        target = f.default(plan)
        if target is not None:
            assert isinstance(target, f.takes), f.name
            assert set(target.nodes()) <= nodes, (f.name, target)
            assert f.target(str(target)) == target, (f.name, target)
    placed = {c.fault.name for c in controls(plan)}
    assert placed == {f.name for f in FAULTS if f.default(plan) is not None}
    assert {"l3-hashing", "small-mtu", "dscp-map"} <= placed  # every BE has them


def test_ai_cluster_has_a_place_for_every_fault_but_the_rail_only_one(ai):
    found = {c.fault.name: c for c in controls(ai)}
    assert set(BY_NAME) - set(found) == {"joined-rails"}
    assert all(c.case == c.fault.caught_by for c in found.values())
    assert found["bfd-removed"].options == {"detect_s": 2.5}  # the case waits no longer than BFD would have
    rail_only = make_plan(build(BUILTINS["multi-rail"](kind="rail-only")))
    assert "joined-rails" in {c.fault.name for c in controls(rail_only)}


# --------------------------------------------------------------------------- the protocol, with a lab made of a plan

@dataclasses.dataclass(frozen=True)
class Count:
    n: int


def _counting(log: list) -> Fault:
    def do(lab, target, n=1):
        log.append(("apply", str(target), n))
        return Applied(f"counted on {target}", Count(n))

    def undo(lab, target, state):
        log.append(("undo", str(target), state))

    return Fault("counting", "ecmp", "a fault that only counts", "ecmp", Switch, Count,
                 lambda plan: Switch(plan.switches[0].name), do, undo, options=(("n", 1),))


def _lab(plan, tmp_path):
    return SimpleNamespace(plan=plan, name="unit", run_dir=tmp_path, shortfalls=lambda: [])


def test_the_with_block_applies_at_once_and_undoes_once(ai, tmp_path):
    log: list = []
    f = _counting(log).but(n=3)
    with applied(_lab(ai, tmp_path), f) as a:
        assert log == [("apply", ai.switches[0].name, 3)] and a.description.startswith("counted")
        a.undo()
    assert log[1:] == [("undo", ai.switches[0].name, Count(3))]  # once, though the block ended after


def test_a_target_of_another_kind_or_off_the_plan_is_refused(ai, tmp_path):
    f, lab = _counting([]), _lab(ai, tmp_path)
    with pytest.raises(InputError, match="goes on a switch"):
        f.apply(lab, Port("be-s1", "Ethernet0"))
    with pytest.raises(InputError, match="has no node 'be-s9'"):
        f.apply(lab, Switch("be-s9"))


def test_the_store_gives_fix_the_state_as_its_own_type(ai, tmp_path, monkeypatch):
    log: list = []
    f = _counting(log)
    monkeypatch.setitem(BY_NAME, f.name, f)
    lab = _lab(ai, tmp_path)
    entry = store.break_(lab, f.name, "be-s2")
    assert entry["on"] == "be-s2" and entry["state"] == {"n": 1}
    with pytest.raises(InputError, match="already in place"):
        store.break_(lab, f.name, "be-s2")
    assert [e["fault"] for e in store.shown(lab)] == [f.name]
    (tmp_path / store.MYSTERY).write_text("{}")
    undone = store.fix(lab)
    assert [e["on"] for e in undone] == ["be-s2"]
    assert log[-1] == ("undo", "be-s2", Count(1))  # read back from faults.json, typed
    assert store.in_place(lab) == [] and not (tmp_path / store.MYSTERY).exists()


# --------------------------------------------------------------------------- the CLI, before any lab

def test_faults_json_names_what_each_teaches_and_what_catches_it():
    run = fablab("faults", "--json")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    assert [r["name"] for r in rows] == [f.name for f in FAULTS]
    assert all({"name", "teaches", "caught_by", "check", "what", "on"} <= set(r) for r in rows)
    assert {r["name"]: r["check"] for r in rows}["bfd-off"] == "failover"


def test_an_unknown_fault_is_refused_naming_the_faults_before_the_lab_is_looked_at():
    run = fablab("break", "no-such-lab", "cable-chewed")
    assert run.returncode == 2
    assert "unknown fault 'cable-chewed'" in run.stderr and "swapped-cables" in run.stderr
    with pytest.raises(InputError, match="fablab faults"):
        fault("cable-chewed")


def test_a_bad_on_is_refused_before_the_lab_is_looked_at():
    run = fablab("break", "no-such-lab", "gray-link", "--on", "be-g1-r0")
    assert run.returncode == 2
    assert "a cable has two ends" in run.stderr and "no-such-lab" not in run.stderr, run.stderr
    control = fablab("break", "no-such-lab", "gray-link", "--on", "be-g1-r0,be-s1")  # parses: on to the lab
    assert control.returncode == 2 and "'no-such-lab'" in control.stderr, control.stderr


def test_fix_wants_a_fault_or_all():
    run = fablab("fix", "no-such-lab")
    assert run.returncode == 2 and "--all" in run.stderr


# the mystery: tests/unit/test_mystery_units.py

# --------------------------------------------------------------------------- the old module paths

def _imports_from_old_paths() -> list[tuple[str, str, str]]:
    """(file, old module, name) for every `from <old> import name` (and `from harness.checks
    import <old>`) in the repository's Python."""
    found = []
    for folder in ("harness", "labs", "tests", "scripts", "docs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.ImportFrom) or node.level:
                    continue
                for alias in node.names:
                    if node.module in OLD_MODULES:
                        found.append((str(path.relative_to(ROOT)), node.module, alias.name))
                    elif f"{node.module}.{alias.name}" in OLD_MODULES:
                        found.append((str(path.relative_to(ROOT)), f"{node.module}.{alias.name}", ""))
    return found


def test_every_name_imported_from_an_old_path_is_where_it_points_now():
    assert all(old in MOVED and MOVED[old].startswith("harness.faults.") for old in OLD_MODULES)
    assert not any((ROOT / (old.replace(".", "/") + ".py")).exists() for old in OLD_MODULES)  # one copy: the new
    missing = [(path, old, name) for path, old, name in _imports_from_old_paths()
               if name and not hasattr(importlib.import_module(MOVED[old]), name)]
    assert missing == []


def test_the_old_paths_are_the_new_modules_with_a_warning():
    for old in OLD_MODULES:
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
            module = importlib.import_module(old)
        assert module is importlib.import_module(MOVED[old])
