"""The lossless contract, hop by hop, from SONiC config_db.json files; and RoCE frames on the wire.

A RoCE backend is lossless only if every hop agrees: the RoCE DSCP maps to the RoCE traffic
class, that class to its queue and priority group, PFC is on for that priority on both ends
of every link, the lossless queue marks ECN, CNPs reach a strict-priority queue, the PFC
watchdog guards the priority, the buffer profiles the ports reference exist, and every
port's MTU carries a full RoCE frame. One switch that disagrees pauses (or drops) a whole
job. The expected values are the cluster's declaration (`Lossless`), never the configs
under test. Each finding names the switch, the port, the table and what was expected.

The configs are read as harness.core.meaning.configdb reads them, by meaning: maps, profiles,
ACL rules and tables, VXLAN objects are followed from the port, never judged by name; a VLAN
is its vlanid; an ACL is its decisions; a field left out is SONiC's default (an absent mtu is
9100, absent wred_green_enable is false).

Two cases: lossless-audit (`configs`: the tables and kernel MTUs read, judged against the
plan; also `fablab audit`) and lossless-wire (`wire`: full-size RoCE frames sent on every BE
path, what arrived judged against the plan).
"""
from __future__ import annotations

from harness.checks.base import Case, Check
from harness.checks.lossless.configs import (LosslessConfigs, audit, configs_of_dir, judge_audit, load_dir,
                                             measure_audit)
from harness.checks.lossless.outcome import Finding, LosslessAudit
from harness.checks.lossless.wire import JumboResult, JumboSeen, judge_wire, measure_wire, probe_pairs

__all__ = ["CHECK", "Finding", "JumboResult", "JumboSeen", "LosslessAudit", "LosslessConfigs", "audit",
           "configs_of_dir", "judge_audit", "judge_wire", "load_dir", "measure_audit", "measure_wire", "probe_pairs"]

CHECK = Check("lossless", "the declared lossless contract on every BE hop (PFC, DSCP/TC/queue/PG, ECN, CNP queue, "
              "watchdog, buffers, MTU), then RoCE frames at the RoCE MTU and DSCP on the wire of every BE path",
              (Case("lossless-audit", measure_audit, judge_audit), Case("lossless-wire", measure_wire, judge_wire)))
