"""`fablab up --configs DIR`: what is said of an engineer's configs before anything boots. FRR
itself reads every frr.conf (what it refuses is said at file:line); the plan takes the configs'
numbering; each session that cannot come up on the planned fabric, and each config_db.json
setting the netns runtime does not act on, is named."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.markup import escape

from harness.cli.console import err, out
from harness.core.kinds import RuntimeName
from harness.render.configs import numbered_by, refused_at


def before_boot(plan, configs, args: argparse.Namespace):
    """(the plan in the configs' numbering, the sessions that will not come up, the config_db.json
    settings not applied)."""
    _frr_accepts(configs, args)
    plan = _their_numbering(plan, configs, args)
    return plan, _sessions_down(plan, configs, args), _not_applied(plan, configs, args)


def _their_numbering(plan, configs, args: argparse.Namespace):
    """The plan in the configs' own numbering (ASNs, loopbacks, port addresses), said when it is not fablab's."""
    theirs = numbered_by(plan, configs)
    if theirs is not plan and not args.json:
        out.print(f"numbering: the ASNs, loopbacks and port addresses of {args.configs}'s configs (not fablab's "
                  "allocation): the lab runs them and the checks judge in them", soft_wrap=True)
    return theirs


# What the netns lab takes from an engineer's config_db.json: the addresses, loopbacks and ASNs (through
# the plan, _their_numbering) and the lossless tables (its data plane acts on them as an ASIC would).
_APPLIED = ("PFC", "PFC watchdog", "WRED/ECN", "QoS maps", "DSCP->TC", "buffers")


def _not_applied(plan, configs, args: argparse.Namespace) -> list[str]:
    """Each way the configs' config_db.json differs from the plan that the netns runtime does not
    act on (MTU, admin status, ACLs, VXLAN, ...): the lab runs the plan's there, and says so.
    SONiC-VS (clab) loads the file itself."""
    if args.runtime != RuntimeName.NETNS or not configs.config_db:
        return []
    from harness.core.meaning.configdb import diff_config_db
    from harness.render import switch_configs

    ours = switch_configs(plan)
    found = []
    for name, text in sorted(configs.config_db.items()):
        for d in diff_config_db(name, json.loads(ours[f"configs/{name}/config_db.json"]), text,
                                f"{args.configs}/configs/{name}/config_db.json"):
            if d.behaviour not in _APPLIED:
                found.append(f"{d.switch} {d.subject}: {d.behaviour} {d.found or 'none'} (the lab runs "
                             f"{d.expected or 'none'}) [{d.source}]")
    if found and not args.json:
        out.print(f"[yellow]config_db.json: {len(found)} settings the netns runtime does not apply from your file "
                  f"(it runs the plan's; `fablab diff` names them; --runtime clab loads the file whole):[/yellow]",
                  soft_wrap=True)
        for line in found[:10]:
            out.print(f"  - {escape(line)}", soft_wrap=True)
        if len(found) > 10:
            out.print(f"  ... and {len(found) - 10} more (--json: config_db_not_applied)")
    return found


def _frr_accepts(configs, args: argparse.Namespace) -> None:
    """FRR itself reads every frr.conf of --configs before anything boots (vtysh --dryrun): an
    InputError (exit 2) naming file:line and FRR's message for each line it refuses. The netns
    runtime needs vtysh on this machine anyway; on clab the switches' FRR checks each file as
    init.sh loads it, so a machine without vtysh is said, not an error."""
    from harness.core.errors import PrerequisiteError
    from harness.plumbing.frr_check import check_configs

    try:
        check_configs(configs, args.configs)
    except PrerequisiteError as e:
        if args.runtime == RuntimeName.NETNS:
            raise
        err.print(f"note: {escape(str(e))}; on clab each switch's FRR checks its frr.conf as init.sh loads it",
                  soft_wrap=True)


def _sessions_down(plan, configs, args: argparse.Namespace) -> list[str]:
    """Each session of the engineer's configs that cannot come up on the planned fabric (a port
    the plan does not cable, a remote-as that does not fit, a VRF without the port), and each
    planned session nobody configured: said before the boot, not left to read as "BGP Idle".
    Judged on what FRR itself makes of each file (harness.plumbing.frr_reader); the lines its
    daemons refuse are warnings, as FRR boots the file without them."""
    from harness.core.meaning.compare import sessions_down
    from harness.plumbing.frr_reader import readings

    read = readings(configs.frr)
    if read.note:
        err.print(f"note: {escape(read.note)}", soft_wrap=True)
    for name, refusal in read.refused():
        where = refused_at(Path(args.configs) / "configs" / name, refusal)
        err.print(f"[yellow]warning:[/yellow] FRR refuses {escape(where)}", soft_wrap=True)
    found = []
    for name in sorted(configs.frr):
        found += [f"{d.switch} {d.subject}: {d.found}" for d in
                  sessions_down(plan, name, read.files[name], f"{args.configs}/configs/{name}/frr.conf")]
    for line in found[:20]:
        err.print(f"[yellow]will not come up:[/yellow] {escape(line)}", soft_wrap=True)
    if len(found) > 20:
        err.print(f"... and {len(found) - 20} more sessions that will not come up (`fablab diff "
                  f"{args.topology} {args.configs}` lists them all)", soft_wrap=True)
    return found
