"""Shared fixtures of the unit tests: no root, nothing on the system touched."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harness.model import build
from harness.plan import make_plan
from topologies import BUILTINS

# Public reference data (not part of the repository): $FABLAB_REFERENCE, else shared/ next to the repo.
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


@pytest.fixture(scope="session")
def vtysh():
    path = shutil.which("vtysh")
    if path is None:
        pytest.skip("FRR is not installed (Debian package: frr); `make test` installs it")
    return path
