"""One difference in behaviour between what the declaration expects and what a config does."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Difference:
    switch: str
    file: str  # frr.conf | config_db.json | the switch's directory
    subject: str  # the session, port or object: "session Ethernet0", "Ethernet0 queue 3", "ACL on Ethernet4"
    behaviour: str  # what differs: "accepts", "advertises", "comes up", "multipath", "BFD", "PFC", "MTU", ...
    expected: str  # what the declaration expects ("" when it expects nothing here)
    found: str  # what the config does ("" when it does nothing here)
    lines: tuple[int, ...] = ()  # the lines of `file` behind it (1-based), where they can be named

    def __post_init__(self) -> None:
        # 0: a line FRR wrote itself in its own form of the file (frr_origin), which no line names
        object.__setattr__(self, "lines", tuple(n for n in self.lines if n))

    @property
    def source(self) -> str:
        """file:line(s), as an editor takes them."""
        if not self.lines:
            return self.file
        return f"{self.file}:{','.join(map(str, sorted(set(self.lines))))}"

    def __str__(self) -> str:
        return (f"{self.switch} {self.subject} [{self.behaviour}]: expected {self.expected or '(nothing)'}, "
                f"found {self.found or '(nothing)'} ({self.source})")
