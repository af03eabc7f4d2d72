"""The declared loss-window objectives: validated with the field named, carried to a running lab."""
from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from harness.core.errors import TopologyError
from harness.core.model import (Acl, AclRule, Addressing, Bfd, Cabling, Cluster, Hardware, Lossless, Management, Objectives, Routing, Tenant, build,
                           cluster_from_dict, cluster_to_dict)
from topologies import BUILTINS


def base():
    return BUILTINS["ai-cluster"]()


def problem(objectives: Objectives, field: str, words: str) -> str:
    with pytest.raises(TopologyError) as info:
        build(replace(base(), objectives=objectives))
    found = [str(p) for p in info.value.problems if str(p).startswith(field + ":") and words in str(p)]
    assert found, [str(p) for p in info.value.problems]
    assert "hint:" in found[0]
    return found[0]


def test_defaults_build():
    assert build(base()).cluster.objectives == Objectives(hard_ms=50.0, remote_ms=250.0, gray_ms=1000.0, restore_ms=10.0)


def test_zero_objective():
    problem(Objectives(hard_ms=0), "objectives.hard_ms", "must be > 0")


def test_zero_remote_objective():
    problem(Objectives(remote_ms=0), "objectives.remote_ms", "must be > 0")


def test_negative_objective():
    problem(Objectives(restore_ms=-5), "objectives.restore_ms", "must be > 0")


def test_not_a_number():
    problem(Objectives(gray_ms="1s"), "objectives.gray_ms", "not a number")  # type: ignore[arg-type]


def test_infinite_objective():
    problem(Objectives(gray_ms=float("inf")), "objectives.gray_ms", "not a number")


def test_absurd_objective():
    problem(Objectives(gray_ms=120_000), "objectives.gray_ms", "over a minute")


def test_objectives_survive_the_state_file():
    declared = replace(base(), objectives=Objectives(hard_ms=20, gray_ms=400, restore_ms=5))
    again = cluster_from_dict(json.loads(json.dumps(cluster_to_dict(declared))))
    assert again.objectives == declared.objectives
    assert again == declared


def test_state_without_objectives_gets_the_defaults():
    data = cluster_to_dict(base())
    del data["objectives"]
    assert cluster_from_dict(data).objectives == Objectives()


def test_every_section_survives_the_state_file():
    # Each section set away from its default, so a section the loader forgets is caught.
    declared = replace(base(), routing=Routing(summarize_hosts=True), bfd=Bfd(interval_ms=150),
                       addressing=Addressing(be_asn=64700), mgmt=Management(ports=128),
                       objectives=Objectives(hard_ms=20), lossless=Lossless(roce_priority=4, roce_dscp=24),
                       tenants=(Tenant("solo", vni=7, members=("gpu0[1-2]", "role:storage"), vlan=7),),
                       acl=Acl(rules=(AclRule("deny", "role:gpu", "tenant:solo", "udp", "5000-5999"),),
                               default="deny"), hardware=Hardware(fe_spine="Arista-7060X6-64PE"),
                       cabling=Cabling(names=(("gpu01", "gpu-a01"),), source="plan.csv"))
    assert all(getattr(declared, f.name) != getattr(base(), f.name)
               for f in fields(Cluster) if f.name not in ("name", "gpu", "backend", "frontend", "cables"))
    assert cluster_from_dict(json.loads(json.dumps(cluster_to_dict(declared)))) == declared
