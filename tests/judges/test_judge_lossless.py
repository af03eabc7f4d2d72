"""The lossless check's judges on observations recorded on real labs (tests/observations/
lossless-*/), and on the same observations with one thing changed: a hop that disagrees, a GPU
NIC too small, a frame lost or re-marked. No lab, no root."""
from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable

import pytest

from harness.checks.lossless import LosslessConfigs, audit, configs_of_dir, judge_audit, load_dir
from harness.checks.lossless.configs import TABLES
from harness.checks.lossless.wire import FragNeeded, JumboSeen
from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts
from harness.render.lossless import contract_of
from harness.report.recorded import judge
from topologies import BUILTINS

import judge_tables as tables


# --------------------------------------------------------------------------- lossless-audit


def _configs(seen: LosslessConfigs, change: Callable[[dict], None]) -> LosslessConfigs:
    configs = copy.deepcopy(seen.configs)
    change(configs)
    return dataclasses.replace(seen, configs=configs)


def _kernels(seen: LosslessConfigs, change: Callable[[dict], None]) -> LosslessConfigs:
    kernels = copy.deepcopy(seen.kernels)
    change(kernels)
    return dataclasses.replace(seen, kernels=kernels)


def _set_pfc(configs: dict, switch: str, priorities: str) -> None:
    for row in configs[switch]["PORT_QOS_MAP"].values():
        row["pfc_enable"] = priorities


def _map_roce_dscp(configs: dict, switch: str, tc: str) -> None:
    qos = configs[switch]["PORT_QOS_MAP"]
    name = next(iter(qos.values()))["dscp_to_tc_map"]
    configs[switch]["DSCP_TO_TC_MAP"][name.strip("[]").split("|")[-1]]["26"] = tc


AUDIT = [  # (what changed, change, the (node, table) findings it must name; none: it passes)
    ("as recorded", lambda s: s, set()),
    ("a directory: no kernels read", lambda s: dataclasses.replace(s, kernels=None), set()),
    ("a GPU NIC's MTU lowered", lambda s: _kernels(s, lambda k: k["gpu06"].update(rail3=2000)),
     {("gpu06", "kernel link")}),
    ("a GPU node not in the lab", lambda s: _kernels(s, lambda k: k.pop("gpu03")), {("gpu03", "node")}),
    ("a switch not read", lambda s: _configs(s, lambda c: c.pop("be-s2")), {("be-s2", "config_db.json")}),
    ("a leaf port's MTU lowered", lambda s: _configs(s, lambda c: c["be-g2-r1"]["PORT"]["Ethernet8"].update(
        mtu="4000")), {("be-g2-r1", "PORT")}),
    ("a spine pausing priority 4", lambda s: _configs(s, lambda c: _set_pfc(c, "be-s2", "4")),
     {("be-s2", "PORT_QOS_MAP")}),
    ("RoCE DSCP mapped to TC 1 on a spine", lambda s: _configs(s, lambda c: _map_roce_dscp(c, "be-s1", "1")),
     {("be-s1", "DSCP_TO_TC_MAP")}),
]


@pytest.mark.parametrize("what,change,named", AUDIT, ids=[a[0] for a in AUDIT])
def test_the_audit_judge(what, change, named):
    recorded = tables.recorded("lossless-audit/ai-cluster")
    outcome = judge(recorded, change(recorded.observation))
    assert outcome.passed is not named, outcome.reason
    assert named <= {(f.node, f.table) for f in outcome.findings}, outcome.reason
    assert (outcome.switches, outcome.links) == (10, 8 if "not read" in what else 16)  # be-s2's 8 links unread


def test_a_spine_pausing_another_priority_is_named_on_every_port_and_at_its_peers():
    recorded = tables.recorded("lossless-audit/ai-cluster")
    seen = _configs(recorded.observation, lambda c: _set_pfc(c, "be-s2", "4"))
    findings = judge(recorded, seen).findings
    spine_ports = set(seen.configs["be-s2"]["PORT_QOS_MAP"])
    assert {f.port for f in findings if f.node == "be-s2"} == spine_ports
    assert {f.node for f in findings} == {"be-s2"} | {f.node for f in findings if "as at its peer be-s2" in f.expected}


def test_the_recorded_small_mtu_names_the_port_and_its_repair_passes():
    """The negative control's observation (a leaf port at 1500 in the kernel), and the same
    with the port's MTU as planned again: the control of the table."""
    recorded = tables.recorded("lossless-audit/small-mtu")
    outcome = judge(recorded)
    small = [f for f in outcome.findings if f.found == "1500"]
    assert not outcome.passed and len(small) == 1 and small[0].table == "PORT", outcome.reason
    plan = tables.plan("lossless-audit/small-mtu")
    mtu = str(plan.switch(small[0].node).mtu)
    repaired = _configs(recorded.observation, lambda c: c[small[0].node]["PORT"][small[0].port].update(mtu=mtu))
    assert judge(recorded, repaired).passed


def _rendered(name: str) -> tuple:
    plan = make_plan(build(BUILTINS[name]()))
    files = artifacts(plan)
    return plan, {sw.name: json.loads(files[f"configs/{sw.name}/config_db.json"]) for sw in plan.switches}


class _Reads(dict):
    """A config_db that notes every table asked for."""

    asked: set[str] = set()

    def __getitem__(self, key):
        self.asked.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.asked.add(key)
        return super().__contains__(key)


