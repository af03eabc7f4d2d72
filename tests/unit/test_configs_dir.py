"""`fablab up --configs DIR`: the engineer's configs read and checked before anything boots,
and how they take the place of fablab's render (what a runtime writes)."""
from __future__ import annotations

import json

import pytest

from harness.core.errors import InputError
from harness.render import artifacts, write_artifacts
from harness.render.configs import load_configs, with_configs


@pytest.fixture()
def rendered(ai_plan, tmp_path):
    out = tmp_path / "r"
    write_artifacts(artifacts(ai_plan), out)
    return out


def test_every_switch_is_read(ai_plan, rendered):
    configs = load_configs(ai_plan, rendered)
    assert set(configs.frr) == set(configs.config_db) == {s.name for s in ai_plan.switches}
    assert configs.label.startswith(f"{rendered} (sha256 ")


def test_the_digest_follows_the_files(ai_plan, rendered):
    before = load_configs(ai_plan, rendered).digest
    path = rendered / "configs" / "be-g1-r0" / "frr.conf"
    path.write_text(path.read_text() + "! a comment\n")
    assert load_configs(ai_plan, rendered).digest != before


def test_a_missing_frr_conf_is_refused_naming_the_switches(ai_plan, rendered):
    (rendered / "configs" / "be-s1" / "frr.conf").unlink()
    (rendered / "configs" / "fe-l2" / "frr.conf").unlink()
    with pytest.raises(InputError, match=r"no frr.conf for 2 of 14 switches \(be-s1, fe-l2\)"):
        load_configs(ai_plan, rendered)


def test_config_db_is_optional_but_must_be_json(ai_plan, rendered):
    (rendered / "configs" / "be-s1" / "config_db.json").unlink()
    assert "be-s1" not in load_configs(ai_plan, rendered).config_db
    (rendered / "configs" / "be-s2" / "config_db.json").write_text("{not json")
    with pytest.raises(InputError, match="be-s2/config_db.json:1: not JSON"):
        load_configs(ai_plan, rendered)


def test_not_a_directory(ai_plan, tmp_path):
    with pytest.raises(InputError, match="not a directory"):
        load_configs(ai_plan, tmp_path / "none")


def test_their_configs_replace_fablabs_but_keep_the_labs_mgmt(ai_plan, rendered):
    path = rendered / "configs" / "be-g1-r0" / "config_db.json"
    db = json.loads(path.read_text())
    db["PORT"]["Ethernet0"]["mtu"] = "1500"
    db["MGMT_INTERFACE"] = {"eth0|10.99.0.5/24": {"gwaddr": "10.99.0.1"}}
    path.write_text(json.dumps(db))
    (rendered / "configs" / "be-g1-r0" / "frr.conf").write_text("hostname theirs\n")
    ours = artifacts(ai_plan)
    files = with_configs(ours, load_configs(ai_plan, rendered))
    mixed = json.loads(files["configs/be-g1-r0/config_db.json"])
    assert mixed["PORT"]["Ethernet0"]["mtu"] == "1500"
    assert mixed["MGMT_INTERFACE"] == json.loads(ours["configs/be-g1-r0/config_db.json"])["MGMT_INTERFACE"]
    assert files["configs/be-g1-r0/frr.conf"] == "hostname theirs\n"
    assert files["cabling.csv"] == ours["cabling.csv"]
