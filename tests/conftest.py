"""Shared fixtures of the unit tests: no root, nothing on the system touched."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harness.core.model import build
from harness.core.plan import make_plan
from topologies import BUILTINS

# Public reference data (containerlab's schema, SONiC's HwSKU files and YANG models) lives
# beside the repo, not in it.
REFERENCE = Path(os.environ.get("FABLAB_REFERENCE") or Path(__file__).resolve().parents[2] / "shared" / "reference")
SCHEMA = REFERENCE / "clab.schema.json"


@pytest.fixture(scope="session")
def ai_plan():
    return make_plan(build(BUILTINS["ai-cluster"]()))


@pytest.fixture(scope="session")
def clab_validator():
    """containerlab's own JSON schema. Its patterns use \\p{..} classes, so `regex` stands in for `re`."""
    if not SCHEMA.exists():
        pytest.skip(f"containerlab schema not found at {SCHEMA} (set FABLAB_REFERENCE; ../shared/reference "
                    "is outside this repo)")
    import jsonschema
    import regex
    from jsonschema import validators
    from jsonschema.exceptions import ValidationError

    def pattern(validator, patrn, instance, schema):
        if validator.is_type(instance, "string") and not regex.search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    cls = validators.extend(jsonschema.Draft7Validator, {"pattern": pattern})
    return cls(json.loads(SCHEMA.read_text()))


def require_tool(tool: str, package: str) -> str:
    """The tool's path, or skip naming the Debian package that `make test` installs."""
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed (Debian package: {package}; `make test` installs it)")
    return path


@pytest.fixture(scope="session")
def vtysh():
    return require_tool("vtysh", "frr")


@pytest.fixture(scope="session")
def reference():
    """The folder of public reference data; tests skip on what it lacks."""
    return REFERENCE


@pytest.fixture(scope="session")
def hwsku_dir(reference):
    """SONiC's port_config.ini of every HwSKU, as <HwSKU>.port_config.ini."""
    path = reference / "sonic-hwsku"
    if not path.is_dir():
        pytest.skip(f"SONiC HwSKU files not found at {path} (set FABLAB_REFERENCE to the reference folder)")
    return path
