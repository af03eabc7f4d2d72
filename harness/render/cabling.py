"""cabling.csv: one row per cable, what a data-center technician works from."""
from __future__ import annotations

import csv
import io

from harness.core.plan import Plan

COLUMNS = ("a_node", "a_port", "b_node", "b_port", "plane", "rail", "speed", "media")


def cabling_csv(plan: Plan) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in plan.cables:
        writer.writerow((row.a_node, row.a_port, row.b_node, row.b_port, row.plane.value,
                         "" if row.rail is None else row.rail, f"{row.speed}G", row.media))
    return out.getvalue()
