"""The HwSKUs a render carries beside it: for every switch whose HwSKU fablab does not ship (one
read from a SONiC folder), the port map it was planned with, so that the render read back
(`fablab show out/cabling.csv`, `out/<lab>.clab.yml`) is the same plan on any machine, and
docker-sonic-vs runs the same ports.

- `hwskus/<platform>/<HwSKU>/port_config.ini`: every row in file order (name lanes alias index
  speed); where the HwSKU has cages with breakout modes, its `hwsku.json` beside it and the
  cages in `hwskus/<platform>/platform.json`, as SONiC lays out a device folder
  (harness/core/sonicdevice.py reads it back). The plan files name the folder by that path,
  relative to them: the devices files' HwSku column, the clab file's label `fablab.hwsku`.
- `configs/<switch>/hwsku/`: what docker-sonic-vs reads of its HwSKU (port_config.ini, the lane
  map it would have generated, its vs sai.profile), bound over the image's
  `/usr/share/sonic/device/x86_64-kvm_x86_64-r0/<HwSKU>/`: the image has only the HwSKUs of
  the device tree it was built from. One copy per switch, read-write, as the image's start.sh
  rewrites lanemap.ini and port_config.ini there for the interfaces the container has.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from harness.core.hwsku import HwSku, shipped
from harness.core.plan import Plan
from harness.core.portmap import running

FOLDER = "hwskus"
VS_PLATFORM = "x86_64-kvm_x86_64-r0"  # docker-sonic-vs's PLATFORM: where start.sh looks for $HWSKU
VS_DEVICE = f"/usr/share/sonic/device/{VS_PLATFORM}"
# src/sonic-device-data/src/sai.vs_profile: what sonic-device-data copies into every HwSKU folder
# of the vs platform (its Makefile), the lane map among it
VS_SAI_PROFILE = ("SAI_WARM_BOOT_READ_FILE=/var/cache/sai_warmboot.bin\n"
                  "SAI_WARM_BOOT_WRITE_FILE=/var/cache/sai_warmboot.bin\n"
                  "SAI_VS_SWITCH_TYPE=SAI_VS_SWITCH_TYPE_BCM56850\n"
                  "SAI_VS_HOSTIF_USE_TAP_DEVICE=true\n"
                  "SAI_VS_INTERFACE_LANE_MAP_FILE=/usr/share/sonic/hwsku/lanemap.ini\n"
                  "SAI_VS_CORE_PORT_INDEX_MAP_FILE=/usr/share/sonic/hwsku/coreportindexmap.ini\n")


def folder_skus(plan: Plan) -> dict[str, HwSku]:
    """switch -> its HwSKU, for each switch whose HwSKU is not the catalogue's of its name."""
    cluster = plan.fabric.cluster
    out = {}
    for sw in plan.switches:
        sku = running(cluster.hardware, sw.role, sw.hwsku, cluster.cabling.hwsku_of(sw.name))
        if not shipped(sku):
            out[sw.name] = sku
    return out


def references(plan: Plan) -> dict[str, str]:
    """switch -> what the plan files write in its HwSKU column: the catalogue's name, or the
    path of its folder in the render."""
    own = folder_skus(plan)
    placed = layout(own.values())
    return {sw.name: placed[_key(own[sw.name])] if sw.name in own else sw.hwsku for sw in plan.switches}


def _key(sku: HwSku) -> tuple[str, str]:
    return sku.name, sku.source


def _platform(sku: HwSku) -> str:
    return Path(sku.source).parent.name if sku.source else VS_PLATFORM


