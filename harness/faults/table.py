"""Every fault fablab can put into a lab, once each: the table `fablab break` offers, the labs'
negative controls apply (harness.faults.sabotage names them as functions) and
tests/integration/test_faults_lab.py runs one by one. Grouped by what they teach, in the
order `fablab faults` lists them.

`KNOBS` follow the same protocol but break nothing: the hash seed is another fair hash, for
runs that want independent samples of a verdict; no check must fail under it.
"""
from __future__ import annotations

from collections.abc import Iterator

from harness.core.errors import InputError
from harness.core.plan import Plan
from harness.faults import bounce, cabling, failover, lossless, places, routing, tenants
from harness.faults.protocol import Control, Fault, NoState
from harness.faults.routing import Sysctls
from harness.faults.targets import Cable, Nic, Port, Ports, Route, Switch, Switches

FAULTS: tuple[Fault, ...] = (
    Fault("swapped-cables", "cabling", "two NICs of a GPU node plugged into each other's leaf ports", "cabling",
          Ports, cabling.Swapped, places.two_rail_nics, cabling.swap, cabling.unswap),
    Fault("rogue-cable", "cabling", "a cable nobody planned between two switches' free ports, made behind "
          "fablab's back", "cabling", Cable, cabling.Made, places.fe_and_be_switch, cabling.rogue, cabling.unrogue),
    Fault("stray-cable", "isolation", "an FE leaf cabled to a BE leaf and brought into BGP in the fabric peer group "
          "(its filters hold)", "isolation", Cable, cabling.Made, places.fe_and_be_switch, cabling.stray,
          cabling.unstray),
    Fault("stray-cable-unfiltered", "isolation", "an FE leaf cabled to a BE leaf with a hand-configured BGP session "
          "and no filters: routes and frames cross", "isolation", Cable, cabling.Made, places.fe_and_be_switch,
          cabling.stray_unfiltered, cabling.unstray),
    Fault("route-leak", "isolation", "a GPU node that forwards, and its FE leaf routing the BE range to it",
          "isolation", Nic, routing.Leak, places.fe_host, routing.leak, routing.unleak),
    Fault("joined-rails", "isolation", "a rail-only leaf forwarding between its rails' port groups", "isolation",
          Switch, tenants.Removed, places.rail_only_leaf, tenants.joined_rails, tenants.rails_apart),
    Fault("l3-hashing", "ecmp", "ECMP hashing on addresses only: RoCE's few flows land on few uplinks", "ecmp",
          Switches, Sysctls, places.be_switches, routing.l3_hashing, routing.restore_sysctls),
    Fault("weighted-uplink", "ecmp", "one next hop of a leaf's route at a higher weight than the others", "ecmp",
          Route, routing.Weights, places.source_route, routing.weighted_uplink, routing.unweight,
          options=(("weight", 2),)),
    Fault("bfd-off", "failover", "BFD too slow to matter (3 s × 50): a gray failure lasts BGP's hold time",
          "failover-gray", Switches, NoState, places.be_switches, failover.bfd_off, failover.declared_bfd),
    Fault("slow-bfd", "failover", "BFD at 1000 ms × 3, copied from a campus profile", "failover-gray",
          Switches, NoState, places.be_switches, failover.slow_bfd, failover.declared_bfd,
          options=(("interval_ms", 1000), ("multiplier", 3))),
    Fault("bfd-removed", "failover", "BFD taken off the fabric sessions (resets them): a gray failure is never "
          "detected before BGP's hold time", "failover-gray", Switches, NoState, places.source_leaf_and_spines,
          failover.bfd_removed, failover.bfd_back, measure_with=lambda plan, target: {"detect_s": 2.5}),
    Fault("carrier-blind", "failover", "a switch that ignores carrier loss on its ports: only BFD finds a pulled "
          "cable", "failover-local", Ports, Sysctls, places.source_uplinks, failover.carrier_blind,
          failover.carrier_seen),
    Fault("fib-lag", "failover", "a switch's FIB programmed 2 s after its RIB: it forwards into a withdrawn path",
          "failover-remote", Switches, NoState, places.source_leaf, failover.fib_lag, failover.fib_prompt,
          options=(("hold_ms", 2000),)),
    Fault("forwarding-blackhole", "failover", "a port that forwards nothing while BGP and BFD on it stay up",
          "ecmp", Port, NoState, places.source_uplink, failover.blackhole, failover.unblackhole),
    Fault("gray-link", "failover", "a link that drops every frame both ways while its carrier stays up", "ecmp",
          Cable, cabling.Made, places.be_uplink, failover.gray, failover.ungray),
    Fault("small-mtu", "lossless", "a BE port's MTU at 1500: RoCE frames at the RoCE MTU no longer fit",
          "lossless-audit", Port, lossless.Mtu, places.be_host_port, lossless.small_mtu, lossless.mtu_back),
    Fault("pfc-priority", "lossless", "PFC enabled on the wrong priority in a port's QoS map", "lossless-audit",
          Port, lossless.ConfigDbField, places.be_host_port, lossless.pfc_priority, lossless.config_db_back),
    Fault("pfc-storm", "lossless", "a GPU NIC that sends PFC pause without end (a pause storm)", "pfc",
          Port, lossless.Storm, places.gpu_nic, lossless.pfc_storm, lossless.storm_over),
    Fault("ecn-off", "lossless", "ECN off on the RoCE queue of the port an incast congests (its WRED profile "
          "removed): PFC alone holds the incast", "dcqcn", Port, lossless.ConfigDbField, places.incast_port,
          lossless.ecn_off, lossless.config_db_back),
    Fault("dscp-map", "lossless", "RoCE's DSCP mapped to a lossy traffic class", "lossless-audit",
          Switch, lossless.ConfigDbField, places.first_be_leaf, lossless.dscp_map, lossless.config_db_back),
    Fault("route-bounce", "lossless", "a spine's static route sends one GPU's address down to another leaf, which "
          "sends it back up: a cycle of lossless buffers", "deadlock", Route, bounce.Bounced, bounce.place,
          bounce.bounce, bounce.unbounce),
    Fault("acl-flip", "tenants", "an edge ACL deny rule typed as permit on one leaf", "tenants",
          Switch, tenants.AclVerdict, places.vtep, tenants.acl_flip, tenants.acl_back, options=(("entry", ""),)),
    Fault("wrong-vlan", "tenants", "a tenant member's leaf port in another tenant's VLAN", "tenants",
          Port, tenants.Bridged, places.two_tenant_port, tenants.wrong_vlan, tenants.right_vlan,
          options=(("into_vni", 0),)),
    Fault("tenant-routed", "tenants", "a leaf routing a tenant's segment into the underlay (an SVI, no VRF)",
          "tenants", Switch, tenants.Routed, places.vtep, tenants.tenant_routed, tenants.tenant_unrouted,
          options=(("vni", 0),)),
)
BY_NAME = {f.name: f for f in FAULTS}

