"""An engineer's own switch configs, to boot instead of fablab's render (`fablab up TOPOLOGY
--configs DIR`): read and checked against the plan before anything is booted.

DIR is laid out as `fablab render` writes it: configs/<switch>/frr.conf for every switch of
the plan, and configs/<switch>/config_db.json where the engineer has one. Everything the
checks expect still comes from the declaration; these only replace what the switches run."""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path

from harness.core.errors import InputError
from harness.core.inputfile import FileFault, read_text
from harness.core.meaning.configdb import parse
from harness.core.switchconfigs import SwitchConfigs
from harness.core.plan import Plan


def read_configs(directory: str | Path, names: Iterable[str], *, frr: bool = True) -> SwitchConfigs:
    """The one reader of a configs directory (`diff`, `up --configs`, `show`/`import --configs`,
    `audit`): for each node named, configs/<node>/frr.conf (or, without one, the frr.conf its
    config_db.json's BGP tables make: frr_conf_of) and configs/<node>/config_db.json, each read
    through harness/core/inputfile.py and checked (JSON, SONiC's shape and YANG) as it is read.
    A node with neither file is left out: the caller says what that means. `frr=False`: the
    config_db.json files alone (the lossless audit's)."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{directory}: not a directory; give one laid out as `fablab render` writes it "
                         "(configs/<switch>/frr.conf, and config_db.json where you have one)")
    frrs: dict[str, str] = {}
    dbs: dict[str, str] = {}
    h = hashlib.sha256()
    for name in names:
        where = root / "configs" / name
        db = where / "config_db.json"
        if db.is_file():
            text = read_text(db)
            parse(text, str(db))
            dbs[name] = text
            h.update(f"{name}/config_db.json\0".encode() + text.encode())
        found = frr_conf_of(where) if frr else None
        if found is not None:
            frrs[name] = found
            h.update(f"{name}/frr.conf\0".encode() + found.encode())
    return SwitchConfigs(str(directory), frrs, dbs, h.hexdigest())


def load_configs(plan: Plan, directory: str | Path) -> SwitchConfigs:
    """What `up --configs DIR` boots: every switch's configs, none missing."""
    if not Path(directory).is_dir():
        raise InputError(f"--configs {directory}: not a directory; give one laid out as `fablab render` writes it "
                         "(configs/<switch>/frr.conf, and config_db.json where you have one)")
    configs = read_configs(directory, [sw.name for sw in plan.switches])
    missing = [sw.name for sw in plan.switches if sw.name not in configs.frr]
    if missing:
        raise InputError(f"--configs {directory}: no frr.conf for {len(missing)} of {len(plan.switches)} switches "
                         f"({', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''}); every switch of the "
                         f"declaration needs configs/<switch>/frr.conf, or a config_db.json holding its BGP as SONiC's "
                         f"unified mode does (BGP_GLOBALS, BGP_NEIGHBOR, ...); `fablab render TOPOLOGY -o DIR` lays one out")
    return configs


def frr_conf_of(where: Path) -> str | None:
    """A switch directory's frr.conf: the file, or, without one, what SONiC's frrcfgd starts FRR
    with from the BGP tables of its config_db.json (unified mode: harness.core.meaning.unified);
    None when it has neither."""
    from harness.core.meaning.unified import frr_conf, holds_bgp

    path = where / "frr.conf"
    if path.is_file():
        text = read_text(path)
        if (bare := re.search("\r(?!\n)", text)) is not None:  # CRLF is read as LF; a CR alone ends no line
            raise FileFault(f"{path}:{text.count(chr(10), 0, bare.start()) + 1}", "a carriage return that ends no line "
                            "(classic Mac line ends): FRR reads lines that end in a line feed; save it with Unix (LF) "
                            "or Windows (CRLF) line ends")
        return text
    db = where / "config_db.json"
    if not db.is_file():
        return None
    tables = parse(read_text(db), str(db))
    return frr_conf(tables) if holds_bgp(tables) else None


def refused_at(where: Path, refusal) -> str:
    """Where a line FRR refused is, said as an editor takes it: `DIR/configs/SW/frr.conf:LINE: ...`,
    or, for BGP held in config_db.json, the statement frrcfgd writes of its tables (no line)."""
    from dataclasses import replace

    if (where / "frr.conf").is_file():
        return f"{where}/frr.conf:{refusal}"
    return f"{where}/config_db.json (its BGP tables, as frrcfgd writes them): {replace(refusal, line=None)}"


# What a switch's config_db keeps of fablab's render under the engineer's: the management
# port and address, which the runtime chooses per lab.
_MGMT_TABLES = ("MGMT_PORT", "MGMT_INTERFACE")


def with_configs(files: dict[str, str], configs: SwitchConfigs) -> dict[str, str]:
    """A render's files with the engineer's configs in place of fablab's (config_db.json keeps
    the lab's management tables)."""
    out = dict(files)
    for sw, text in configs.frr.items():
        out[f"configs/{sw}/frr.conf"] = text
    for sw, text in configs.config_db.items():
        theirs, ours = json.loads(text), json.loads(files[f"configs/{sw}/config_db.json"])
        theirs.update({t: ours[t] for t in _MGMT_TABLES if t in ours})
        out[f"configs/{sw}/config_db.json"] = json.dumps(theirs, indent=4, sort_keys=True) + "\n"
    return out


def numbered_by(plan: Plan, configs: SwitchConfigs) -> Plan:
    """The plan in the numbering the engineer's configs carry (harness.core.confignumbering):
    their ASNs, loopbacks and port addresses, audited before anything boots (a TopologyError
    names device and port). Configs that number the fabric as fablab would (most of each kind of
    number as fablab allocates it) leave the plan as it is."""
    from dataclasses import replace

    from harness.core.confignumbering import numbering_of
    from harness.core.model import build
    from harness.core.plan import make_plan

    found = _theirs_where_they_differ(plan, numbering_of(dict(configs.frr), dict(configs.config_db)))
    cluster = plan.fabric.cluster
    addressing = found.laid_over(cluster.addressing)
    if addressing == cluster.addressing:
        return plan
    if found.allowas_in and not cluster.routing.allowas_in:  # leaves that share an ASN, as their configs allow
        cluster = replace(cluster, routing=replace(cluster.routing, allowas_in=found.allowas_in))
    return make_plan(build(replace(cluster, addressing=addressing)))


def _theirs_where_they_differ(plan: Plan, found):
    """Each kind of number (ASNs, loopbacks, port addresses) the configs give is theirs when most of
    them differ from fablab's allocation (a numbering of their own); where most agree, fablab's is
    kept and the few that differ are differences the diff and the checks name (a slip, e.g. one
    leaf's ASN), not a numbering."""
    from dataclasses import replace

    ours_asn = {s.name: s.asn for s in plan.switches}
    ours_lo = {s.name: str(s.loopback) for s in plan.switches}
    ours_port = {(s.name, p.name): str(p.address) for s in plan.switches for p in s.ports if p.address is not None}

    def own(items, ours, key) -> bool:
        same = sum(1 for x in items if ours.get(key(x)) == x[-1])
        return bool(items) and same * 2 < len(items)

    return replace(found, asns=found.asns if own(found.asns, ours_asn, lambda x: x[0]) else (),
                   loopbacks=found.loopbacks if own(found.loopbacks, ours_lo, lambda x: x[0]) else (),
                   ports=found.ports if own(found.ports, ours_port, lambda x: (x[0], x[1])) else ())
