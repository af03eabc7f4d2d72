"""<lab>.clab.yml: sonic-vs switches, linux hosts, every data-plane cable as a link.

The mgmt plane is not cabled here: containerlab's management network is the OOB plane,
and each node gets its planned mgmt address as `mgmt-ipv4`. Each switch gets its
config_db.json, frr.conf and init.sh bound read-only under /etc/fablab and starts init.sh
from `exec` (see harness/render/sonic_init.py for why and for the status protocol). A switch
whose HwSKU fablab does not ship gets its folder bound where docker-sonic-vs looks for it, and
the label `fablab.hwsku` naming the folder of the render that holds its port map
(harness/render/hwskus.py).
"""
from __future__ import annotations

from harness.core.hwsku import DEFAULT_HWSKU
from harness.core.images import HOST_IMAGE, ROUTED_HOST_IMAGE, SONIC_IMAGE
from harness.core.model import Plane
from harness.core.plan import HostPlan, Plan, SwitchPlan
from harness.render.hwskus import folder_skus, references, switch_hwsku_bind
from harness.render.sonic_init import CONTAINER_DIR, STATUS_FILE, start_command, switch_sysctls
from harness.render.templates import render_template

SWITCH_FILES = ("config_db.json", "frr.conf", "init.sh")
ROUTED_HOST_FILES = ("frr.conf", "daemons")


def routed_host_daemons() -> str:
    """/etc/frr/daemons of a dual-homed host: zebra, bgpd and bfdd (BFD to both leaves)."""
    return ("# rendered by fablab: the daemons of a dual-homed FE host\n"
            "zebra=yes\nbgpd=yes\nbfdd=yes\nvtysh_enable=yes\n"
            'zebra_options="  -A 127.0.0.1 -s 90000000"\nbgpd_options="   -A 127.0.0.1"\n'
            'bfdd_options="   -A 127.0.0.1"\n')


def host_binds(host: HostPlan) -> list[tuple[str, str]]:
    return [(f"configs/{host.name}/{name}", f"/etc/frr/{name}") for name in ROUTED_HOST_FILES] if host.routed else []


def switch_env(sw: SwitchPlan) -> dict[str, str]:
    # docker-sonic-vs's Dockerfile sets ENV HWSKU to the default; another HwSKU is asked for by env.
    return {} if sw.hwsku == DEFAULT_HWSKU else {"HWSKU": sw.hwsku}


def vs_shared_interfaces(plan: Plan) -> list[str]:
    """Ports docker-sonic-vs cannot wire: it gives each row of the HwSKU's port_config.ini one
    interface (eth<i>) and bridges a PORT to the one owning its first lane, so ports broken out
    of one row (BREAKOUT_CFG) would share it. One line per switch that has them."""
    out = []
    for sw in plan.switches:
        shared: dict[str, list[str]] = {}
        for p in sw.ports:
            shared.setdefault(p.clab, []).append(p.name)
        clashes = [f"{', '.join(names)} on {eth}" for eth, names in shared.items() if len(names) > 1]
        if clashes:
            out.append(f"{sw.name} ({sw.hwsku}): {'; '.join(clashes)}")
    return out


def switch_binds(sw: SwitchPlan) -> list[tuple[str, str]]:
    """(source relative to the clab file, path in the container) for each file of a switch."""
    return [(f"configs/{sw.name}/{name}", f"{CONTAINER_DIR}/{name}") for name in SWITCH_FILES]


def host_exec(host: HostPlan) -> list[str]:
    """Addressing and routes of a linux host: each rail's traffic leaves through its own NIC;
    a tenant NIC is an address in its tenant's subnet (a VLAN interface when tagged)."""
    lines: list[str] = []
    if host.routed:  # its FE address, announced by its bgpd to both leaves
        lines.append(f"ip address add {host.loopback} dev lo")
    for nic in host.nics:
        if nic.tenant is not None:
            if nic.parent is not None:
                lines.append(f"ip link set {nic.parent} up")
                lines.append(f"ip link add link {nic.parent} name {nic.name} type vlan id {nic.vlan}")
            lines.append(f"ip link set {nic.name} mtu {nic.mtu} up")
            lines.append(f"ip address add {nic.address} dev {nic.name}")
            continue
        if nic.gateway is None:
            continue
        lines.append(f"ip link set {nic.name} mtu {nic.mtu} up")
        lines.append(f"ip address add {nic.address} dev {nic.name}")
        lines += [f"ip route add {route} via {nic.gateway} dev {nic.name}" for route in nic.routes]
    return lines


def clab_links(plan: Plan, names: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """Each data-plane cable as containerlab's two endpoints; `names`: a node's name in the
    clab file where it is not the plan's (clabernetes: harness/render/clabernetes.py)."""
    clab_name = {(sw.name, p.name): p.clab for sw in plan.switches for p in sw.ports}
    names = names or {}
    links = []
    for row in plan.cables:
        if row.plane is Plane.MGMT:
            continue
        a = clab_name.get((row.a_node, row.a_port), row.a_port)
        b = clab_name.get((row.b_node, row.b_port), row.b_port)
        links.append((f"{names.get(row.a_node, row.a_node)}:{a}", f"{names.get(row.b_node, row.b_node)}:{b}"))
    return links


def clab_yaml(plan: Plan, lab: str | None = None, sonic_image: str = SONIC_IMAGE,
              host_image: str = HOST_IMAGE, names: dict[str, str] | None = None, hwsku_binds: bool = True) -> str:
    """`hwsku_binds`: bind the folder of a HwSKU fablab does not ship (clabernetes mounts files
    read-only from ConfigMaps, and docker-sonic-vs rewrites that folder: there the image must
    hold the HwSKU)."""
    names = {n.name: (names or {}).get(n.name, n.name) for n in plan.fabric.nodes}
    own = folder_skus(plan)
    refs = references(plan)
    # a link's speed as its vars (containerlab keeps them for templates; fablab reads them back)
    speeds = [f"{row.speed}G" for row in plan.cables if row.plane is not Plane.MGMT]
    return render_template(
        "clab.yml.j2", lab=lab or plan.name, plan=plan, sonic_image=sonic_image, host_image=host_image, names=names,
        switch_env={sw.name: switch_env(sw) for sw in plan.switches},
        switch_binds={sw.name: switch_binds(sw) for sw in plan.switches},
        hwsku_folder={name: refs[name] for name in own},
        hwsku_bind={name: switch_hwsku_bind(name, sku) for name, sku in own.items()} if hwsku_binds else {},
        switch_sysctls={sw.name: switch_sysctls(sw) for sw in plan.switches},
        start_command=start_command(), status_file=STATUS_FILE,
        host_exec={h.name: host_exec(h) for h in plan.hosts}, links=list(zip(clab_links(plan, names), speeds)),
        routed_host_image=ROUTED_HOST_IMAGE, host_binds={h.name: host_binds(h) for h in plan.hosts})
