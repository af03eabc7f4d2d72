"""The one Jinja2 environment: cached, strict about undefined names."""
from __future__ import annotations

from functools import lru_cache

import jinja2

from harness.core.errors import RenderError


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("harness", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_template(name: str, **context: object) -> str:
    try:
        return environment().get_template(name).render(**context)
    except jinja2.TemplateError as e:
        raise RenderError(f"template {name}: {e}") from e
