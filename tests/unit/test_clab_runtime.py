"""The clab runtime without containerlab: commands, inspect parsing, readiness logic, errors.

containerlab, a Docker daemon with privileges and the SONiC image do not exist on this
machine; these tests never pretend they ran. What needs them runs in the Vagrant VM
(`pytest labs/ --runtime clab`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import PrerequisiteError, LabError
from harness.core.model import build
from harness.core.plan import make_plan
from harness.runtime import clab, state
from harness.runtime.clab import ClabRuntime, check_prerequisites, container_name, poll_all
from harness.runtime.clab_cli import (InitStatus, deploy_argv, destroy_argv, inspect_argv, parse_init_status,
                                      parse_inspect)
from topologies import BUILTINS

ROOT = Path(__file__).resolve().parents[2]


def completed(rc: int = 0, out: str = "", err: str = "") -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess([], rc, out, err)


# ---------------------------------------------------------------------- commands

def test_commands_name_the_lab_topology_file():
    topo = Path("/run/fablab/x/clab/x.clab.yml")
    assert deploy_argv(topo) == ["containerlab", "deploy", "-t", str(topo)]
    assert deploy_argv(topo, replace=True)[-1] == "--reconfigure"
    assert destroy_argv(topo) == ["containerlab", "destroy", "-t", str(topo), "--cleanup"]
    assert inspect_argv("x") == ["containerlab", "inspect", "--name", "x", "--format", "json"]


def test_containers_and_namespaces_carry_the_lab_name():
    rt = ClabRuntime()
    assert container_name("lab7", "be-s1") == "fablab-lab7-be-s1"
    assert rt.namespace("lab7", "be-s1") == "fablab-lab7-be-s1"  # containerlab's /run/netns link
    assert rt.exec_argv("lab7", "gpu01", ["ip", "-j", "addr"]) == [
        "docker", "exec", "-i", "fablab-lab7-gpu01", "ip", "-j", "addr"]
    assert rt.ns_argv("lab7", "be-s1", ["nft", "list", "ruleset"])[:2] == [
        "nsenter", "--net=/run/netns/fablab-lab7-be-s1"]


# ---------------------------------------------------------------------- inspect

ROW = {"lab_name": "x", "labPath": "x.clab.yml", "name": "fablab-x-be-s1", "container_id": "0123456789ab",
       "image": "docker-sonic-vs:latest", "kind": "sonic-vs", "state": "running",
       "ipv4_address": "198.18.0.3/26", "ipv6_address": "N/A", "owner": "root"}


def test_inspect_before_0_68_is_a_containers_list():
    rows = parse_inspect(json.dumps({"containers": [ROW, ROW | {"name": "fablab-x-gpu01", "kind": "linux"}]}))
    assert [c.name for c in rows] == ["fablab-x-be-s1", "fablab-x-gpu01"]
    assert rows[0].state == "running" and rows[0].kind == "sonic-vs" and rows[0].ipv4 == "198.18.0.3/26"


def test_inspect_since_0_68_is_keyed_by_lab():
    rows = parse_inspect(json.dumps({"x": [ROW], "y": [ROW | {"name": "fablab-y-be-s1", "lab_name": "y"}]}))
    assert [(c.name, c.lab) for c in rows] == [("fablab-x-be-s1", "x"), ("fablab-y-be-s1", "y")]


def test_inspect_of_nothing_is_no_container():
    assert parse_inspect("") == [] and parse_inspect("{}") == [] and parse_inspect('{"containers": []}') == []


def test_inspect_garbage_is_a_clear_error():
    with pytest.raises(LabError, match="no JSON"):
        parse_inspect("time=... level=error msg=no containers found")


def test_inspect_entry_without_name_is_refused():
    with pytest.raises(LabError, match="without a name"):
        parse_inspect(json.dumps({"containers": [{"state": "running"}]}))


# ---------------------------------------------------------------------- init status

@pytest.mark.parametrize("text, expected", [
    (None, InitStatus("pending")),
    ("", InitStatus("pending")),
    ("running config_db\n", InitStatus("running", "config_db")),
    ("ok\n", InitStatus("ok")),
    ("failed bfdd: bfdd did not answer within 60 s\n", InitStatus("failed", "bfdd", "bfdd did not answer within 60 s")),
    ("running ports\nok\n", InitStatus("ok")),
])
def test_init_status_lines(text, expected):
    assert parse_init_status(text) == expected


def test_unreadable_init_status_fails_rather_than_waits():
    assert parse_init_status("???").state == "failed"


# ---------------------------------------------------------------------- polling

class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def pause(self, s: float) -> None:
        self.t += s


def test_poll_all_returns_once_every_item_is_ready():
    clock = Clock()
    ready_at = {"a": 1.0, "b": 3.0}
    poll_all(ready_at, lambda i: clock.t >= ready_at[i], 10, "switch init", clock.now, clock.pause)
    assert 3.0 <= clock.t < 4.0


def test_poll_all_names_what_is_still_waiting_at_the_deadline():
    clock = Clock()
    with pytest.raises(LabError, match=r"switch init: 1/2 not ready after 5 s: b"):
        poll_all(["a", "b"], lambda i: i == "a", 5, "switch init", clock.now, clock.pause)


def test_poll_all_stops_at_the_first_failure():
    clock = Clock()

    def probe(item: str) -> bool:
        raise LabError(f"{item}: init step 'config_db' failed")

    with pytest.raises(LabError, match="config_db"):
        poll_all(["be-s1"], probe, 60, "switch init", clock.now, clock.pause)
    assert clock.t == 0.0


# ---------------------------------------------------------------------- readiness of one switch

def fake_exec(answers: dict[str, subprocess.CompletedProcess]):
    calls = []

    def run(argv, **kwargs):
        calls.append(argv)
        for key, answer in answers.items():
            if key in " ".join(argv):
                return answer
        return completed(1, "", "not faked")

    return run, calls


def test_a_switch_still_running_init_is_not_ready():
    run, calls = fake_exec({"fablab-init.status": completed(0, "running frr\n")})
    rt = ClabRuntime(run=run)
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    assert rt._switch_ready(plan, "x", "be-s1") is False
    assert calls[0][:4] == ["docker", "exec", "-i", "fablab-x-be-s1"]


def test_a_failed_init_step_fails_the_boot_naming_switch_and_step():
    run, _ = fake_exec({"fablab-init.status": completed(0, "failed config_db: redis did not answer\n"),
                        "fablab-init.log": completed(0, "waiting for redis\n")})
    rt = ClabRuntime(run=run)
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    with pytest.raises(LabError, match=r"be-s1: init step 'config_db' failed: redis did not answer"):
        rt._switch_ready(plan, "x", "be-s1")


def test_ok_is_not_trusted_when_config_db_was_not_loaded():
    run, _ = fake_exec({"fablab-init.status": completed(0, "ok\n"), "HGET": completed(0, "sonic\n")})
    rt = ClabRuntime(run=run)
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    with pytest.raises(LabError, match="hostname 'sonic', not 'be-s1'"):
        rt._switch_ready(plan, "x", "be-s1")


# ---------------------------------------------------------------------- links

def test_link_down_acts_on_the_containerlab_veth_end_not_the_sonic_tap():
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    rt = ClabRuntime()
    rt._plans["x"] = plan
    leaf = plan.switch("be-g1-r0")
    for port in leaf.ports:
        assert rt.carrier_port("x", leaf.name, port.name) == port.clab
        assert port.clab.startswith("eth") and port.clab != port.name
    assert rt.carrier_port("x", "gpu01", "rail0") == "rail0"  # a linux host's NIC is the veth itself
    assert rt.gray_port("x", leaf.name, leaf.ports[0].name) == leaf.ports[0].name  # where the kernel routes
    with pytest.raises(LabError, match="no port 'Ethernet999'"):
        rt.carrier_port("x", leaf.name, "Ethernet999")


# ---------------------------------------------------------------------- prerequisites

def test_missing_containerlab_is_named_with_where_to_get_it():
    if os.geteuid() != 0:
        pytest.skip("the root check comes first")
    with pytest.raises(PrerequisiteError, match="containerlab.dev/install"):
        check_prerequisites("img", which=lambda t: None if t == "containerlab" else f"/usr/bin/{t}")


def test_a_docker_daemon_that_does_not_answer_is_named():
    if os.geteuid() != 0:
        pytest.skip("the root check comes first")
    with pytest.raises(PrerequisiteError, match="Docker daemon"):
        check_prerequisites("img", which=lambda t: f"/usr/bin/{t}",
                            run=lambda argv, **kw: completed(1, "", "Cannot connect to the Docker daemon"))


def test_a_missing_sonic_image_says_how_to_load_it():
    if os.geteuid() != 0:
        pytest.skip("the root check comes first")

    def run(argv, **kw):
        return completed(0, "27.0\n") if argv[1] == "info" else completed(1, "", "No such image")

    with pytest.raises(PrerequisiteError, match=r"docker-sonic-vs:latest is not loaded: docker load"):
        check_prerequisites("docker-sonic-vs:latest", which=lambda t: f"/usr/bin/{t}", run=run)


def test_fablab_up_clab_fails_at_once_and_makes_nothing(tmp_path):
    env = os.environ | {"FABLAB_RUN_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "harness.cli", "up", "ai-cluster", "--runtime", "clab",
                          "--name", "cl1"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert run.returncode != 0
    assert "clab runtime needs" in run.stderr or "Docker daemon" in run.stderr or "root" in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == []  # no state, no artifacts: refused before anything was made


def test_pytest_labs_with_clab_fails_at_once_naming_what_is_missing():
    run = subprocess.run([sys.executable, "-m", "pytest", "labs", "--runtime", "clab", "-q", "-p", "no:cacheprovider"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode != 0
    assert "--runtime clab:" in run.stderr + run.stdout, run.stderr + run.stdout


# ---------------------------------------------------------------------- clean

def test_clean_of_one_runtime_never_takes_a_lab_of_the_other(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    for lab, runtime in (("cl-old", "clab"), ("ns-old", "netns")):
        state.save(state.LabState(lab=lab, runtime=runtime, topology="ai-cluster", cluster={}, namespaces=(),
                                  runner_pid=2 ** 22 + 1, owner_pid=2 ** 22 + 1, phase="up"))  # owners long gone
    assert ClabRuntime().leftovers(everything=True) == ["cl-old"]
    assert ClabRuntime().leftovers() == ["cl-old"]
    from harness.runtime.netns import NetnsRuntime

    netns_found = NetnsRuntime().leftovers(everything=True)
    assert "cl-old" not in netns_found and "ns-old" in netns_found
    assert clab.ClabRuntime.name == "clab"


# ---------------------------------------------------------------------- up(): error paths, with the CLI answers faked

class FakeClab:
    """Answers the commands `up` runs, as containerlab and docker would in the failing case
    under test; records them. Nothing here claims a deploy happened."""

    def __init__(self, deploy: subprocess.CompletedProcess, inspect: str = "{}", deploy_s: float = 0.0,
                 on_deploy=None) -> None:
        self.deploy, self.inspect, self.calls = deploy, inspect, []
        self.deploy_s, self.on_deploy = deploy_s, on_deploy

    def spawn(self, argv, **kwargs) -> subprocess.Popen:
        """containerlab deploy as a process of its own that ends as self.deploy says."""
        self.calls.append(list(argv))
        if argv[:2] == ["containerlab", "deploy"] and self.on_deploy is not None:
            self.on_deploy(argv)
        d = self.deploy
        code = (f"import sys, time; time.sleep({self.deploy_s}); sys.stdout.write({d.stdout or ''!r}); "
                f"sys.stderr.write({d.stderr or ''!r}); sys.exit({d.returncode})")
        return subprocess.Popen([sys.executable, "-c", code], **kwargs)

    def runtime(self) -> ClabRuntime:
        return ClabRuntime(run=self, which=lambda t: f"/usr/bin/{t}", spawn=self.spawn)

    def __call__(self, argv, **kwargs):
        self.calls.append(list(argv))
        if argv[:2] == ["docker", "info"]:
            return completed(0, "27.0\n")
        if argv[:3] == ["docker", "image", "inspect"]:
            return completed(0, "sha256:x\n")
        if argv[:2] == ["containerlab", "inspect"]:
            return completed(0, self.inspect)
        if argv[:2] == ["containerlab", "destroy"]:
            return completed(0)
        return completed(1, "", f"unexpected {argv}")


@pytest.fixture
def run_root(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the clab runtime checks for root first")
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    return tmp_path


def test_a_failed_deploy_is_reported_and_everything_removed(run_root):
    fake = FakeClab(completed(1, "", "Error: failed to create container fablab-x-be-s1: no space left"))
    with pytest.raises(LabError, match="containerlab deploy failed .*no space left"):
        fake.runtime().up(make_plan(build(BUILTINS["ai-cluster"]())), "x", "ai-cluster")
    assert ["containerlab", "destroy"] == [c[:2] for c in fake.calls if c[0] == "containerlab"][-1]
    assert not (run_root / "x").exists()


def test_deploy_exit_0_with_a_node_missing_is_not_trusted(run_root):
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    rows = [ROW | {"name": container_name("x", n.name)} for n in plan.fabric.nodes if n.name != "gpu03"]
    fake = FakeClab(completed(0), json.dumps({"x": rows}))
    with pytest.raises(LabError, match="deployed x without nodes gpu03"):
        fake.runtime().up(plan, "x", "ai-cluster")
    assert not (run_root / "x").exists()


def test_up_writes_the_artifacts_it_deploys_with_the_lab_subnet(run_root):
    seen = {}

    def look(argv):
        topo = Path(argv[3])
        seen["text"] = topo.read_text()
        seen["files"] = sorted(str(p.relative_to(topo.parent)) for p in topo.parent.rglob("*") if p.is_file())
        seen["state"] = state.load("x")

    with pytest.raises(LabError):
        FakeClab(completed(1, "", "stop here"), on_deploy=look).runtime().up(
            make_plan(build(BUILTINS["ai-cluster"]())), "x", "ai-cluster")
    assert "configs/be-s1/init.sh" in seen["files"] and "configs/be-s1/config_db.json" in seen["files"]
    subnet = seen["state"].mgmt_network
    assert subnet == "172.31.0.0/20"  # the declared addressing.mgmt, as everywhere else
    assert f"ipv4-subnet: {subnet}" in seen["text"]
    assert seen["state"].namespaces[0].startswith("fablab-x-")


def test_a_second_lab_whose_declared_mgmt_range_is_held_moves_to_a_slot_of_its_own(run_root):
    from ipaddress import IPv4Network

    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    # A running clab lab of the same declaration holds the declared mgmt range.
    state.save(state.LabState(lab="z", runtime="clab", topology="ai-cluster", cluster={}, namespaces=(),
                              runner_pid=os.getpid(), phase="up", mgmt_network=str(plan.mgmt_network)))
    seen, said = {}, []
    fake = FakeClab(completed(1, "", "stop here"), on_deploy=lambda argv: seen.update(net=state.load("y").mgmt_network))
    with pytest.raises(LabError):
        fake.runtime().up(plan, "y", "ai-cluster", progress=lambda phase, text: said.append(text))
    assert not IPv4Network(seen["net"]).overlaps(plan.mgmt_network)
    assert any("overlaps lab z's" in text and seen["net"] in text for text in said)


# ---------------------------------------------------------------------- budgets: from the work, never a kill

def test_a_deploy_past_its_budget_is_let_finish_then_the_lab_is_destroyed(run_root, tmp_path):
    from harness.runtime.clab_boot import deploy

    said = []
    marker = tmp_path / "finished"
    code = f"import time, pathlib; time.sleep(1.5); pathlib.Path({str(marker)!r}).write_text('done')"
    with pytest.raises(LabError, match=r"took \d+ s, over its budget of 0 s"):
        deploy([sys.executable, "-c", code], tmp_path, 0.2, lambda phase, text: said.append(text),
               report_every=0.3)
    assert marker.read_text() == "done"  # not killed half-way
    assert any("letting it finish" in text for text in said)


def test_a_deploy_within_budget_reports_progress_and_its_time(tmp_path):
    from harness.runtime.clab_boot import deploy

    said = []
    took = deploy([sys.executable, "-c", "import time; time.sleep(0.7)"], tmp_path, 60, 
                  lambda phase, text: said.append(text), report_every=0.2)
    assert 0.6 < took < 30 and any("running" in text and "of 60 s" in text for text in said)


def test_the_convergence_timeout_means_the_same_on_both_runtimes(run_root):
    """`timeout` is the convergence phase's on clab too: deploy and init have budgets of their own."""
    said = []
    fake = FakeClab(completed(1, "", "stop here"))
    with pytest.raises(LabError):
        fake.runtime().up(make_plan(build(BUILTINS["ai-cluster"]())), "x", "ai-cluster", timeout=7,
                          progress=lambda phase, text: said.append((phase, text)))
    budget = next(text for phase, text in said if phase == "budget")
    assert "converge 7 s" in budget and "deploy" in budget and "init" in budget


