"""Declarations with faults, drawn by hypothesis: wrong types (bools, strings, floats, None,
huge and negative integers, containers), unknown kinds, sections of the wrong class, typo'd
field names (as keyword arguments and in a topology file), bad cables (self-loops, unknown
nodes, NICs and ports, a NIC or port cabled twice, odd speeds), bad tenants and ACL rules.
Each either plans or is a TopologyError, quickly: never another exception, never a hang.
And the real CLI on a few faulty files: exit 2, the field named, no traceback."""
from __future__ import annotations

import tempfile
import textwrap
import time
from dataclasses import fields, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.catalog import load_fabric
from harness.core.declcheck import show
from harness.cli.main import main
from harness.core.errors import TopologyError
from harness.core.model import (Acl, AclRule, Backend, Cable, Cluster, Frontend, GpuNodes, Management, Tenant,
                           build)
from harness.core.plan import make_plan
from test_properties import clusters
from topologies import BUILTINS

EACH_S = 2.0  # the most one example may take, declaring, building and planning

SECTIONS = {f.name: type(getattr(Cluster("x"), f.name)) for f in fields(Cluster)
            if f.name not in ("name", "cables", "tenants")}
HUGE = (10 ** 9, 2 ** 70, -2 ** 70, 10 ** 5000, -10 ** 5000)

bad_values = st.one_of(
    st.booleans(), st.none(), st.text(max_size=12), st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-2 ** 80, 2 ** 80), st.sampled_from(HUGE), st.integers(-3, 70),
    st.lists(st.integers(0, 9), max_size=3), st.tuples(st.text(max_size=4)),
    st.dictionaries(st.text(max_size=4), st.integers(0, 9), max_size=2),
    st.sampled_from([GpuNodes(), Backend(), Frontend(), Management(), Acl()]),
    st.sampled_from(["rail-only", "rail-optimized", "rail_optimized", "l3", "l5", "st0", "permit", "drop"]),
    st.sampled_from([1, 10, 100, 300, 400, 800, 1600, 9100, 4096]),
    st.sampled_from([16, 128, 255, 256, 384, 511, 512, 513]),  # large, near the limits
)

NODES = ("gpu01", "gpu02", "be-s1", "be-s3", "be-g1-r0", "be-g2-r1", "be-r0", "fe-l1", "fe-l2", "fe-s1",
         "stor1", "gw1", "oob1", "nowhere")
PORTS = (None, None, "rail0", "rail3", "rail9", "fe0", "st0", "mgmt0", "eth0", "Ethernet0", "Ethernet8",
         "Ethernet2", "Ethernet4000", "x")
cables = st.builds(Cable, st.sampled_from(NODES), st.sampled_from(NODES), st.sampled_from(PORTS),
                   st.sampled_from(PORTS), st.sampled_from([None, None, 100, 400, 800, 7, 0, -400]), st.booleans())

tenants = st.builds(
    Tenant,
    st.sampled_from(["a", "train", "infer", "Bad Name", "x" * 20]),
    st.sampled_from([1, 10100, 10200, 0, 2 ** 24, 70000]),
    st.one_of(st.lists(st.sampled_from(["gpu01", "gpu0[1-4]", "role:gpu", "role:storage", "role:dpu", "gw1",
                                        "nobody"]), max_size=3).map(tuple), st.just("gpu01")),
    vlan=st.sampled_from([None, 1, 100, 300, 4095]),
    subnet=st.sampled_from([None, "10.32.9.0/24", "10.0.0.0/24", "bad", "10.32.0.0/30"]),
    nic=st.sampled_from(["fe0", "st0", "eth1"]))

acl_rules = st.builds(
    AclRule, st.sampled_from(["permit", "deny", "reject"]),
    src=st.sampled_from(["any", "role:gpu", "tenant:train", "tenant:nope", "gw1", "gpu99"]),
    dst=st.sampled_from(["any", "role:storage", "role:gateway"]),
    protocol=st.sampled_from(["any", "tcp", "udp", "icmp", "tpc"]),
    dst_ports=st.sampled_from(["", "22", "90-80", "x", "0", "8000-8100"]))


def typo(name: str, draw) -> str:
    """A misspelling of a field name that is no field name."""
    i = draw(st.integers(0, len(name) - 1))
    how = draw(st.sampled_from(["drop", "double", "swap", "plural", "case"]))
    if how == "drop":
        return name[:i] + name[i + 1:] or "x"
    if how == "double":
        return name[:i] + name[i] + name[i:]
    if how == "swap" and i + 1 < len(name):
        return name[:i] + name[i + 1] + name[i] + name[i + 2:]
    if how == "case":
        return name.upper()
    return name + "s" if not name.endswith("s") else name[:-1]


