"""Built-in cluster declarations. Each is a plain builder function returning a `Cluster`.

The registry is explicit: a name listed here is a built-in, nothing else is.
"""
from __future__ import annotations

from collections.abc import Callable

from harness.core.model import Cluster
from topologies.ai_cluster import ai_cluster
from topologies.dual_homed import dual_homed
from topologies.large import large
from topologies.multi_rail import multi_rail
from topologies.pods import pods
from topologies.rail_only import rail_only
from topologies.xlarge import xlarge

BUILTINS: dict[str, Callable[[], Cluster]] = {
    "ai-cluster": ai_cluster,
    "rail-only": rail_only,
    "multi-rail": multi_rail,
    "pods": pods,
    "dual-homed": dual_homed,
    "large": large,
    "xlarge": xlarge,
}
