"""Where a fault goes: typed targets, each written one way on the command line (`--on`) and in
a lab's faults.json, parsed back from that text and printed the same way.

A part left out (a port, a NIC) is for the fault to pick where it can: a new cable's ends take
each switch's first free port, an existing cable between two nodes is the first one planned,
a host's leak goes through its FE NIC. The text says what was given, the fault's description
what it picked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.core.errors import InputError

__all__ = ["KINDS", "Cable", "Nic", "Port", "Ports", "Route", "Switch", "Switches", "Target", "parse"]


def _refuse(text: str, kind: type[Target], what: str) -> InputError:
    return InputError(f"--on {text!r}: {what}; {kind.__name__.lower()} is written {kind.form}, "
                      f"e.g. {kind.example} (cabling.csv lists the nodes and ports)")


def _name(text: str, kind: type[Target], field: str, part: str) -> str:
    """One node or port name: not empty, none of the separators the forms use."""
    if not part:
        raise _refuse(text, kind, f"the {field} is empty")
    bad = [c for c in ",:@ " if c in part]
    if bad:
        raise _refuse(text, kind, f"the {field} {part!r} holds {bad[0]!r}")
    return part


def _end(text: str, kind: type[Target], part: str, port_field: str = "port") -> tuple[str, str]:
    node, sep, port = part.partition(":")
    node = _name(text, kind, "node", node)
    return node, (_name(text, kind, port_field, port) if sep else "")


class Target:
    """A fault's target. `form` is how `--on` writes it, `example` one such text."""

    form: ClassVar[str]
    example: ClassVar[str]

    @classmethod
    def parse(cls, text: str) -> Target:
        raise NotImplementedError

    def nodes(self) -> tuple[str, ...]:
        """The nodes it names, in order (where a learner looks first)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Switch(Target):
    name: str
    form: ClassVar[str] = "SWITCH"
    example: ClassVar[str] = "be-g1-r0"

    @classmethod
    def parse(cls, text: str) -> Switch:
        return cls(_name(text, cls, "switch", text.strip()))

    def nodes(self) -> tuple[str, ...]:
        return (self.name,)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Switches(Target):
    """One or more switches (a dual-homed host routes like one and may be named too)."""

    names: tuple[str, ...]
    form: ClassVar[str] = "SWITCH[,SWITCH...]"
    example: ClassVar[str] = "be-g1-r0,be-s1"

    def __post_init__(self) -> None:
        if not self.names:
            raise InputError("a fault's switches: name at least one (SWITCH[,SWITCH...])")

    @classmethod
    def parse(cls, text: str) -> Switches:
        parts = text.strip().split(",")
        names = tuple(_name(text, cls, f"switch #{i + 1}", p.strip()) for i, p in enumerate(parts))
        if len(set(names)) != len(names):
            raise _refuse(text, cls, "a switch is named twice")
        return cls(names)

    def nodes(self) -> tuple[str, ...]:
        return self.names

    def __str__(self) -> str:
        return ",".join(self.names)


@dataclass(frozen=True)
class Port(Target):
    """A node's port; without one (`NODE`), the fault picks the port."""

    node: str
    port: str = ""
    form: ClassVar[str] = "NODE:PORT"
    example: ClassVar[str] = "be-g1-r0:Ethernet0"

    @classmethod
    def parse(cls, text: str) -> Port:
        return cls(*_end(text, cls, text.strip()))

    def nodes(self) -> tuple[str, ...]:
        return (self.node,)

    def __str__(self) -> str:
        return f"{self.node}:{self.port}" if self.port else self.node


@dataclass(frozen=True)
class Ports(Target):
    """One or more ports, of one node or several."""

    ports: tuple[Port, ...]
    form: ClassVar[str] = "NODE:PORT[,NODE:PORT...]"
    example: ClassVar[str] = "gpu01:rail0,gpu01:rail1"

    def __post_init__(self) -> None:
        if not self.ports:
            raise InputError("a fault's ports: name at least one (NODE:PORT[,NODE:PORT...])")

    @classmethod
    def parse(cls, text: str) -> Ports:
        ports = []
        for i, part in enumerate(text.strip().split(",")):
            node, port = _end(text, cls, part.strip(), f"port of end #{i + 1}")
            if not port:
                raise _refuse(text, cls, f"end #{i + 1} ({part.strip()!r}) has no port")
            ports.append(Port(node, port))
        if len(set(ports)) != len(ports):
            raise _refuse(text, cls, "a port is named twice")
        return cls(tuple(ports))

    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.node for p in self.ports))

    def __str__(self) -> str:
        return ",".join(map(str, self.ports))


@dataclass(frozen=True)
class Cable(Target):
    """A cable between two ends; an end without its port: the fault picks it (the first cable
    planned between the two nodes, or a new cable's first free port)."""

    a: Port
    b: Port
    form: ClassVar[str] = "NODE[:PORT],NODE[:PORT]"
    example: ClassVar[str] = "be-g1-r0:Ethernet0,be-s1:Ethernet0"

    @classmethod
    def parse(cls, text: str) -> Cable:
        parts = text.strip().split(",")
        if len(parts) != 2:
            raise _refuse(text, cls, f"a cable has two ends, separated by a comma; got {len(parts)}")
        a, b = (Port(*_end(text, cls, p.strip(), f"port of end #{i + 1}")) for i, p in enumerate(parts))
        if a.node == b.node:
            raise _refuse(text, cls, f"both ends are on {a.node}")
        return cls(a, b)

    def nodes(self) -> tuple[str, ...]:
        return self.a.node, self.b.node

    def __str__(self) -> str:
        return f"{self.a},{self.b}"


@dataclass(frozen=True)
class Nic(Target):
    """A host's NIC; without one (`HOST`), the fault picks it (for a route leak, the FE NIC)."""

    host: str
    nic: str = ""
    form: ClassVar[str] = "HOST[:NIC]"
    example: ClassVar[str] = "gpu01:fe0"

    @classmethod
    def parse(cls, text: str) -> Nic:
        return cls(*_end(text, cls, text.strip(), "NIC"))

    def nodes(self) -> tuple[str, ...]:
        return (self.host,)

    def __str__(self) -> str:
        return f"{self.host}:{self.nic}" if self.nic else self.host


@dataclass(frozen=True)
class Route(Target):
    """A node's route to a prefix, at one of its next hops' ports."""

    node: str
    port: str
    prefix: str
    form: ClassVar[str] = "NODE:PORT@PREFIX"
    example: ClassVar[str] = "be-g1-r0:Ethernet0@10.0.0.8/31"

    @classmethod
    def parse(cls, text: str) -> Route:
        where, sep, prefix = text.strip().partition("@")
        if not sep:
            raise _refuse(text, cls, "no @PREFIX (the route's destination)")
        node, port = _end(text, cls, where)
        if not port:
            raise _refuse(text, cls, "no port (the next hop's, NODE:PORT)")
        return cls(node, port, _name(text, cls, "prefix", prefix))

    def nodes(self) -> tuple[str, ...]:
        return (self.node,)

    def __str__(self) -> str:
        return f"{self.node}:{self.port}@{self.prefix}"


KINDS: tuple[type[Target], ...] = (Switch, Switches, Port, Ports, Cable, Nic, Route)


def parse(kind: type[Target], text: str) -> Target:
    """`text` (an `--on`) as a target of `kind`; InputError naming what is wrong and the form."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"--on is empty; {kind.__name__.lower()} is written {kind.form}, e.g. {kind.example}")
    return kind.parse(text)
