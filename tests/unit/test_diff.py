"""`fablab diff TOPOLOGY DIR`: configs compared with fablab's render by meaning. Its own
render and a rewrite that says the same in other words have no difference; each way of
breaking a config is one difference, named by area."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest


TOPOLOGY = "ai-cluster"
LEAF = "be-g1-r0"


@pytest.fixture()
def rendered(tmp_path):
    out = tmp_path / "r"
    subprocess.run([sys.executable, "-m", "harness.cli", "render", TOPOLOGY, "-o", str(out)], check=True,
                   capture_output=True)
    return out


def _diff(directory) -> tuple[int, dict]:
    run = subprocess.run([sys.executable, "-m", "harness.cli", "diff", TOPOLOGY, str(directory), "--json"],
                         capture_output=True, text=True, timeout=120)
    return run.returncode, json.loads(run.stdout) if run.stdout.strip() else {"stderr": run.stderr}


def _edit(rendered, switch, fn, name="frr.conf"):
    path = rendered / "configs" / switch / name
    path.write_text(fn(path.read_text()))


def test_its_own_render_has_no_difference(rendered):
    code, doc = _diff(rendered)
    assert (code, doc["differences"], doc["switches"]) == (0, [], 14)


def _rewritten(text: str) -> str:
    """The same config as an engineer's automation might write it: no indentation, no comments,
    blocks in another order, and the peer-group's settings written on every neighbour."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("!")]
    neighbours = [m.group(1) for ln in lines if (m := re.match(r"neighbor (\S+) interface peer-group fabric", ln))]
    out, waiting, declared = [], [], False
    for ln in lines:
        m = re.match(r"neighbor fabric (.+)$", ln)
        if m and m.group(1) != "peer-group":
            # after the neighbours exist: FRR refuses a setting of a neighbour it does not have yet
            (out if declared else waiting).extend(f"neighbor {n} {m.group(1)}" for n in neighbours)
        else:
            out.append(ln)
        if ln == f"neighbor {neighbours[-1]} interface peer-group fabric":
            out += waiting
            declared = True
    prefix = [ln for ln in out if ln.startswith("ip prefix-list")]
    renumbered = [re.sub(r" seq (\d+) ", lambda m: f" seq {int(m.group(1)) * 5} ", ln) for ln in prefix]
    return "\n".join(renumbered[::-1] + [ln for ln in out if not ln.startswith("ip prefix-list")]) + "\n"


def test_the_same_meaning_in_other_words_has_no_difference(rendered):
    _edit(rendered, LEAF, _rewritten)
    code, doc = _diff(rendered)
    assert (code, doc["differences"]) == (0, [])


def test_a_leaf_with_one_path(rendered):
    _edit(rendered, LEAF, lambda t: t.replace("  maximum-paths 64\n", "  maximum-paths 1\n"))
    code, doc = _diff(rendered)
    assert code == 3
    (d,) = doc["differences"]
    assert (d["switch"], d["behaviour"]) == (LEAF, "multipath")
    assert d["expected"].startswith("2 of its 2 paths") and d["found"].startswith("1 of its 2 paths")
    assert d["source"].endswith(f"configs/{LEAF}/frr.conf:{d['lines'][0]}")


def test_a_filter_that_lets_fe_prefixes_into_the_be(rendered):
    _edit(rendered, LEAF, lambda t: t.replace("ip prefix-list BE-PLANE seq 10 permit",
                                              "ip prefix-list BE-PLANE seq 5 permit 10.16.0.0/16 le 32\n"
                                              "ip prefix-list BE-PLANE seq 10 permit"))
    code, doc = _diff(rendered)
    (d,) = doc["differences"]
    assert code == 3 and d["behaviour"] == "accepts" and "FE 10.16." in d["expected"] and d["found"] == "accepts them"


def test_bfd_off_on_one_leaf(rendered):
    _edit(rendered, LEAF, lambda t: t.replace(" neighbor fabric bfd\n", "").replace(" neighbor fabric bfd profile",
                                                                                   " !"))
    code, doc = _diff(rendered)
    assert code == 3 and {d["behaviour"] for d in doc["differences"]} == {"BFD"}
    assert all(d["switch"] == LEAF and d["found"] == "off" for d in doc["differences"])


def test_a_wrong_asn(rendered):
    _edit(rendered, LEAF, lambda t: re.sub(r"router bgp \d+", "router bgp 65535", t))
    code, doc = _diff(rendered)
    assert code == 3
    assert {d["behaviour"] for d in doc["differences"]} == {"local AS"}


def test_a_qos_map_and_an_mtu_in_config_db(rendered):
    def edit(text):
        db = json.loads(text)
        db["DSCP_TO_TC_MAP"]["AI_ROCE"]["26"] = "0"
        db["PORT"]["Ethernet0"]["mtu"] = "1500"
        return json.dumps(db)
    _edit(rendered, LEAF, edit, "config_db.json")
    code, doc = _diff(rendered)
    assert code == 3 and all(d["switch"] == LEAF for d in doc["differences"])
    assert any(d["behaviour"] == "MTU" and "Ethernet0" in d["subject"] for d in doc["differences"])
    assert any("DSCP" in d["behaviour"] for d in doc["differences"])


def test_a_missing_config_is_a_difference(rendered):
    (rendered / "configs" / LEAF / "frr.conf").unlink()
    code, doc = _diff(rendered)
    (d,) = doc["differences"]
    assert code == 3 and d["behaviour"] == "configs" and d["switch"] == LEAF


def test_a_switch_the_declaration_does_not_have_is_named(rendered):
    (rendered / "configs" / "be-g9-r0").mkdir()
    code, doc = _diff(rendered)
    (d,) = doc["differences"]
    assert code == 3 and d["switch"] == "be-g9-r0" and "no switch be-g9-r0 in ai-cluster" in d["expected"]


def test_a_directory_that_is_not_one_is_bad_input(tmp_path):
    code, doc = _diff(tmp_path / "nothing")
    assert code == 2 and "neither a directory nor a running lab" in doc["error"]


def test_a_port_the_plan_does_not_cable_is_named_once(rendered):
    def edit(text):
        db = json.loads(text)
        db["PORT"]["Ethernet240"] = dict(db["PORT"]["Ethernet256"], lanes="241,242,243,244")
        db["PORT_QOS_MAP"]["Ethernet240"] = db["PORT_QOS_MAP"]["Ethernet256"]
        return json.dumps(db, indent=1)
    _edit(rendered, LEAF, edit, "config_db.json")
    code, doc = _diff(rendered)
    (d,) = doc["differences"]
    assert code == 3 and (d["switch"], d["subject"], d["behaviour"]) == (LEAF, "Ethernet240", "cabling")
    assert d["expected"].startswith(f"Ethernet240 is not cabled on {LEAF}; its cabled ports are Ethernet0, Ethernet8")
    assert d["lines"]
