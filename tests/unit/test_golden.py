"""Golden files of ai-cluster's artifacts. Regenerate on purpose with:
FABLAB_UPDATE_GOLDEN=1 pytest tests/unit/test_golden.py (then read the diff before committing)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.render import artifacts

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "ai-cluster"
GOLDEN_FILES = ["ai-cluster.clab.yml", "cabling.csv", "topology.svg",
                "configs/be-g1-r0/frr.conf", "configs/be-g1-r0/config_db.json", "configs/be-g1-r0/init.sh",
                "configs/be-s1/frr.conf", "configs/be-s1/config_db.json",
                "configs/fe-l1/frr.conf", "configs/fe-l1/config_db.json"]


@pytest.fixture(scope="module")
def rendered(ai_plan):
    return artifacts(ai_plan)


@pytest.mark.parametrize("rel", GOLDEN_FILES)
def test_matches_golden(rendered, rel):
    path = GOLDEN / rel
    if os.environ.get("FABLAB_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered[rel])
    assert path.exists(), f"missing golden {path}: run with FABLAB_UPDATE_GOLDEN=1"
    assert rendered[rel] == path.read_text(), f"{rel} differs from its golden file"


def test_every_switch_has_its_configs_and_init_script(rendered, ai_plan):
    for sw in ai_plan.switches:
        assert f"configs/{sw.name}/frr.conf" in rendered
        assert f"configs/{sw.name}/config_db.json" in rendered
        assert f"configs/{sw.name}/init.sh" in rendered


def test_rendering_is_deterministic(ai_plan, rendered):
    assert artifacts(ai_plan) == rendered
