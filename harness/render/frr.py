"""frr.conf per routed switch: eBGP unnumbered on fabric ports, multipath-relax, BFD profile."""
from __future__ import annotations

from harness.plan import Plan, SwitchPlan
from harness.render.templates import render_template

MAX_PATHS = 64


def frr_conf(plan: Plan, sw: SwitchPlan) -> str:
    return render_template(
        "frr.conf.j2", lab=plan.name, sw=sw, bfd=plan.fabric.cluster.bfd,
        plane_list=f"{sw.plane.value.upper()}-PLANE", max_paths=MAX_PATHS)
