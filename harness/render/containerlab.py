"""<lab>.clab.yml: sonic-vs switches, linux hosts, every data-plane cable as a link.

The mgmt plane is not cabled here: containerlab's management network is the OOB plane,
and each node gets its planned mgmt address as `mgmt-ipv4`.
"""
from __future__ import annotations

from harness.hwsku import DEFAULT_HWSKU
from harness.model import Plane
from harness.plan import HostPlan, Plan
from harness.render.templates import render_template

SONIC_IMAGE = "docker-sonic-vs:latest"
HOST_IMAGE = "ghcr.io/srl-labs/network-multitool:latest"


def host_exec(host: HostPlan) -> list[str]:
    """Addressing and routes of a linux host: each rail's traffic leaves through its own NIC."""
    lines: list[str] = []
    for nic in host.nics:
        if nic.gateway is None:
            continue
        lines.append(f"ip link set {nic.name} mtu {nic.mtu} up")
        lines.append(f"ip address add {nic.address} dev {nic.name}")
        lines += [f"ip route add {route} via {nic.gateway} dev {nic.name}" for route in nic.routes]
    return lines


def clab_links(plan: Plan) -> list[tuple[str, str]]:
    clab_name = {(sw.name, p.name): p.clab for sw in plan.switches for p in sw.ports}
    links = []
    for row in plan.cables:
        if row.plane is Plane.MGMT:
            continue
        a = clab_name.get((row.a_node, row.a_port), row.a_port)
        b = clab_name.get((row.b_node, row.b_port), row.b_port)
        links.append((f"{row.a_node}:{a}", f"{row.b_node}:{b}"))
    return links


def clab_yaml(plan: Plan, lab: str | None = None, sonic_image: str = SONIC_IMAGE,
              host_image: str = HOST_IMAGE) -> str:
    return render_template(
        "clab.yml.j2", lab=lab or plan.name, plan=plan, sonic_image=sonic_image, host_image=host_image,
        host_exec={h.name: host_exec(h) for h in plan.hosts}, links=clab_links(plan), default_hwsku=DEFAULT_HWSKU)
