"""<lab>.clabernetes.yaml: the clab file wrapped as a clabernetes `Topology`, with its bound
files as ConfigMaps, for Kubernetes (`fablab render TOPOLOGY --clabernetes -o DIR`).

What clabernetes does with a topology decides the shape (srl-labs/clabernetes @ 1cc0cbe):
- each node becomes a Deployment whose privileged launcher pod runs containerlab for that
  node alone, with its own copy of the mgmt network: nodes do not reach each other's mgmt
  addresses (no shared OOB plane);
- each link becomes a VXLAN tunnel between two pods, made by `containerlab tools vxlan
  create --link <node>-<interface>`, which names the device `vx-<node>-<interface>`; Linux
  allows 15 characters, and a longer name is silently left on a random one. So a node whose
  tunnels would not fit is renamed in the Topology (`beg1r0`, else `n<index>`), its plan name
  kept as the label `fablab.node`;
- the tunnels' MTU is the pod network's less 50 (VXLAN over IPv4), and a link's own `mtu:`
  is dropped: RoCE-size frames (9100) need a pod network MTU of at least 9150;
- binds are not rewritten: a file mounted from a ConfigMap at the bind's relative path in the
  launcher's /clabernetes (where the topology file is) is what containerlab then binds.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from harness.core.errors import RenderError
from harness.core.plan import Plan
from harness.render.containerlab import (HOST_IMAGE, SONIC_IMAGE, clab_links, clab_yaml, host_binds,
                                         switch_binds)
from harness.render.templates import render_template

IFNAMSIZ = 15  # a Linux interface name's characters (16 with the NUL)
TUNNEL = "vx-{node}-{iface}"  # containerlab's VXLAN device for clabernetes' link <node>-<iface>
POD_MTU = 9150  # the largest planned frame (9100) plus VXLAN over IPv4 (50)
API_VERSION = "clabernetes.containerlab.dev/v1alpha1"


def interfaces(plan: Plan) -> dict[str, list[str]]:
    """node -> its interfaces that are link endpoints (each becomes a tunnel)."""
    out: dict[str, list[str]] = {name: [] for name in clab_nodes(plan)}
    for a, b in clab_links(plan):
        for end in (a, b):
            node, iface = end.split(":")
            out[node].append(iface)
    return out


def cluster_names(plan: Plan) -> dict[str, str]:
    """The plan's node name -> its name in the Topology: itself where every tunnel name fits
    Linux's 15 characters, else without dashes, else n<index>; unique, a DNS label."""
    ifaces = interfaces(plan)
    taken = set(ifaces)

    def fits(name: str, node: str) -> bool:
        return all(len(TUNNEL.format(node=name, iface=i)) <= IFNAMSIZ for i in ifaces[node])

    out = {}
    for index, node in enumerate(ifaces):
        if fits(node, node):
            out[node] = node
            continue
        squeezed = node.replace("-", "")
        name = squeezed if fits(squeezed, node) and squeezed not in taken else f"n{index}"
        while name in taken:
            name += "x"
        if not fits(name, node):
            raise RenderError(f"{node}: no name fits its VXLAN tunnels in clabernetes (vx-<node>-<interface>, at most "
                              f"{IFNAMSIZ} characters; its longest interface is {max(ifaces[node], key=len)})")
        taken.add(name)
        out[node] = name
    return out


def clab_nodes(plan: Plan) -> list[str]:
    """The nodes of the clab file: switches and hosts (the mgmt plane is containerlab's network)."""
    return [sw.name for sw in plan.switches] + [h.name for h in plan.hosts]


def yaml_text(text: str, indent: int) -> str:
    """A string as a YAML scalar: a literal block where that keeps it byte for byte, else a
    JSON string (JSON's double-quoted strings are YAML's too)."""
    lines = text.split("\n")
    literal = (text.endswith("\n") and not text.endswith("\n\n") and not text.startswith((" ", "\n"))
               and all(line.isprintable() for line in lines))
    if not literal:
        return json.dumps(text)
    pad = " " * indent
    return "|\n" + "\n".join(pad + line if line else "" for line in lines[:-1])


@dataclass(frozen=True)
class Mount:
    node: str  # the node's name in the Topology
    path: str  # the bind source, relative to the topology file (and so to /clabernetes)
    configmap: str
    key: str
    mode: str  # read | execute


def clabernetes_yaml(plan: Plan, lab: str, files: dict[str, str], sonic_image: str = SONIC_IMAGE,
                     host_image: str = HOST_IMAGE) -> str:
    names = cluster_names(plan)
    definition = clab_yaml(plan, lab, sonic_image, host_image, names=names, hwsku_binds=False)
    binds = {sw.name: switch_binds(sw) for sw in plan.switches} | {h.name: host_binds(h) for h in plan.hosts}
    configmaps, mounts = [], []
    for node, pairs in binds.items():
        if not pairs:
            continue
        configmap = f"{lab}-{names[node]}-files"
        data = []
        for source, _target in pairs:
            key = source.rsplit("/", 1)[1]
            data.append((key, yaml_text(files[source], 4)))
            mounts.append(Mount(names[node], source, configmap, key, "execute" if key.endswith(".sh") else "read"))
        configmaps.append((configmap, data))
    renamed = {plan_name: name for plan_name, name in names.items() if name != plan_name}
    return render_template("clabernetes.yaml.j2", lab=lab, api_version=API_VERSION, pod_mtu=POD_MTU,
                           definition=yaml_text(definition, 6), configmaps=configmaps, mounts=mounts,
                           renamed=renamed)
