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

from harness.core.budgets import init_step_s
from harness.core.emulation import ZEBRA_LINES
from harness.core.plan import Plan, SwitchPlan
from harness.render.templates import render_template

CONTAINER_DIR = "/etc/fablab"
MGMT_PORT = "eth0"  # containerlab's management network
STATUS_FILE = "/tmp/fablab-init.status"
LOG_FILE = "/tmp/fablab-init.log"
# The steps, in the order the script runs them; a runtime can show how far a switch got.
STEPS = ("sysctls", "config_db", "ports", "data ports", "mgmt", "flavour", "zebra", "mgmtd", "bgpd", "bfdd",
         "frr.conf")
# What the image's FRR may hold that fablab's frr.conf did not put there: bgpcfgd (master
# images since 2026-06) adds this route-map once Loopback0 is up, and it is removed.
BGPCFGD_ROUTE_MAPS = ("RM_SET_SRC", "RM_SET_SRC6")


def switch_sysctls(sw: SwitchPlan) -> dict[str, str]:
    """The node's `sysctls:` in the clab file, which containerlab sets on the container and
    init.sh checks. All namespaced (Docker accepts net.*), all what the netns runtime sets on a
    switch, so that failover behaves alike; SONiC itself sets ignore_routes_with_linkdown and
    accept_dad (files/image_config/sysctl/90-sonic.conf) and leaves rp_filter to the kernel."""
    return {
        # BGP unnumbered needs IPv6 link-local addresses; Docker turns IPv6 off on an IPv4-only network.
        "net.ipv6.conf.all.disable_ipv6": "0",
        "net.ipv6.conf.default.disable_ipv6": "0",
        # The kernel forwards (SONiC's 90-sonic.conf sets both; a new namespace has IPv6's off),
        # so ECMP follows its multipath hash.
        "net.ipv4.ip_forward": "1",
        "net.ipv6.conf.all.forwarding": "1",
        "net.ipv4.fib_multipath_hash_policy": str(sw.hash_policy),
        # A next hop whose carrier is gone is skipped at once, before zebra reacts.
        "net.ipv4.conf.all.ignore_routes_with_linkdown": "1",
        "net.ipv4.conf.default.ignore_routes_with_linkdown": "1",
        # Link-local addresses usable at once: BGP unnumbered need not wait for DAD.
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
        # A Debian host's loose rp_filter would be inherited; the netns runtime sets 0.
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.default.rp_filter": "0",
    }
# A rendered script's step timeout, where no runtime gives one (`fablab render`), is for the
# Vagrant VM's CPUs: every switch booting at once on them (harness.core.budgets).
REFERENCE_CPUS = 8
POLL_S = 1


def init_sh(plan: Plan, sw: SwitchPlan, step_timeout_s: float | None = None) -> str:
    step = step_timeout_s or init_step_s(len(plan.switches), REFERENCE_CPUS)
    return render_template(
        "sonic-init.sh.j2", plan=plan, sw=sw, ports=[p.name for p in sw.ports], data_ports=[p.clab for p in sw.ports],
        sysctls=switch_sysctls(sw), container_dir=CONTAINER_DIR, status_file=STATUS_FILE,
        step_timeout_s=round(step), poll_s=POLL_S, route_maps=BGPCFGD_ROUTE_MAPS, mgmt_port=MGMT_PORT,
        emulation_lines=ZEBRA_LINES)


def start_command() -> str:
    """The `exec` line: the script runs detached, so containerlab's exec returns at once.

    containerlab runs an exec line without a shell and waits until its output streams
    close, so every stream is redirected and the script gets its own session.
    """
    return (f'bash -c "setsid bash {CONTAINER_DIR}/init.sh >{LOG_FILE} 2>&1 </dev/null &"')
