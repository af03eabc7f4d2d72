"""`fablab up --configs` on netns says what of the engineer's config_db.json it does not apply
(the lab runs the plan's there): an MTU and an admin status changed are named with file:line; a
PFC change is not (the lossless data plane acts on it); the render itself has nothing to name."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.catalog import load_fabric
from harness.cli.upconfigs import _not_applied
from harness.core.plan import make_plan
from harness.render import artifacts
from harness.render.configs import load_configs

PLAN = Path(__file__).resolve().parents[2] / "docs" / "examples" / "plan" / "sonic_lab_links.csv"


def _configs(tmp_path: Path, edit=None) -> Path:
    plan = make_plan(load_fabric(str(PLAN)))
    for rel, text in artifacts(plan).items():
        if rel.startswith("configs/") and rel.endswith(("frr.conf", "config_db.json")):
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if edit and rel == "configs/rtsw-g1-r0/config_db.json":
                doc = json.loads(text)
                edit(doc)
                text = json.dumps(doc, indent=2)
            path.write_text(text)
    return tmp_path


def _said(directory: Path, runtime: str = "netns") -> list[str]:
    plan = make_plan(load_fabric(str(PLAN)))
    args = argparse.Namespace(runtime=runtime, configs=str(directory), json=True)
    return _not_applied(plan, load_configs(plan, directory), args)


def test_what_the_netns_lab_does_not_apply_is_named(tmp_path):
    assert _said(_configs(tmp_path / "as-is")) == []  # the control: fablab's own render

    def edit(doc):
        doc["PORT"]["Ethernet0"].update(mtu="9000", admin_status="down")
        doc["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "4"

    said = _said(_configs(tmp_path / "edited", edit))
    assert any("rtsw-g1-r0 Ethernet0: MTU 9000 (the lab runs 9100)" in s and "config_db.json" in s for s in said), said
    assert any("admin_status down" in s for s in said) and not any("PFC" in s for s in said), said
    assert _said(_configs(tmp_path / "clab", edit), runtime="clab") == []  # SONiC-VS loads the file itself
