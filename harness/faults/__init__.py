"""What breaks a running lab on purpose, and undoes it: every fault once, in one table, each
naming the check case that must fail while it is in place.

- `protocol`: the one protocol (Fault, Applied, `applied(...)` for a with-block);
- `targets`: where a fault goes (Port, Ports, Cable, Switch, Switches, Nic, Route), as
  `--on` writes it;
- `table`: FAULTS (and KNOBS, which break nothing), `controls(plan)` the negative controls;
- the moves, by what they break: `cabling`, `routing`, `failover`, `lossless`, `tenants`;
  `places`, where each goes by default;
- `store`: `fablab break`/`fix` (the lab's faults.json); `mystery`: one hidden fault;
- `sabotage`: the faults as functions of plain names, for the labs' negative controls.
"""
from __future__ import annotations

from harness.faults.protocol import Applied, Control, Fault, InPlace, NoState, applied
from harness.faults.table import BY_NAME, FAULTS, KNOBS, check_of, controls, fault, knob
from harness.faults.targets import Cable, Nic, Port, Ports, Route, Switch, Switches, Target, parse

__all__ = ["BY_NAME", "FAULTS", "KNOBS", "Applied", "Cable", "Control", "Fault", "InPlace", "Nic", "NoState", "Port",
           "Ports", "Route", "Switch", "Switches", "Target", "applied", "check_of", "controls", "fault", "knob",
           "parse"]
