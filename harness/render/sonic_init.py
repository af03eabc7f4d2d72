"""configs/<switch>/init.sh: brings one docker-sonic-vs container up with fablab's configs.

containerlab's sonic-vs kind starts supervisord (which runs the image's start.sh) and asks
for bgpd without waiting for anything, then runs the node's `exec` lines. The image reads
only /etc/sonic/config_db.json, moves a file onto that path (so it cannot be a bind mount),
has no bfdd in supervisord on released branches, and never reads frr.conf. So fablab binds
its files under CONTAINER_DIR and this script, started from `exec` in the background,
puts each in place in order, waiting for what each step needs.

The protocol with the runtime is the file STATUS_FILE inside the container, one line:
`running <step>` while working, then exactly `ok` or `failed <step>: <detail>`.
"""
from __future__ import annotations

from harness.core.plan import Plan, SwitchPlan
from harness.render.templates import render_template

CONTAINER_DIR = "/etc/fablab"
STATUS_FILE = "/tmp/fablab-init.status"
LOG_FILE = "/tmp/fablab-init.log"
# The steps, in the order the script runs them; a runtime can show how far a switch got.
STEPS = ("sysctls", "config_db", "ports", "zebra", "bgpd", "bfdd", "frr.conf")
# Booting SONiC's swss, syncd and FRR for a dozen switches on a small VM takes minutes,
# so each step gets generous time of its own; polls are one second apart.
STEP_TIMEOUT_S = 300
POLL_S = 1


def init_sh(plan: Plan, sw: SwitchPlan) -> str:
    return render_template(
        "sonic-init.sh.j2", plan=plan, sw=sw, ports=[p.name for p in sw.ports], container_dir=CONTAINER_DIR,
        status_file=STATUS_FILE, step_timeout_s=STEP_TIMEOUT_S, poll_s=POLL_S)


def start_command() -> str:
    """The `exec` line: the script runs detached, so containerlab's exec returns at once.

    containerlab runs an exec line without a shell and waits until its output streams
    close, so every stream is redirected and the script gets its own session.
    """
    return (f'bash -c "setsid bash {CONTAINER_DIR}/init.sh >{LOG_FILE} 2>&1 </dev/null &"')
