"""lossless.json: the lossless contract a render declares, beside its configs, so that
`fablab audit DIR` holds the configs to the declaration and not to themselves."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from harness.errors import HarnessError
from harness.model import Lossless

CONTRACT_FILE = "lossless.json"


@dataclass(frozen=True)
class Contract:
    """What the audit holds the configs to: the declaration, and which switches are on the BE."""

    lossless: Lossless
    be_switches: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps({"lossless": asdict(self.lossless), "be_switches": list(self.be_switches)}, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> Contract:
        try:
            data = json.loads(text)
            return cls(Lossless(**data["lossless"]), tuple(data["be_switches"]))
        except (ValueError, KeyError, TypeError) as e:
            raise HarnessError(f"{source}: not a lossless contract ({e}); render the topology again") from e


def contract_of(plan) -> Contract:
    return Contract(plan.fabric.cluster.lossless, tuple(s.name for s in plan.switches if s.lossless))
