"""The switch configs a lab boots when they are not fablab's render (`fablab up --configs DIR`):
what each switch runs, read by harness.render.configs.load_configs."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class SwitchConfigs:
    source: str  # the directory, as given
    frr: Mapping[str, str]  # switch -> frr.conf text
    config_db: Mapping[str, str]  # switch -> config_db.json text, for those that have one
    digest: str  # sha256 over every file read, for the lab's state and the results' provenance

    @property
    def label(self) -> str:
        return f"{self.source} (sha256 {self.digest[:12]})"
