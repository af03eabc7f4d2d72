"""`fablab render --clabernetes`: the clab file as a clabernetes Topology (with its bound files
as ConfigMaps) that clabernetes' own CRD schema accepts, that names every VXLAN tunnel within
Linux's 15 characters, and that mounts every bound file where containerlab will look for it."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.core.model import build
from harness.core.plan import make_plan
from harness.render import artifacts
from harness.render.clabernetes import API_VERSION, IFNAMSIZ, TUNNEL, cluster_names, interfaces, yaml_text
from topologies import BUILTINS

ROOT = Path(__file__).resolve().parents[2]
DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")  # a Service name (RFC 1035): clabernetes names one per node
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
OBJECT_MAX = 1024 * 1024  # etcd's request limit is 1.5 MiB; a ConfigMap's data 1 MiB


@pytest.fixture(scope="module")
def crd(reference):
    path = reference / "clabernetes" / "topologies.crd.yaml"
    if not path.exists():
        pytest.skip(f"clabernetes' CRD not found at {path} (set FABLAB_REFERENCE to the reference folder)")
    import jsonschema

    doc = yaml.safe_load(path.read_text())
    version = next(v for v in doc["spec"]["versions"] if v["name"] == API_VERSION.split("/")[1])
    assert doc["spec"]["group"] == API_VERSION.split("/")[0] and doc["spec"]["names"]["kind"] == "Topology"
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


@pytest.fixture(scope="module", params=sorted(BUILTINS))
def rendered(request):
    plan = make_plan(build(BUILTINS[request.param]()))
    files = artifacts(plan, clabernetes=True)
    text = files[f"{plan.name}.clabernetes.yaml"]
    docs = list(yaml.safe_load_all(text))
    return plan, files, text, docs


def topology_of(docs):
    (topo,) = [d for d in docs if d["kind"] == "Topology"]
    return topo


def test_the_topology_passes_clabernetes_crd_schema(rendered, crd):
    _, _, _, docs = rendered
    topo = topology_of(docs)
    assert topo["apiVersion"] == API_VERSION
    assert [f"{list(e.path)}: {e.message}" for e in crd.iter_errors(topo)] == []


def test_the_crd_schema_can_say_no(rendered, crd):
    """Controls: what clabernetes would refuse is refused here too."""
    _, _, _, docs = rendered
    topo = topology_of(docs)
    for broken in ({**topo, "spec": {**topo["spec"], "connectivity": "gre"}},
                   {**topo, "spec": {k: v for k, v in topo["spec"].items() if k != "definition"}},
                   {**topo, "spec": {**topo["spec"], "definition": {"containerlab": {"name": "x"}}}}):
        assert list(crd.iter_errors(broken)), broken["spec"].keys()


def test_the_definition_is_a_clab_file_containerlab_accepts(rendered, clab_validator):
    plan, _, _, docs = rendered
    inner = yaml.safe_load(topology_of(docs)["spec"]["definition"]["containerlab"])
    assert [f"{list(e.path)}: {e.message}" for e in clab_validator.iter_errors(inner)] == []
    assert len(inner["topology"]["nodes"]) == len(plan.switches) + len(plan.hosts)


def test_every_tunnel_name_fits_linux(rendered):
    plan, _, _, docs = rendered
    inner = yaml.safe_load(topology_of(docs)["spec"]["definition"]["containerlab"])
    for link in inner["topology"]["links"]:
        for end in link["endpoints"]:
            node, iface = end.split(":")
            assert len(TUNNEL.format(node=node, iface=iface)) <= IFNAMSIZ, end
            assert len(f"{node}-{iface}") <= IFNAMSIZ  # the launcher's host-side veth


def test_a_renamed_node_keeps_its_plan_name_as_a_label(rendered):
    plan, _, _, docs = rendered
    nodes = yaml.safe_load(topology_of(docs)["spec"]["definition"]["containerlab"])["topology"]["nodes"]
    names = cluster_names(plan)
    assert len(set(names.values())) == len(names)
    for original, name in names.items():
        assert (nodes[name]["labels"].get("fablab.node") == original) is (name != original)
        assert DNS_LABEL.match(name) and len(f"{plan.name}-{name}-vx") <= 63, name


def test_the_plan_names_alone_would_overflow_where_nodes_were_renamed():
    """The control: ai-cluster's rail leaves (be-g1-r0, eth33) need renaming; its spines do not."""
    plan = make_plan(build(BUILTINS["ai-cluster"]()))
    ifaces, names = interfaces(plan), cluster_names(plan)
    assert len(TUNNEL.format(node="be-g1-r0", iface=max(ifaces["be-g1-r0"], key=len))) > IFNAMSIZ
    assert names["be-g1-r0"] == "beg1r0" and names["be-s1"] == "be-s1" and names["gpu01"] == "gpu01"


def test_every_bound_file_is_mounted_at_its_bind_source_from_a_configmap(rendered):
    plan, files, _, docs = rendered
    topo = topology_of(docs)
    maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    mounts = topo["spec"]["deployment"]["filesFromConfigMap"]
    nodes = yaml.safe_load(topo["spec"]["definition"]["containerlab"])["topology"]["nodes"]
    for name, node in nodes.items():
        by_path = {m["filePath"]: m for m in mounts.get(name, [])}
        assert len(by_path) == len(node.get("binds", [])), name
        for bind in node.get("binds", []):
            source = bind.split(":")[0]
            m = by_path[source]  # relative: under /clabernetes, next to the topology file
            assert maps[m["configMapName"]]["data"][m["configMapPath"]] == files[source]  # byte for byte
            assert m["mode"] == ("execute" if source.endswith(".sh") else "read")


def test_configmaps_are_kubernetes_objects_that_fit(rendered):
    plan, _, text, docs = rendered
    for d in docs:
        assert DNS_SUBDOMAIN.match(d["metadata"]["name"]) and len(d["metadata"]["name"]) <= 253
        assert d["metadata"]["labels"]["fablab.lab"] == plan.name
        if d["kind"] == "ConfigMap":
            assert d["apiVersion"] == "v1" and all(CONFIGMAP_KEY.match(k) for k in d["data"])
            assert all(isinstance(v, str) for v in d["data"].values())
        assert len(json.dumps(d).encode()) < OBJECT_MAX, d["metadata"]["name"]


@pytest.mark.parametrize("text", ["plain\n", "two\nlines\n", "  leading space\n", "no newline", "tab\there\n",
                                  "blank\n\nline\n", "ends\n\n", "", "\n", 'quote " and \\ back\n', "é ü\n"])
def test_every_file_text_comes_back_byte_for_byte(text):
    assert yaml.safe_load(f"k: {yaml_text(text, 2)}\n")["k"] == text


def test_fablab_render_clabernetes_writes_the_topology(tmp_path):
    run = subprocess.run([sys.executable, "-m", "harness.cli", "render", "ai-cluster", "--clabernetes", "-o",
                          str(tmp_path / "r")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    docs = list(yaml.safe_load_all((tmp_path / "r" / "ai-cluster.clabernetes.yaml").read_text()))
    assert topology_of(docs)["metadata"]["name"] == "ai-cluster"
    assert "ai-cluster.clabernetes.yaml" in json.loads((tmp_path / "r" / ".fablab-render.json").read_text())["files"]
