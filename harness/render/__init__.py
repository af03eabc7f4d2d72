"""Every artifact of a plan, written to a directory all at once or not at all."""
from __future__ import annotations

import os
import shutil
import tempfile
from ipaddress import IPv4Network
from pathlib import Path

from harness.errors import RenderError
from harness.mgmtnet import lab_mgmt_network, with_mgmt_network
from harness.plan import Plan
from harness.render.cabling import cabling_csv
from harness.render.containerlab import HOST_IMAGE, SONIC_IMAGE, clab_yaml
from harness.render.diagram import topology_svg
from harness.render.frr import frr_conf
from harness.render.lossless import CONTRACT_FILE, contract_of
from harness.render.sonic import config_db_json
from harness.render.sonic_init import init_sh

__all__ = ["artifacts", "write_artifacts", "clab_yaml", "frr_conf", "config_db_json", "init_sh",
           "cabling_csv", "topology_svg"]


def artifacts(plan: Plan, lab: str | None = None, mgmt_network: IPv4Network | None = None, *,
              sonic_image: str = SONIC_IMAGE, host_image: str = HOST_IMAGE) -> dict[str, str]:
    """Relative path -> text, for every artifact. Pure: nothing is written.

    The mgmt addresses (clab file and config_db.json alike) are moved into `mgmt_network`,
    by default the lab's own subnet (harness.mgmtnet), so that labs can run side by side.
    """
    lab = lab or plan.name
    if mgmt_network is None:
        data = {IPv4Network(plan.fabric.cluster.addressing.be), IPv4Network(plan.fabric.cluster.addressing.fe)}
        mgmt_network = lab_mgmt_network(lab, len(plan.fabric.nodes), taken=data)
    plan = with_mgmt_network(plan, mgmt_network)
    out = {
        f"{lab}.clab.yml": clab_yaml(plan, lab, sonic_image, host_image),
        "cabling.csv": cabling_csv(plan),
        "topology.svg": topology_svg(plan),
        CONTRACT_FILE: contract_of(plan).to_json(),
    }
    for sw in plan.switches:
        out[f"configs/{sw.name}/config_db.json"] = config_db_json(plan, sw)
        out[f"configs/{sw.name}/frr.conf"] = frr_conf(plan, sw)
        out[f"configs/{sw.name}/init.sh"] = init_sh(plan, sw)
    return out


def write_artifacts(files: dict[str, str], outdir: Path) -> list[Path]:
    """Write into a sibling temp dir, then move each file into place, so that a failure
    leaves no half-written output behind."""
    outdir = Path(outdir)
    parent = outdir.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=parent))
    except OSError as e:
        raise RenderError(f"cannot write under {parent}: {e.strerror}") from e
    written: list[Path] = []
    try:
        for rel, text in files.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        outdir.mkdir(parents=True, exist_ok=True)
        for rel in files:
            dest = outdir / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, dest)
            written.append(dest)
    except OSError as e:
        raise RenderError(f"writing {outdir}: {e}") from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written
