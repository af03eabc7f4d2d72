"""docs/designs.md shows what the code draws: each SVG is rendered again and compared."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.model import build
from harness.core.plan import make_plan
from harness.render.diagram import topology_svg
from topologies.dual_homed import dual_homed
from topologies.multi_rail import multi_rail
from topologies.pods import pods

DOCS = Path(__file__).resolve().parents[2] / "docs"
DESIGNS = {"multi-rail": multi_rail, "multi-rail-rail-only": lambda: multi_rail(name="multi-rail-ro", kind="rail-only"),
           "pods": pods, "dual-homed": dual_homed}


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_the_diagram_in_the_docs_is_the_current_render(name):
    drawn = topology_svg(make_plan(build(DESIGNS[name]())))
    assert (DOCS / "designs" / f"{name}.svg").read_text() == drawn, (
        f"docs/designs/{name}.svg is stale: write topology_svg() of it again")
    assert f"designs/{name}.svg" in (DOCS / "designs.md").read_text()