KNOBS: tuple[Fault, ...] = (
    Fault("hash-seed", "ecmp", "a node's ECMP hash seed: another fair hash, which no check may fail", "",
          Switch, Sysctls, places.source_switch, routing.hash_seed, routing.restore_sysctls, options=(("seed", 0),)),
)

def fault(name: str) -> Fault:
    if name not in BY_NAME:
        raise InputError(f"unknown fault {name!r}; the faults are: {', '.join(BY_NAME)} (fablab faults)")
    return BY_NAME[name]


def knob(name: str) -> Fault:
    found = next((k for k in KNOBS if k.name == name), None)
    if found is None:
        raise InputError(f"unknown knob {name!r}; the knobs are: {', '.join(k.name for k in KNOBS)}")
    return found


def controls(plan: Plan) -> Iterator[Control]:
    """Each fault this plan has a place for, on its default target, with the case that must
    fail while it is in place (and pass once it is undone): the negative controls of the
    labs and of tests/integration/test_faults_lab.py."""
    for f in FAULTS:
        target = f.default(plan)
        if target is not None:
            yield Control(f, target, f.caught_by, f.measure_with(plan, target))


def check_of(case_name: str) -> str:
    """The check (`fablab check --only` name) a case belongs to."""
    from harness.checks.registry import select

    for check in select(None):
        if any(c.name == case_name for c in check.cases):
            return check.name
    raise InputError(f"no check has a case {case_name!r}")
