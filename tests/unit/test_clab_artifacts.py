"""The rendered clab file against containerlab's schema and the rules its runtimes impose:
containerlab with docker-sonic-vs on one machine, and clabernetes on Kubernetes."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from ipaddress import IPv4Address, IPv4Network
from pathlib import PurePosixPath
from types import SimpleNamespace

import pytest
import yaml

from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts
from harness.core.hwsku import DEFAULT_HWSKU
from harness.render.containerlab import switch_env
from harness.render.sonic_init import CONTAINER_DIR, LOG_FILE, STATUS_FILE, STEPS
from topologies import BUILTINS

# clabverter puts a node's bound files into one ConfigMap and skips any file over this many
# bytes (clabernetes clabverter/clabverter.go maxBytesForConfigMap); Kubernetes caps a
# ConfigMap at 1 MiB.
CONFIGMAP_FILE_MAX = 950_000
CONFIGMAP_MAX = 1024 * 1024
# A Kubernetes object name part: clabernetes names a Deployment and Service per node.
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.fixture(scope="module", params=sorted(BUILTINS))
def rendered(request):
    plan = make_plan(build(BUILTINS[request.param]()))
    files = artifacts(plan)
    return plan, files, yaml.safe_load(files[f"{plan.name}.clab.yml"])


def routed_hosts(plan) -> set[str]:
    return {h.name for h in plan.hosts if h.routed}


def switch_nodes(plan, doc):
    return [(sw, doc["topology"]["nodes"][sw.name]) for sw in plan.switches]


def test_every_builtin_passes_containerlabs_schema(rendered, clab_validator):
    _, _, doc = rendered
    assert [f"{list(e.path)}: {e.message}" for e in clab_validator.iter_errors(doc)] == []


def test_every_bind_source_is_a_rendered_file_next_to_the_clab_file(rendered):
    plan, files, doc = rendered
    for name, node in doc["topology"]["nodes"].items():
        for bind in node.get("binds", []):
            source, target, mode = bind.split(":")
            assert not source.startswith("/") and ".." not in PurePosixPath(source).parts, bind
            assert source in files, bind
            # a switch's under fablab's own directory; a dual-homed host's FRR files where the FRR image reads them
            home = "/etc/frr/" if name in routed_hosts(plan) else f"{CONTAINER_DIR}/"
            assert target.startswith(home) and mode == "ro", bind


def test_every_switch_binds_its_own_three_files(rendered):
    plan, _, doc = rendered
    for sw, node in switch_nodes(plan, doc):
        assert sorted(node["binds"]) == sorted(
            f"configs/{sw.name}/{f}:{CONTAINER_DIR}/{f}:ro" for f in ("config_db.json", "frr.conf", "init.sh"))


def test_nothing_is_bound_where_docker_sonic_vs_writes(rendered):
    """start.sh renames a file onto /etc/sonic/config_db.json: a bind mount there makes it fail."""
    plan, _, doc = rendered
    for _, node in switch_nodes(plan, doc):
        for bind in node.get("binds", []):
            assert not bind.split(":")[1].startswith(("/etc/sonic/", "/var/sonic/", "/etc/frr/")), bind


def test_every_switch_starts_init_in_the_background(rendered):
    plan, _, doc = rendered
    for sw, node in switch_nodes(plan, doc):
        assert len(node["exec"]) == 1
        argv = shlex.split(node["exec"][0])  # containerlab splits exec lines the shell's way, runs no shell
        assert argv[:2] == ["bash", "-c"] and len(argv) == 3
        script = argv[2]
        assert script.startswith(f"setsid bash {CONTAINER_DIR}/init.sh ") and script.endswith("&")
        # every stream redirected: containerlab's exec waits until they close
        assert f">{LOG_FILE}" in script and "2>&1" in script and "</dev/null" in script
        assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0


def test_init_scripts_pass_bash_syntax_check(rendered, tmp_path):
    plan, files, _ = rendered
    for sw in plan.switches:
        path = tmp_path / f"{sw.name}.sh"
        path.write_text(files[f"configs/{sw.name}/init.sh"])
        run = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert run.returncode == 0, f"{sw.name}: {run.stderr}"


def test_init_scripts_pass_shellcheck(rendered, tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package: shellcheck)")
    plan, files, _ = rendered
    paths = []
    for sw in plan.switches:
        paths.append(tmp_path / f"{sw.name}.sh")
        paths[-1].write_text(files[f"configs/{sw.name}/init.sh"])
    run = subprocess.run(["shellcheck", "--shell=bash", *map(str, paths)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


def test_init_script_knows_its_switch_ports_and_hash(rendered):
    plan, files, _ = rendered
    for sw in plan.switches:
        text = files[f"configs/{sw.name}/init.sh"]
        assert f"\nNAME={sw.name}\n" in text
        assert f"\nPORTS=({' '.join(p.name for p in sw.ports)})\n" in text
        assert f"net.ipv4.fib_multipath_hash_policy={sw.hash_policy}\n" in text
        assert f"STATUS=$ROOT{STATUS_FILE}\n" in text
        for step in STEPS:
            assert f"\nbegin {step}\n" in text or f'\nbegin "{step}"\n' in text


def test_switch_sysctls_enable_ipv6_and_set_the_hash(rendered):
    plan, files, doc = rendered
    for sw, node in switch_nodes(plan, doc):
        assert {"net.ipv6.conf.all.disable_ipv6": "0", "net.ipv6.conf.default.disable_ipv6": "0",
                "net.ipv4.fib_multipath_hash_policy": str(sw.hash_policy)}.items() <= node["sysctls"].items()
        script = files[f"configs/{sw.name}/init.sh"]  # init.sh checks each one containerlab set
        assert all(f"\n  {k}={v}\n" in script for k, v in node["sysctls"].items())


def test_switch_sysctls_are_those_the_netns_runtime_sets(rendered):
    """Failover verdicts depend on them (a next hop with no carrier skipped, no DAD wait): both
    runtimes set the same, but for the hash seed, which only kernels from 6.11 have (docs)."""
    from harness.runtime.netns_setup import switch_sysctls

    plan, _, doc = rendered
    for sw, node in switch_nodes(plan, doc):
        netns = {k: str(v) for k, v in switch_sysctls(sw.name, sw.hash_policy).items()
                 if k != "net.ipv4.fib_multipath_hash_seed"}
        assert netns.items() <= node["sysctls"].items(), sw.name


def test_every_switch_config_puts_eth0_in_the_mgmt_vrf(rendered):
    plan, files, _ = rendered
    for sw in plan.switches:
        db = json.loads(files[f"configs/{sw.name}/config_db.json"])
        assert db["MGMT_VRF_CONFIG"] == {"vrf_global": {"mgmtVrfEnabled": "true"}}
        assert db["MGMT_PORT"]["eth0"]["admin_status"] == "up"


def test_init_script_quiets_every_data_interface_and_keeps_eth0_apart(rendered):
    plan, files, _ = rendered
    for sw in plan.switches:
        text = files[f"configs/{sw.name}/init.sh"]
        assert f"\nDATA_PORTS=({' '.join(p.clab for p in sw.ports)})\n" in text
        assert f"\nMGMT_IP={sw.mgmt.ip}\n" in text and "\nMGMT=eth0\n" in text


def test_hosts_do_not_forward_and_keep_routes_per_nic(rendered):
    plan, _, doc = rendered
    for h in plan.hosts:
        node = doc["topology"]["nodes"][h.name]
        hashed = {"net.ipv4.fib_multipath_hash_policy": "1"} if h.routed else {}  # over both NICs, on L4
        assert node["sysctls"] == {"net.ipv4.ip_forward": "0", "net.ipv6.conf.all.forwarding": "0",
                                   "net.core.txrehash": "0", **hashed}
        for nic in h.nics:
            for route in nic.routes:
                assert f"ip route add {route} via {nic.gateway} dev {nic.name}" in node["exec"]


def test_hwsku_env_exactly_where_the_hwsku_is_not_the_images_default(rendered):
    plan, _, doc = rendered
    for sw, node in switch_nodes(plan, doc):
        if sw.hwsku == DEFAULT_HWSKU:
            assert "env" not in node
        else:
            assert node["env"] == {"HWSKU": sw.hwsku}


def test_hwsku_env_names_another_hwsku():
    assert switch_env(SimpleNamespace(hwsku="Arista-7060X6-64PE")) == {"HWSKU": "Arista-7060X6-64PE"}
    assert switch_env(SimpleNamespace(hwsku=DEFAULT_HWSKU)) == {}


def test_mgmt_addresses_agree_between_config_db_and_clab_file(rendered):
    """The declared mgmt plan, the same in the clab file, config_db.json and the plan."""
    plan, files, doc = rendered
    subnet = IPv4Network(doc["mgmt"]["ipv4-subnet"])
    assert subnet == IPv4Network(plan.fabric.cluster.addressing.mgmt) == plan.mgmt_network
    assert doc["mgmt"]["network"] == f"fablab-{plan.name}"
    assert {IPv4Address(n["mgmt-ipv4"]) for n in doc["topology"]["nodes"].values()} == \
        {sw.mgmt.ip for sw in plan.switches} | {h.mgmt.address.ip for h in plan.hosts}
    gateway = IPv4Address(doc["mgmt"]["ipv4-gw"])
    seen = {gateway}
    for sw, node in switch_nodes(plan, doc):
        (key,) = json.loads(files[f"configs/{sw.name}/config_db.json"])["MGMT_INTERFACE"]
        port, prefix = key.split("|")
        assert port == "eth0" and prefix == f"{node['mgmt-ipv4']}/{subnet.prefixlen}"
    for name, node in doc["topology"]["nodes"].items():
        address = IPv4Address(node["mgmt-ipv4"])
        assert address in subnet and address not in seen, name
        assert address not in (subnet.network_address, subnet.broadcast_address)
        seen.add(address)


def test_two_labs_get_disjoint_mgmt_subnets(ai_plan):
    first = yaml.safe_load(artifacts(ai_plan, lab="a")["a.clab.yml"])
    taken = IPv4Network(first["mgmt"]["ipv4-subnet"])
    from harness.core.mgmtnet import lab_mgmt_network

    net = lab_mgmt_network("b", len(ai_plan.fabric.nodes), taken={taken})
    second = yaml.safe_load(artifacts(ai_plan, lab="b", mgmt_network=net)["b.clab.yml"])
    assert not taken.overlaps(IPv4Network(second["mgmt"]["ipv4-subnet"]))
    assert first["mgmt"]["network"] != second["mgmt"]["network"]


# ---------------------------------------------------------------- clabernetes


def test_clabernetes_finds_every_bound_file_next_to_the_topology(rendered):
    """clabverter reads each bind source relative to the topology file's directory and
    ships it in a ConfigMap: no host-absolute path, nothing outside that directory."""
    plan, files, doc = rendered
    for name, node in doc["topology"]["nodes"].items():
        assert "startup-config" not in node and "env-files" not in node and "license" not in node
        assert node.get("network-mode") is None
        sizes = [len(files[b.split(":")[0]].encode()) for b in node.get("binds", [])]
        assert all(size <= CONFIGMAP_FILE_MAX for size in sizes), name
        assert sum(sizes) < CONFIGMAP_MAX, name


def test_clabernetes_names_are_kubernetes_names(rendered):
    plan, _, doc = rendered
    for name in doc["topology"]["nodes"]:
        assert DNS_LABEL.match(name) and len(f"{doc['name']}-{name}") <= 63, name


def test_clabernetes_images_can_come_from_a_registry(ai_plan):
    """docker-sonic-vs is on no public registry: the cluster pulls the one the user pushed."""
    image = "registry.example.net/sonic/docker-sonic-vs:202411"
    doc = yaml.safe_load(artifacts(ai_plan, sonic_image=image)["ai-cluster.clab.yml"])
    assert doc["topology"]["kinds"]["sonic-vs"]["image"] == image
    assert all("image" not in node for node in doc["topology"]["nodes"].values())


def test_a_second_start_leaves_the_running_one_alone(ai_plan, tmp_path):
    """Runs without SONiC or root: the lock is taken before anything else happens."""
    import fcntl

    (tmp_path / "tmp").mkdir()
    script = tmp_path / "init.sh"
    script.write_text(artifacts(ai_plan)["configs/be-s1/init.sh"])
    status = tmp_path / STATUS_FILE.lstrip("/")
    status.write_text("running ports\n")
    with open(f"{status}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run = subprocess.run(["bash", str(script)], env={"PATH": "/usr/bin:/bin", "FABLAB_INIT_ROOT": str(tmp_path)},
                             capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and "already running" in run.stdout
    assert status.read_text() == "running ports\n"
