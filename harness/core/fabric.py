"""The fabric a declaration builds (`harness.core.model.build`): every node and every cable,
frozen. What the user writes is in harness.core.declarations."""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.declarations import Cluster, NicRole, Plane, Role


@dataclass(frozen=True)
class Node:
    name: str
    role: Role
    group: int | None = None  # BE group of a GPU node or rail leaf, numbered across pods
    pod: int | None = None  # BE pod of a GPU node, rail leaf or spine (5-stage fabrics only)
    rails: tuple[int, ...] = ()  # the rails a rail leaf carries (one, or `Backend.rails_per_leaf`)

    @property
    def is_switch(self) -> bool:
        return self.role.is_switch


@dataclass(frozen=True)
class Link:
    """One cable. `a` is the lower end (host or leaf), `b` the upper (leaf, spine, OOB).

    A port of None is a switch data port that the plan numbers.
    """

    a: str
    b: str
    plane: Plane
    speed: int
    a_port: str | None = None
    b_port: str | None = None
    rail: int | None = None
    declared: bool = False  # came from Cluster.cables, not from a builder
    nic: NicRole | None = None  # what the host end's NIC is for (a host's links only)


@dataclass(frozen=True)
class Fabric:
    """A validated cluster: every node and link. Frozen; build it with `build()`."""

    cluster: Cluster
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]

    @property
    def name(self) -> str:
        return self.cluster.name

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def nodes_with(self, *roles: Role) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.role in roles)

    def links_in(self, plane: Plane) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.plane is plane)

    @property
    def switches(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_switch)

    @property
    def hosts(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if not n.is_switch)