@st.composite
def faulty(draw):
    """(a function that declares the cluster, what was done to it): declaring may itself fail."""
    cluster = draw(st.one_of(st.sampled_from([BUILTINS["ai-cluster"](), BUILTINS["rail-only"]()]), clusters()))
    done = []
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["field", "field", "field", "section", "name", "cables", "tenants", "acl",
                                     "typo"]))
        if what == "field":
            section = draw(st.sampled_from(sorted(SECTIONS)))
            obj = getattr(cluster, section)
            if type(obj) is not SECTIONS[section]:
                continue
            name = draw(st.sampled_from([f.name for f in fields(obj)]))
            value = draw(bad_values)
            cluster = replace(cluster, **{section: replace(obj, **{name: value})})
            done.append(f"{section}.{name}={show(value)}")
        elif what == "section":
            section = draw(st.sampled_from(sorted(SECTIONS)))
            value = draw(bad_values)
            cluster = replace(cluster, **{section: value})
            done.append(f"{section}={show(value)}")
        elif what == "name":
            cluster = replace(cluster, name=draw(bad_values))
            done.append("name")
        elif what == "cables":
            cs = draw(st.lists(cables, max_size=4))
            if cs and draw(st.booleans()):
                cs.append(cs[0])  # the same NIC or port cabled twice
            cluster = replace(cluster, cables=tuple(cs) if draw(st.booleans()) else cs)
            done.append(f"cables={cs!r:.200}")
        elif what == "tenants":
            ts = draw(st.lists(tenants, max_size=3))
            cluster = replace(cluster, tenants=tuple(ts))
            done.append(f"tenants={ts!r:.200}")
        elif what == "acl":
            rules = draw(st.lists(acl_rules, max_size=3))
            cluster = replace(cluster, acl=Acl(tuple(rules), draw(st.sampled_from(["permit", "deny", "drop"]))))
            done.append(f"acl={rules!r:.200}")
        else:
            cls = draw(st.sampled_from([*SECTIONS.values(), Cable, Tenant, AclRule, Cluster]))
            wrong = typo(draw(st.sampled_from([f.name for f in fields(cls)])), draw)
            if wrong in {f.name for f in fields(cls)}:
                continue
            done.append(f"{cls.__name__}({wrong}=...)")
            return (lambda: cls(**{wrong: 1})), done
    return (lambda: cluster), done


def plan_or_topology_error(declare) -> float:
    start = time.monotonic()
    try:
        make_plan(build(declare()))
    except TopologyError as e:
        assert e.problems and all(p.field for p in e.problems)
        str(e)  # printable, whatever the values
    return time.monotonic() - start


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(faulty())
def test_a_faulty_declaration_plans_or_is_a_topology_error_quickly(case):
    declare, done = case
    elapsed = plan_or_topology_error(declare)
    assert elapsed < EACH_S, (done, elapsed)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_typo_in_a_topology_file_is_a_topology_error(data):
    cls = data.draw(st.sampled_from([GpuNodes, Backend, Frontend, Management]))
    field = data.draw(st.sampled_from([f.name for f in fields(cls)]))
    wrong = typo(field, data.draw)
    if wrong in {f.name for f in fields(cls)}:
        return
    section = next(name for name, c in SECTIONS.items() if c is cls)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "typo.py"
        path.write_text("from harness.core.model import *\n"
                        f"cluster = Cluster(name='t', {section}={cls.__name__}({wrong}=1))\n")
        with pytest.raises(TopologyError) as info:
            load_fabric(str(path))
    assert info.value.problems[0].field == f"{section}.{wrong}"  # the field as written, where it was written
    assert f"{path}, line 2" in str(info.value)


# --------------------------------------------------------------------------- the real CLI

FILES = {
    "rail.py": ("Backend(rail=4)", "backend.rail: Backend has no field 'rail'", "did you mean 'rails'?"),
    "count.py": ("GpuNodes(count='8')", "gpu.count: '8' is a str, not an integer"),
    "kind.py": ("Backend(kind='rail_optimized')", "backend.kind: unknown backend kind",
                "did you mean 'rail-optimized'?"),
    "spines.py": ("Frontend(spines=2**70)", "frontend.spines: 1.18e+21 is over the 128 fablab can plan"),
    "section.py": ("Frontend()", "backend: Frontend(...) is a Frontend, not a Backend"),
    "missing.py": ("Tenant('a', members=('gpu01',))", "tenants[0].vni: Tenant() needs 'vni'"),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_cli_on_a_faulty_file_exits_2_naming_the_field(name, tmp_path, capsys):
    value, *words = FILES[name]
    section = "tenants" if value.startswith("Tenant") else \
        {"Backend": "backend", "GpuNodes": "gpu", "Frontend": "frontend"}[value.split("(")[0]]
    if name == "section.py":
        section = "backend"
    arg = f"({value},)" if section == "tenants" else value
    path = tmp_path / name
    path.write_text(textwrap.dedent(f"""
        from harness.core.model import *
        cluster = Cluster(name="mine", {section}={arg})
    """))
    start = time.monotonic()
    code = main(["show", str(path)])
    err = capsys.readouterr().err
    assert time.monotonic() - start < EACH_S
    assert code == 2, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err