@pytest.mark.parametrize("topology", ["ai-cluster", "rail-only", "dual-homed"])
def test_the_observation_keeps_every_table_the_audit_reads(topology):
    """What the measurement leaves out of a CONFIG_DB the audit never asks for: the audit of
    the whole configs and the judge of the observation agree."""
    plan, configs = _rendered(topology)
    _Reads.asked = set()
    whole = audit(contract_of(plan), {name: _Reads(db) for name, db in configs.items()})
    assert _Reads.asked and _Reads.asked <= TABLES, sorted(_Reads.asked - TABLES)
    seen = judge_audit(plan, LosslessConfigs({n: {t: r for t, r in db.items() if t in TABLES}
                                              for n, db in configs.items()}))
    assert (seen.passed, seen.reason) == (whole.passed, whole.reason)


def test_a_directory_is_judged_as_its_configs_are_audited(tmp_path):
    plan, configs = _rendered("ai-cluster")
    configs["be-g1-r0"]["ACL_TABLE"] = {"X": {"ports": ["Ethernet0"], "type": "L3", "stage": "ingress"}}
    configs["be-g1-r0"]["PORT"]["Ethernet0"]["mtu"] = 1500
    for name, db in configs.items():
        (tmp_path / "configs" / name).mkdir(parents=True)
        (tmp_path / "configs" / name / "config_db.json").write_text(json.dumps(db))
    contract = contract_of(plan)
    seen = configs_of_dir(tmp_path, contract)
    assert seen.kernels is None and "BREAKOUT_CFG" not in seen.configs["be-g1-r0"]
    assert seen.configs["be-g1-r0"]["ACL_TABLE"]["X"]["ports"] == ("Ethernet0",)  # frozen: a list as a tuple
    expected, got = audit(contract, load_dir(tmp_path, contract)), judge_audit(plan, seen)
    assert not got.passed and got.findings == expected.findings


# --------------------------------------------------------------------------- lossless-wire


def _path(seen: JumboSeen, index: int, **change) -> JumboSeen:
    paths = list(seen.paths)
    paths[index] = dataclasses.replace(paths[index], **change)
    return dataclasses.replace(seen, paths=tuple(paths))


def _lost_one(seen: JumboSeen) -> JumboSeen:
    return _path(seen, 0, received=seen.paths[0].received - 1)


def _spine_address(plan) -> tuple[str, str]:
    spine = next(s for s in plan.switches if s.lossless and not s.rails)
    return spine.name, str(spine.loopback.ip)


WIRE = [  # (what changed, change, passes, words the reason must hold)
    ("as recorded", lambda s, plan: s, True, "every path carries them"),
    ("drops with nothing lost", lambda s, plan: dataclasses.replace(s, drops={"be-s1:Ethernet0": 3}), True, ""),
    ("one frame lost", lambda s, plan: _lost_one(s), False, "1 of"),
    ("lost, with drops meanwhile", lambda s, plan: dataclasses.replace(_lost_one(s), drops={"be-s1:Ethernet0": 1}),
     False, "ports that dropped frames meanwhile: be-s1:Ethernet0 1"),
    ("re-marked to DSCP 0", lambda s, plan: _path(s, 1, dscps=(0, 26)), False, "received with DSCP [0]"),
    ("cut short", lambda s, plan: _path(s, 0, sizes=(1500,)), False, "received as [1500] bytes"),
    ("the source's kernel sent fewer", lambda s, plan: _path(s, 0, sent=s.paths[0].sent - 1,
                                                             received=s.paths[0].sent - 1), False, "kernel sent"),
    ("received, nothing captured", lambda s, plan: _path(s, 0, dscps=(), sizes=()), False, "no packet captured"),
    ("a hop too small", lambda s, plan: dataclasses.replace(
        s, frag_needed=(FragNeeded(_spine_address(plan)[1], 1500, 2),)), False, "its next hop's MTU is 1500"),
]


@pytest.mark.parametrize("what,change,passes,words", WIRE, ids=[w[0] for w in WIRE])
def test_the_wire_judge(what, change, passes, words):
    recorded = tables.recorded("lossless-wire/ai-cluster")
    plan = tables.plan("lossless-wire/ai-cluster")
    outcome = judge(recorded, change(recorded.observation, plan))
    assert outcome.passed is passes, outcome.reason
    assert words in outcome.reason
    if what == "a hop too small":
        assert [(t.node, t.mtu) for t in outcome.too_small] == [(_spine_address(plan)[0], 1500)]


def test_the_recorded_small_mtu_names_the_switch():
    recorded = tables.recorded("lossless-wire/small-mtu")
    outcome = judge(recorded)
    assert not outcome.passed and [t.mtu for t in outcome.too_small] == [1500], outcome.reason
    leaf = outcome.too_small[0].node
    assert tables.plan("lossless-wire/small-mtu").switch(leaf).lossless  # a BE leaf, named by the address that answered
    clean = dataclasses.replace(recorded.observation, frag_needed=())
    lost = [p for p in clean.paths if p.received < p.sent]
    assert lost and not judge(recorded, clean).passed  # the frames it could not forward stay lost


def test_the_recorded_dscp_rewrite_is_seen_on_rail0_only():
    recorded = tables.recorded("lossless-wire/dscp-rewritten")
    outcome = judge(recorded)
    assert not outcome.passed
    rewritten = {p.source.split(":")[1] for p in outcome.paths if 0 in p.dscps}
    untouched = {p.source.split(":")[1] for p in outcome.paths if p.dscps == (26,)}
    assert rewritten == {"rail0"} and untouched
    fixed = dataclasses.replace(recorded.observation, paths=tuple(
        dataclasses.replace(p, dscps=(26,)) for p in recorded.observation.paths))
    assert judge(recorded, fixed).passed  # the control: the same packets at DSCP 26 pass
