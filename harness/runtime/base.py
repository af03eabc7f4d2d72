"""What a runtime is: a small interface, separate from node kinds and from the Lab API."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pyroute2 import IPRoute

from harness.plan import Plan
from harness.runtime.state import LabState


class Progress(Protocol):
    def __call__(self, phase: str, detail: str) -> None: ...


def quiet(phase: str, detail: str) -> None:
    """A Progress that says nothing."""


@dataclass(frozen=True)
class TeardownReport:
    lab: str
    processes: int
    namespaces: int
    seconds: float


class Runtime(Protocol):
    name: str

    def up(self, plan: Plan, lab: str, topology: str, progress: Progress = quiet, replace: bool = False,
           timeout: float = 120.0, detached: bool = False) -> LabState: ...

    def down(self, lab: str) -> TeardownReport: ...

    def leftovers(self, everything: bool = False) -> list[str]: ...

    def exec_argv(self, lab: str, node: str, argv: list[str]) -> list[str]: ...

    def namespace(self, lab: str, node: str) -> str: ...

    def netlink(self, lab: str, node: str) -> IPRoute: ...

    def set_link(self, lab: str, node: str, ifname: str, up: bool) -> None: ...

    def set_gray(self, lab: str, node: str, ifname: str, on: bool) -> None: ...

    def vtysh_json(self, lab: str, node: str, *commands: str) -> list[object]: ...