def layout(skus: Iterable[HwSku]) -> dict[tuple[str, str], str]:
    """(name, source) -> `hwskus/<platform>/<HwSKU>` of each HwSKU: its folder keeps its name (the
    HwSKU's); its platform folder is its source's, another where two would not share one (the
    same folder name, or a cage the two platform.json files say differently)."""
    out: dict[tuple[str, str], str] = {}
    cages: dict[str, dict[str, dict]] = {}
    for sku in skus:
        if _key(sku) in out:
            continue
        mine, n = _platform_entries(sku), 1
        while True:
            platform = _platform(sku) if n == 1 else f"{_platform(sku)}-{n}"
            folder = f"{FOLDER}/{platform}/{sku.name}"
            held = cages.get(platform, {})
            if folder not in out.values() and all(held.get(k, v) == v for k, v in mine.items()):
                break
            n += 1
        cages.setdefault(platform, {}).update(mine)
        out[_key(sku)] = folder
    return out


def hwsku_files(plan: Plan) -> dict[str, str]:
    """Relative path -> text of the render's `hwskus/` (nothing where every HwSKU is shipped)."""
    skus = {_key(s): s for s in folder_skus(plan).values()}
    placed = layout(skus.values())
    out: dict[str, str] = {}
    platforms: dict[str, dict[str, dict]] = {}
    for key, folder in placed.items():
        sku = skus[key]
        out[f"{folder}/port_config.ini"] = port_config_ini(sku)
        if sku.cages:
            out[f"{folder}/hwsku.json"] = _json({"interfaces": {c.parent: {"default_brkout_mode": c.default_mode}
                                                                for c in sku.cages}})
            platforms.setdefault(folder.rsplit("/", 1)[0], {}).update(_platform_entries(sku))
    for platform, entries in platforms.items():
        # in port order, as SONiC's are: a HwSKU's cages read back in the order it had them
        ordered = dict(sorted(entries.items(), key=lambda kv: int(kv[0].removeprefix("Ethernet"))))
        out[f"{platform}/platform.json"] = _json({"interfaces": ordered})
    return out


def _platform_entries(sku: HwSku) -> dict[str, dict]:
    """platform.json's entry of each of its cages: lanes, front-panel index, breakout modes."""
    return {c.parent: {"index": ",".join([str(c.index)] * len(c.lanes)), "lanes": ",".join(map(str, c.lanes)),
                       "breakout_modes": {m.text: list(m.aliases) for m in c.modes}} for c in sku.cages}


def _json(doc: dict) -> str:
    return json.dumps(doc, indent=4) + "\n"


def port_config_ini(sku: HwSku) -> str:
    """Its rows in file order, every column fablab and docker-sonic-vs read, the header last of
    the comments (SONiC takes the columns from it)."""
    lines = [f"# {sku.name}: the ports fablab planned with, in file order", "# name lanes alias index speed"]
    lines += [f"{r.name:<15} {r.lanes_text:<31} {r.alias:<15} {r.index:<5} {r.speed}" for r in sku.rows]
    return "\n".join(lines) + "\n"


def vs_files(sku: HwSku) -> dict[str, str]:
    """The files of its folder in docker-sonic-vs: port_config.ini, the lane map sonic-device-data
    generates (eth<i>: the lanes of the i-th row), sai.profile; and each `.orig`, which start.sh
    would otherwise copy there at boot (so the render's manifest lists every file it holds)."""
    ini = port_config_ini(sku)
    lanemap = "".join(f"eth{i}:{r.lanes_text}\n" for i, r in enumerate(sku.rows, start=1))
    return {"port_config.ini": ini, "port_config.ini.orig": ini, "lanemap.ini": lanemap, "lanemap.ini.orig": lanemap,
            "sai.profile": VS_SAI_PROFILE}


def switch_hwsku_files(plan: Plan) -> dict[str, str]:
    """Relative path -> text of each switch's `configs/<switch>/hwsku/` (a HwSKU fablab does not ship)."""
    return {f"configs/{name}/hwsku/{file}": text for name, sku in folder_skus(plan).items()
            for file, text in vs_files(sku).items()}


def switch_hwsku_bind(sw_name: str, sku: HwSku) -> tuple[str, str]:
    """(source relative to the clab file, path in the container) of a switch's HwSKU folder."""
    return f"configs/{sw_name}/hwsku", f"{VS_DEVICE}/{sku.name}"
