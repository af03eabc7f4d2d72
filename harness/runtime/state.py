"""What a lab is, on disk: its run directory and state file.

/run/fablab/<lab>/state.json is written *before* anything is created (the intent), then
updated as processes start, so that teardown and `fablab clean` know exactly what the lab
owns even when the process that booted it was killed. /run is a tmpfs, like the network
namespaces: both vanish on reboot together.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from harness.core.errors import HarnessError, InputError, UnknownLab
from harness.core.kinds import LabPhase, RuntimeName
from harness.core.model import Cluster, cluster_from_dict
from harness.core.model import check_lab_name as model_check_lab_name

RUN_ROOT = Path(os.environ.get("FABLAB_RUN_DIR", "/run/fablab"))
NS_PREFIX = "fl_"
TESTBED_OWNER = "testbed.json"  # in a traffic testbed's run directory instead of state.json


def check_lab_name(name: str) -> str:
    """The name, if usable (harness.core.model's rule, which `fablab render --name` applies too)."""
    problems = model_check_lab_name(name)
    if problems:
        raise InputError(f"lab name {name!r} is not usable: {problems[0].hint}")
    return name


def namespace(lab: str, node: str) -> str:
    # FRR's -N pathspace refuses dots and slashes; '_' separates lab and node unambiguously
    # because neither may contain it.
    return f"{NS_PREFIX}{lab}_{node}"


def lab_of_namespace(ns: str) -> str | None:
    if not ns.startswith(NS_PREFIX):
        return None
    parts = ns[len(NS_PREFIX):].split("_")
    return parts[0] if len(parts) == 2 and all(parts) else None


@dataclass(frozen=True)
class Daemon:
    node: str
    name: str  # zebra, bgpd, bfdd
    pid: int


@dataclass(frozen=True)
class LabState:
    lab: str
    runtime: RuntimeName
    topology: str
    cluster: dict
    namespaces: tuple[str, ...]
    daemons: tuple[Daemon, ...] = ()
    phase: LabPhase = LabPhase.BOOTING
    runner_pid: int = 0  # the process that booted the lab
    owner_pid: int = 0  # the process the lab lives and dies with; 0: detached (`fablab up`)
    runner_start: int = 0  # start times (processes.start_time), so a reused pid is not taken for them
    owner_start: int = 0
    created: float = 0.0
    timings: dict = field(default_factory=dict)
    mgmt_network: str = ""  # clab: the lab's own mgmt subnet (Docker refuses overlapping ones)
    converged: dict = field(default_factory=dict)  # what the boot's last look at every switch saw
    configs: str = ""  # where the switch configs came from when not fablab's render (`up --configs`)
    not_converged: str = ""  # with configs of one's own: what was still missing when the boot stopped waiting

    def __post_init__(self) -> None:  # a state file holds the words; the state holds the kinds
        object.__setattr__(self, "runtime", RuntimeName(self.runtime))
        object.__setattr__(self, "phase", LabPhase(self.phase))

    @property
    def run_dir(self) -> Path:
        return run_dir(self.lab)

    def with_(self, **changes) -> LabState:
        return replace(self, **changes)

    def declared_cluster(self) -> Cluster:
        return cluster_from_dict(self.cluster)


def run_dir(lab: str) -> Path:
    return RUN_ROOT / lab


def save(state: LabState) -> None:
    path = run_dir(state.lab) / "state.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    data = asdict(state)
    data["namespaces"] = list(state.namespaces)
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


JOURNAL = "daemons.jsonl"


def record_started(lab: str, daemons: tuple[Daemon, ...]) -> None:
    """Daemons just started, appended to the lab's journal: every pid on disk as soon as it
    exists, at a line's cost (rewriting the whole state per start was quadratic in switches:
    1,098 starts at gpu4096 rewrote a 100 KB file each). `load` reads the journal back in."""
    with open(run_dir(lab) / JOURNAL, "a") as f:
        f.write("".join(json.dumps(asdict(d)) + "\n" for d in daemons))


def _journal(lab: str) -> list[Daemon]:
    try:
        lines = (run_dir(lab) / JOURNAL).read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            found.append(Daemon(**json.loads(line)))
        except (ValueError, TypeError):
            continue  # a line cut short by a crash mid-write: the namespace scan still finds that daemon
    return found


def load(lab: str) -> LabState:
    path = run_dir(lab) / "state.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        running = ", ".join(labs()) or "none"
        raise UnknownLab(f"no lab named {lab!r} is running (running: {running}; `fablab up TOPOLOGY --name "
                         f"{lab}` boots one)") from None
    except (OSError, ValueError) as e:
        raise HarnessError(f"state of lab {lab!r} is unreadable ({e}); `fablab clean` removes it") from e
    try:
        data["namespaces"] = tuple(data["namespaces"])
        daemons = [Daemon(**d) for d in data.get("daemons", ())]
        data["daemons"] = tuple(dict.fromkeys(daemons + _journal(lab)))  # in start order, each once
        return LabState(**data)
    except (KeyError, TypeError, ValueError) as e:
        raise HarnessError(f"state of lab {lab!r} is unreadable ({e}); `fablab clean` removes it") from e


def is_stale(state: LabState) -> bool:
    """Left behind: its owner (or, mid-boot, its runner) is gone."""
    from harness.runtime.processes import same_process

    if state.phase is not LabPhase.UP and not same_process(state.runner_pid, state.runner_start):
        return True
    return bool(state.owner_pid) and not same_process(state.owner_pid, state.owner_start)


def namespaces_present(state: LabState) -> int:
    """How many of the lab's namespaces are on the system now: read, not remembered."""
    from harness.plumbing.namespaces import list_namespaces

    present = set(list_namespaces())
    return sum(1 for ns in state.namespaces if ns in present)


def labs() -> list[str]:
    """The labs with a run directory, a traffic testbed's aside (it has no state: see claim_testbed)."""
    if not RUN_ROOT.is_dir():
        return []
    return sorted(p.name for p in RUN_ROOT.iterdir()
                  if p.is_dir() and not model_check_lab_name(p.name) and not (p / TESTBED_OWNER).exists())


def claim_testbed(lab: str) -> None:
    """A traffic testbed (harness/runtime/testbed.py) is a lab without a plan or a state: its
    owner, written before anything is made, is what keeps `fablab clean` off it while it lives."""
    from harness.runtime.processes import start_time

    check_lab_name(lab)
    path = run_dir(lab) / TESTBED_OWNER
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": os.getpid(), "start": start_time(os.getpid())}))


def testbed_owned(lab: str) -> bool:
    """A testbed whose owner still runs."""
    from harness.runtime.processes import same_process

    try:
        owner = json.loads((run_dir(lab) / TESTBED_OWNER).read_text())
        return same_process(int(owner["pid"]), int(owner["start"]))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def runtime_of(lab: str) -> str | None:
    try:
        return load(lab).runtime
    except Exception:  # no state, or unreadable
        return None


def stale(lab: str) -> bool:
    """Left behind: no state that an owner vouches for (see is_stale)."""
    try:
        state = load(lab)
    except UnknownLab:  # no state: a traffic testbed's owner may vouch for it
        return not testbed_owned(lab)
    except Exception:  # unreadable: nothing vouches for it
        return True
    return is_stale(state)
