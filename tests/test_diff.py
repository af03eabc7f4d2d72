"""`fablab diff TOPOLOGY DIR`: configs compared with fablab's render by meaning. Its own
render and a rewrite that says the same in other words have no difference; each way of
breaking a config is one difference, named by area."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from harness.render.compare import diff_frr, frr_statements

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
    out = []
    for ln in lines:
        m = re.match(r"neighbor fabric (.+)$", ln)
        if m and m.group(1) != "peer-group":
            out += [f"neighbor {n} {m.group(1)}" for n in neighbours]
        else:
            out.append(ln)
    prefix = [ln for ln in out if ln.startswith("ip prefix-list")]
    renumbered = [re.sub(r" seq (\d+) ", lambda m: f" seq {int(m.group(1)) * 5} ", ln) for ln in prefix]
    return "\n".join(renumbered[::-1] + [ln for ln in out if not ln.startswith("ip prefix-list")]) + "\n"


def test_the_same_meaning_in_other_words_has_no_difference(rendered):
    original = (rendered / "configs" / LEAF / "frr.conf").read_text()
    assert diff_frr(LEAF, original, _rewritten(original)) == []
    assert frr_statements(original) == frr_statements(_rewritten(original))


def test_a_leaf_without_multipath(rendered):
    _edit(rendered, LEAF, lambda t: t.replace("  maximum-paths 64\n", ""))
    code, doc = _diff(rendered)
    assert code == 3
    (d,) = doc["differences"]
    assert (d["switch"], d["area"], d["fablab"], d["theirs"]) == (LEAF, "multipath", "maximum-paths 64", "")


def test_a_filter_that_lets_fe_prefixes_into_the_be(rendered):
    _edit(rendered, LEAF, lambda t: t.replace("ip prefix-list BE-PLANE seq 10 permit",
                                              "ip prefix-list BE-PLANE seq 5 permit 10.16.0.0/16 le 32\n"
                                              "ip prefix-list BE-PLANE seq 10 permit"))
    code, doc = _diff(rendered)
    (d,) = doc["differences"]
    assert code == 3 and d["area"] == "prefix lists" and "10.16.0.0/16 le 32" in d["theirs"]
    assert "10.16.0.0/16" not in d["fablab"]


def test_bfd_off_on_one_leaf(rendered):
    _edit(rendered, LEAF, lambda t: t.replace(" neighbor fabric bfd\n", "").replace(" neighbor fabric bfd profile",
                                                                                   " !"))
    code, doc = _diff(rendered)
    assert code == 3 and {d["area"] for d in doc["differences"]} == {"BFD"}
    assert all(d["switch"] == LEAF and d["theirs"] == "" for d in doc["differences"])


def test_a_wrong_asn_is_one_difference(rendered):
    _edit(rendered, LEAF, lambda t: re.sub(r"router bgp \d+", "router bgp 65535", t))
    code, doc = _diff(rendered)
    (d,) = doc["differences"]
    assert d["area"] == "BGP neighbours" and d["theirs"] == "asn 65535"


def test_a_qos_map_and_an_mtu_in_config_db(rendered):
    def edit(text):
        db = json.loads(text)
        db["DSCP_TO_TC_MAP"]["AI_ROCE"]["26"] = "0"
        db["PORT"]["Ethernet0"]["mtu"] = "1500"
        return json.dumps(db)
    _edit(rendered, LEAF, edit, "config_db.json")
    code, doc = _diff(rendered)
    got = {(d["area"], d["where"], d["fablab"], d["theirs"]) for d in doc["differences"]}
    assert code == 3 and got == {("QoS", "DSCP_TO_TC_MAP|AI_ROCE 26", "3", "0"),
                                 ("MTUs", "PORT|Ethernet0 mtu", "9100", "1500")}


def test_a_missing_config_is_a_difference(rendered):
    (rendered / "configs" / LEAF / "frr.conf").unlink()
    code, doc = _diff(rendered)
    (d,) = doc["differences"]
    assert code == 3 and d["area"] == "files" and d["switch"] == LEAF


def test_a_directory_that_is_not_one_is_bad_input(tmp_path):
    code, doc = _diff(tmp_path / "nothing")
    assert code == 2 and "is not a directory" in doc["error"]
