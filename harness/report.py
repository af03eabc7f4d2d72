"""Results of checks as files: one JSON per check, PNG plots, and a summary."""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path


def to_data(obj: object) -> object:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for extra in ("passed", "reason"):
            if hasattr(obj, extra) and extra not in data:
                data[extra] = to_data(getattr(obj, extra))
        return data
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_data(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


class Results:
    """A results directory: `record(name, result)` writes <name>.json and keeps a summary."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.entries: dict[str, dict] = {}

    def path(self, filename: str) -> Path:
        return self.directory / filename

    def record(self, name: str, result: object, plots: tuple[Path, ...] = ()) -> Path:
        data = to_data(result)
        path = self.directory / f"{name}.json"
        path.write_text(json.dumps(data, indent=2))
        self.entries[name] = {"passed": getattr(result, "passed", None), "reason": getattr(result, "reason", ""),
                              "json": str(path), "plots": [str(p) for p in plots]}
        self.write_summary()
        return path

    def write_summary(self) -> Path:
        path = self.directory / "summary.json"
        path.write_text(json.dumps({"written": time.strftime("%Y-%m-%dT%H:%M:%S"), "checks": self.entries}, indent=2))
        return path