def test_images_the_lab_needs_are_checked_and_missing_ones_pulled_before_anything_is_made(run_root):
    from harness.render.containerlab import HOST_IMAGE

    class Offline(FakeClab):
        def __call__(self, argv, **kwargs):
            if argv[:3] == ["docker", "image", "inspect"] and argv[-1] == HOST_IMAGE:
                return completed(1, "", "No such image")
            if argv[:2] == ["docker", "pull"]:
                self.calls.append(list(argv))
                return completed(1, "", "dial tcp: lookup ghcr.io: no such host")
            return super().__call__(argv, **kwargs)

    fake = Offline(completed(0))
    with pytest.raises(PrerequisiteError, match=r"docker pull .*network-multitool.* failed: dial tcp.*docker save"):
        fake.runtime().up(make_plan(build(BUILTINS["ai-cluster"]())), "x", "ai-cluster")
    assert ["docker", "pull", "--quiet", HOST_IMAGE] in fake.calls
    assert not any(c[:2] == ["containerlab", "deploy"] for c in fake.calls)
    assert list(run_root.iterdir()) == []  # no state, no artifacts


def test_a_routed_host_image_is_among_the_images_checked():
    from harness.render.containerlab import HOST_IMAGE, ROUTED_HOST_IMAGE
    from harness.runtime.clab_boot import images_of

    assert images_of(make_plan(build(BUILTINS["ai-cluster"]())), "s:1") == ["s:1", HOST_IMAGE]
    assert ROUTED_HOST_IMAGE in images_of(make_plan(build(BUILTINS["dual-homed"]())), "s:1")


def test_the_clab_view_moves_mgmt_and_names_hosts_mgmt_nic_eth0():
    from ipaddress import IPv4Network

    from harness.core.model import Plane
    from harness.runtime.clab import clab_view

    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    view = clab_view(plan, IPv4Network("198.18.0.0/26"))
    assert all(h.mgmt.name == "eth0" and h.mgmt.address.ip in IPv4Network("198.18.0.0/26") for h in view.hosts)
    assert all(s.mgmt.ip in IPv4Network("198.18.0.0/26") for s in view.switches)
    assert all(c.a_port == "eth0" for c in view.cables if c.plane is Plane.MGMT)
    assert [n.name for n in view.host("gpu01").nics if n.plane is not Plane.MGMT] == \
        [n.name for n in plan.host("gpu01").nics if n.plane is not Plane.MGMT]


# ---------------------------------------------------------------------- what the cabling audit asks of a runtime

def test_clab_names_a_sonic_cable_end_by_its_endpoint_and_audits_fe_and_be_only():
    from harness.core.model import Plane, Role
    from harness.runtime.netns import NetnsRuntime

    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    names = ClabRuntime().kernel_port_names(plan)
    leaf = plan.switches[0]
    assert names[(leaf.name, leaf.ports[0].clab)] == leaf.ports[0].name != leaf.ports[0].clab
    assert len(names) == sum(len(sw.ports) for sw in plan.switches)
    scope = ClabRuntime().cabling_scope(plan)
    assert scope.planes == (Plane.FE, Plane.BE) and scope.skip_interfaces == frozenset({"eth0"})
    assert "oob1" not in scope.nodes and len(scope.nodes) == sum(1 for n in plan.fabric.nodes if n.role is not Role.OOB)
    assert "containerlab's management network" in scope.text
    # the control: on netns every cable end is named as the plan names it, every plane audited
    assert NetnsRuntime().kernel_port_names(plan) == {}
    whole = NetnsRuntime().cabling_scope(plan)
    assert whole.planes == tuple(Plane) and whole.skip_interfaces == frozenset({"mgmt-station"})  # the station's cable
    assert whole.nodes == tuple(n.name for n in plan.fabric.nodes) and "oob1" in whole.nodes


def test_ports_broken_out_of_one_hwsku_row_are_refused_before_anything_is_made():
    """docker-sonic-vs gives each port_config.ini row one interface: ports broken out of a row
    (a declared 64 × 800G HwSKU under 100G hosts) cannot each have their own."""
    from dataclasses import replace

    from harness.core.errors import InputError
    from harness.core.model import Hardware

    c = replace(BUILTINS["ai-cluster"](), hardware=Hardware(fe_leaf="Arista-7060X6-64PE"))
    plan = make_plan(build(c))
    before = state.labs()
    with pytest.raises(InputError) as e:
        ClabRuntime().up(plan, "brk", "ai-cluster")  # refused before the prerequisites are even looked at
    assert "fe-l1 (Arista-7060X6-64PE): Ethernet" in str(e.value) and "Arista-7060X6-64PE-C224O8" in str(e.value)
    assert state.labs() == before
    assert clab.vs_shared_interfaces(make_plan(build(BUILTINS["ai-cluster"]()))) == []


# ---------------------------------------------------------------------- the ACL: configuration only on SONiC-VS

# `show acl rule` as sonic-utilities' acl-loader prints it (tabulate "simple"; a rule's further
# match fields on rows of their own; Status from STATE_DB).
SHOW_ACL_RULE = """\
Table    Rule        Priority    Action    Match                 Status
-------  ----------  ----------  --------  --------------------  --------
FE_EDGE  R0_permit   9999        FORWARD   SRC_IP: 10.0.8.0/24   Active
                                           DST_IP: 10.0.9.0/24
                                           L4_DST_PORT: 2049
FE_EDGE  R1_deny     9998        DROP      IP_PROTOCOL: 17       Inactive
DATAACL  OTHER_RULE  9997        DROP      IP_TYPE: IPV4ANY      Active
FE_EDGE  DEFAULT     1           FORWARD   IP_TYPE: IPV4ANY
"""


def test_show_acl_rule_is_read_rule_by_rule_with_its_status():
    from harness.runtime.tenants import show_acl_rules

    assert show_acl_rules(SHOW_ACL_RULE) == {"R0_permit": "Active", "R1_deny": "Inactive", "DEFAULT": "N/A"}
    assert show_acl_rules(SHOW_ACL_RULE, "DATAACL") == {"OTHER_RULE": "Active"}
    assert show_acl_rules("") == {} and show_acl_rules("No ACL rules\n") == {}


def test_clab_says_why_its_acl_data_path_is_not_probed_and_reads_show_acl_rule():
    run, calls = fake_exec({"show acl rule": completed(0, SHOW_ACL_RULE)})
    rt = ClabRuntime(run=run)
    from harness.core.capabilities import Feature, lacks

    assert "no ACL data path" in lacks(rt.name, Feature.ACL_DATA_PATH)
    assert rt.switch_kind.acl_rules(rt.node_access("x", "fe-l1"))["R0_permit"] == "Active"
    assert calls[-1] == ["docker", "exec", "-i", "fablab-x-fe-l1", "show", "acl", "rule"]
    from harness.runtime.netns import NetnsRuntime

    assert lacks(NetnsRuntime().name, Feature.ACL_DATA_PATH) is None  # the control: nft filters
