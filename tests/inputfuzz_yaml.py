"""Mutations of the YAML files (a containerlab .clab.yml, an inventory) of the kinds a hand edit
makes: maps written as lists, anchors and aliases (one to a list where a string is wanted, a
"billion laughs" bomb), duplicate keys, tabs, scalars where maps are, deep nesting, node names
YAML reads as numbers, booleans or null, tags. tests/inputfuzz.py says what the expectations mean."""
from __future__ import annotations

import json
import re
from random import Random

import yaml

from inputfuzz_text import Mut, Target

SCALARS = [5, "x", True, None, 1.5]
ESCAPED = ["gpu\\ud800", "gpu\\n01", "gpu\\t01", "gpu\\u00e901", "gpu\\x0001", "gpu\\e[31m"]
ODD_KEYS = ["123", "true", "null", "~", "1e3", "0x1F", "yes", "'0'", "2024-01-01"]


def load(t: Target):
    return yaml.safe_load(t.text)


def dump(doc, style: str = "block") -> str:
    if style == "json":
        return json.dumps(doc, indent=1)
    if style == "flow":
        return yaml.safe_dump(doc, sort_keys=False, default_flow_style=True, width=100000)
    if style == "quoted":
        return yaml.safe_dump(doc, sort_keys=False, default_style='"', width=100000)
    return yaml.safe_dump(doc, sort_keys=False, width=100000)


def _nodes(doc) -> dict:
    return doc["topology"]["nodes"] if isinstance(doc.get("topology"), dict) else doc["nodes"]


def _switch(doc, rng: Random) -> str:
    return rng.choice([n for n, b in _nodes(doc).items() if isinstance(b, dict) and b.get("kind") == "sonic-vs"])


def _host(doc, rng: Random) -> str:
    return rng.choice([n for n, b in _nodes(doc).items() if not isinstance(b, dict) or b.get("kind") != "sonic-vs"])


def bomb(levels: int = 9) -> str:
    """Billion laughs: `levels` anchors each 9 aliases of the one before (9**levels values)."""
    lines = ['x-lol0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"x-lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ both files


def redump(rng: Random, t: Target) -> Mut:
    style = rng.choice(["block", "flow", "json", "quoted"])
    return t.mut("same", dump(load(t), style), f"written again as {style} YAML")


def reorder_nodes(rng: Random, t: Target) -> Mut:
    doc = load(t)
    nodes = _nodes(doc)
    items = list(nodes.items())
    rng.shuffle(items)
    nodes.clear()
    nodes.update(items)
    return t.mut("same", dump(doc), "nodes in another order", same_output=False)


def tabs(rng: Random, t: Target) -> Mut:
    if rng.random() < 0.5:
        return t.mut("broken", re.sub(r"(?m)^  ", "\t", t.text, count=rng.randint(1, 3) * 7),
                     "tabs indenting some lines")
    return t.mut("same", re.sub(r"(?m)^(\s+[\w.-]+: [^\s#{\[\"'][^#\n]*?)$", "\\1\t", t.text, count=20),
                 "a tab after some values")


def document_markers(rng: Random, t: Target) -> Mut:
    how = rng.choice(["start", "end", "second"])
    if how == "start":
        return t.mut("same", "%YAML 1.1\n---\n" + t.text, "an explicit document start")
    if how == "end":
        return t.mut("same", t.text + "...\n", "an explicit document end")
    return t.mut("faithful", t.text + "---\nname: other\n", "a second document")


def tags(rng: Random, t: Target) -> Mut:
    tag = rng.choice(["!!python/object/apply:os.getcwd []", "!!python/name:os.system", "!Ref other",
                      "!!binary aGVsbG8=", "!!set {a, b}"])
    expect = "faithful" if tag.startswith("!Ref") else "broken"
    if t.fmt == "clab":
        return t.mut(expect, t.text.replace("kind: ", f"kind: {tag} #", 1), f"kind: {tag}")
    return t.mut(expect, t.text.replace("{address:", f"{{user: {tag}, address:", 1), f"user: {tag}")


def _value_at(t: Target, value: str) -> str:
    """The file with `value` as the first node's role label (clab) or user (inventory)."""
    if t.fmt == "clab":
        return t.text.replace("fablab.role: ", f"fablab.role: {value} #", 1)
    return t.text.replace("{address:", f"{{user: {value}, address:", 1)


def alias_bomb(rng: Random, t: Target) -> Mut:
    levels = rng.choice([6, 9])
    return Mut("broken", bomb(levels) + _value_at(t, f"*l{levels - 1}"), note=f"billion laughs ({levels} levels)",
               heavy=True)


def alias_to_list(rng: Random, t: Target) -> Mut:
    if t.fmt == "clab":
        text = t.text.replace("binds:\n", "binds: &b0\n", 1)
        field = rng.choice(["kind: sonic-vs", "mgmt-ipv4: 172.31.0.9", 'HWSKU: "Arista-7060X6-64PE-O128S2"'])
        k = text.index(field, text.index("&b0"))
        text = text[:k] + field.split(":")[0] + ": *b0" + text[k + len(field):]
        return t.mut("broken", text, f"{field.split(':')[0]} as an alias to a list")
    text = t.text.replace("defaults: {", "defaults: &d {", 1)
    line = rng.choice([line for line in t.text.splitlines() if "address:" in line])
    return t.mut("broken", text.replace(line, re.sub(r"address: [^,}]+", "address: *d", line)),
                 "address as an alias to a map")


def deep(rng: Random, t: Target) -> Mut:
    depth = rng.choice([100, 10_000, 100_000])
    open_, close = rng.choice([("[", "]"), ("{a: ", "}")])
    return Mut("broken", _value_at(t, "@@DEEP@@"), steps=({"op": "nest", "path": t.path, "find": "@@DEEP@@",
                                                           "depth": depth, "open": open_, "close": close,
                                                           "inner": "x"},),
               note=f"a value nested {depth} deep", heavy=True)


def scalar_for_map(rng: Random, t: Target) -> Mut:
    doc = load(t)
    value = rng.choice(SCALARS)
    if t.fmt == "clab":
        topo = doc["topology"]
        name = _switch(doc, rng)
        where = rng.choice(["topology", "nodes", "node", "labels", "env", "links", "link", "endpoints", "vars",
                            "kinds", "mgmt"])
        if where == "topology":
            doc["topology"] = value
        elif where in ("nodes", "links", "kinds"):
            topo[where] = value
        elif where == "mgmt":
            doc["mgmt"] = value
        elif where == "node":
            topo["nodes"][name] = value if value is not None else "x"
        elif where in ("labels", "env"):
            topo["nodes"][name][where] = value
        else:
            link = rng.choice(topo["links"])
            if where == "link":
                topo["links"][topo["links"].index(link)] = value
            else:
                link[where] = value
        given = value is not None or where in ("topology", "nodes", "node", "links", "link", "endpoints")
        return t.mut("broken" if given else "any", dump(doc), f"{where} is {value!r}")  # null: not given
    where = rng.choice(["root", "nodes", "node", "defaults", "topology", "known_hosts"])
    if where == "root":
        return t.mut("broken", dump(rng.choice([value, ["a", "b"]])), "the file is a scalar or a list")
    if where == "node":
        doc["nodes"][_host(doc, rng)] = value
    elif where == "known_hosts":
        doc["known_hosts"] = [value]
    else:
        doc[where] = value if value is not None else 7
    return t.mut("broken", dump(doc), f"{where} is {doc.get(where, value)!r}")


def odd_node_name(rng: Random, t: Target) -> Mut:
    """A node named what YAML reads as a number, a boolean, null or a date; or, in double quotes,
    with an escape (half a UTF-16 pair, a newline, a tab, NUL) its links name it by too."""
    doc = load(t)
    old = _host(doc, rng)
    escaped = rng.random() < 0.4
    new = rng.choice(ESCAPED if escaped else ODD_KEYS)
    key = f'"{new}"' if escaped else new
    pattern = re.compile(rf"(?m)^(\s+){re.escape(old)}:")
    text = pattern.sub(lambda m: f"{m.group(1)}{key}:", t.text, count=1)
    if t.fmt == "clab":
        text = text.replace(f'"{old}:', f'"{new.strip(chr(39))}:')
        return t.mut("any", text, f"node {old} named {key}")
    return t.mut("broken", text, f"node {old} named {key} (no such node)")


def duplicate_key(rng: Random, t: Target) -> Mut:
    lines = t.text.split("\n")
    if t.fmt == "inventory":
        i = rng.choice([k for k, line in enumerate(lines) if "address:" in line])
        copy = re.sub(r"address: [\d.]+", "address: 10.9.9.9", lines[i])
        return t.mut("broken", "\n".join(lines[:i + 1] + [copy] + lines[i + 1:]), f"{lines[i].split(':')[0]} twice")
    nodes_at = lines.index("  nodes:")
    starts = [k for k, line in enumerate(lines) if k > nodes_at and re.match(r"^    [\w.-]+:$", line)]
    k = rng.randrange(len(starts) - 1)
    block = lines[starts[k]:starts[k + 1]]
    if rng.random() < 0.5:
        copy = [re.sub(r"mgmt-ipv4: .*", "mgmt-ipv4: 172.31.9.9", line) for line in block]
        return t.mut("broken", "\n".join(lines[:starts[k + 1]] + copy + lines[starts[k + 1]:]),
                     f"node {block[0].strip()} twice, the second differently")
    field = next(i for i, line in enumerate(block) if "kind:" in line or "mgmt-ipv4:" in line)
    j = starts[k] + field
    return t.mut("any", "\n".join(lines[:j + 1] + [lines[j]] + lines[j + 1:]), f"{lines[j].strip()} twice")


def map_as_list(rng: Random, t: Target) -> Mut:
    """A map written as a list: `- KEY=VALUE` (what docker-compose and containerlab's env take)
    or `- {KEY: VALUE}`."""
    doc = load(t)
    if t.fmt == "inventory":
        field = rng.choice(["nodes", "defaults"])
        if field == "nodes":
            doc["nodes"] = [{k: v} if rng.random() < 0.5 else {"name": k, **v} for k, v in doc["nodes"].items()]
        else:
            doc["defaults"] = [{k: v} for k, v in doc["defaults"].items()]
        return t.mut("faithful", dump(doc), f"{field} written as a list")
    topo = doc["topology"]
    field = rng.choice(["env", "labels", "kinds", "env-all"])
    if field == "kinds":
        topo["kinds"] = [{k: v} for k, v in topo["kinds"].items()] if rng.random() < 0.5 else list(topo["kinds"])
    else:
        for name in [_switch(doc, rng)] if field != "env-all" else list(topo["nodes"]):
            body = topo["nodes"][name]
            sub = "labels" if field == "labels" else "env"
            if sub in body:
                body[sub] = [f"{k}={v}" for k, v in body[sub].items()]
    return t.mut("faithful", dump(doc), f"{field} written as a list")


# ------------------------------------------------------------------ containerlab only


def clab_layout(rng: Random, t: Target) -> Mut | None:
    """What containerlab merges: kind and env from defaults, kinds or groups, labels by anchors."""
    if t.fmt != "clab":
        return None
    doc = load(t)
    topo, how = doc["topology"], rng.choice(["defaults", "kinds-env", "groups", "anchors", "merge"])
    switches = [n for n, b in topo["nodes"].items() if b.get("kind") == "sonic-vs"]
    if how == "defaults":
        topo["defaults"] = {"kind": "sonic-vs"}
        for n in switches:
            del topo["nodes"][n]["kind"]
        return t.mut("same", dump(doc), "the switches' kind from topology.defaults")
    if how == "kinds-env":
        sku = topo["nodes"][switches[0]]["env"]["HWSKU"]
        topo["kinds"]["sonic-vs"]["env"] = {"HWSKU": sku}
        for n in switches:
            if topo["nodes"][n]["env"] == {"HWSKU": sku}:
                del topo["nodes"][n]["env"]
        return t.mut("same", dump(doc), "HWSKU from topology.kinds.sonic-vs.env")
    if how == "groups":
        topo["groups"] = {"switches": {"kind": "sonic-vs"}}
        for n in switches:
            del topo["nodes"][n]["kind"]
            topo["nodes"][n]["group"] = "switches"
        return t.mut("faithful", dump(doc), "the switches' kind from a group")
    if how == "anchors":
        for key in ("sysctls", "labels", "env"):
            seen: dict = {}
            for body in topo["nodes"].values():
                if key in body:
                    body[key] = seen.setdefault(json.dumps(body[key], sort_keys=True), body[key])
        return t.mut("same", dump(doc), "equal maps written once, as anchors and aliases")
    block = "      labels:\n        fablab.role: be-leaf\n        fablab.plane: be\n"
    if t.text.count(block) < 2:
        return None
    first = t.text.index(block) + len(block)
    text = t.text[:first].replace(block, "      labels: &beleaf\n" + block.split("\n", 1)[1]) + \
        t.text[first:].replace(block, "      labels:\n        <<: *beleaf\n")
    return t.mut("same", text, "labels merged from an anchor (<<: *beleaf)")


def clab_links(rng: Random, t: Target) -> Mut | None:
    if t.fmt != "clab":
        return None
    doc = load(t)
    links, how = doc["topology"]["links"], rng.choice(["endpoint", "dup", "extended", "reorder", "repeat", "count"])
    link = rng.choice(links)
    if how == "endpoint":
        i = rng.randrange(2)
        end = link["endpoints"][i]
        node = end.split(":")[0]
        bad = rng.choice([node, "nosuch:eth1", ":eth1", node + ":", 5, None, ["a", "b"]] if i == 0 else
                         [node + ":eth999", node + ":eth0", node + ":Ethernet9999", node + ":eth-1", node + ":eth1.5"])
        link["endpoints"][i] = bad
        return t.mut("broken", dump(doc), f"endpoint {end} -> {bad!r}")
    if how == "count":
        link["endpoints"] = rng.choice([link["endpoints"][:1], link["endpoints"] * 2, [], "a:eth1"])
        return t.mut("broken", dump(doc), f"a link's endpoints: {link['endpoints']!r}")
    if how == "dup":
        links.insert(rng.randrange(len(links)), dict(link))
        return t.mut("broken", dump(doc), f"the link {link['endpoints']} twice")
    if how == "extended":
        for x in links:
            x["type"] = "veth"
            x["endpoints"] = [{"node": e.split(":")[0], "interface": e.split(":")[1]} for e in x["endpoints"]]
        return t.mut("same", dump(doc), "links in containerlab's extended form")
    if how == "reorder":
        rng.shuffle(links)
        return t.mut("same", dump(doc), "links in another order", same_output=False)
    line = f'    - endpoints: ["{link["endpoints"][0]}", "{link["endpoints"][1]}"]\n'
    return Mut("broken", steps=({"op": "grow", "path": t.path, "after": line, "unit": line, "bytes": 10_000_000},),
               note="a link repeated to 10 MB", heavy=True)


def clab_values(rng: Random, t: Target) -> Mut | None:
    if t.fmt != "clab":
        return None
    doc = load(t)
    topo = doc["topology"]
    name = _switch(doc, rng)
    node = topo["nodes"][name]
    how = rng.choice(["hwsku", "mgmt", "speed", "speed-same", "kind", "subnet", "top-key", "mgmt-gone"])
    if how == "hwsku":
        node["env"]["HWSKU"] = rng.choice(["NoSuch", 5, "", "../../etc", ["a"], None])
        return t.mut("broken", dump(doc), f"{name} HWSKU {node['env']['HWSKU']!r}")
    if how == "mgmt":
        node["mgmt-ipv4"] = rng.choice(["172.31.0.300", "abc", "172.31.0.8/33", 5, "172.31.0.2", "::1::"])
        return t.mut("broken", dump(doc), f"{name} mgmt-ipv4 {node['mgmt-ipv4']!r}")
    if how == "mgmt-gone":
        del node["mgmt-ipv4"]
        return t.mut("any", dump(doc), f"{name} without mgmt-ipv4")
    if how == "subnet":
        doc["mgmt"]["ipv4-subnet"] = rng.choice(["172.31.0.0/33", "abc", "172.31.0.0", 20])
        return t.mut("broken", dump(doc), f"mgmt.ipv4-subnet {doc['mgmt']['ipv4-subnet']!r}")
    link = rng.choice(topo["links"])
    if how == "speed":
        link["vars"]["speed"] = rng.choice(["abc", "-400G", "1e9", 0, "nan", -1, "400GG", True, [400]])
        return t.mut("broken", dump(doc), f"link speed {link['vars']['speed']!r}")
    if how == "speed-same":
        g = int(str(link["vars"]["speed"]).rstrip("G"))
        link["vars"]["speed"] = rng.choice([f"{g}Gbps", f"{g} Gb/s", f"{g * 1000}M"])
        return t.mut("same", dump(doc), f"link speed {link['vars']['speed']!r}")
    if how == "kind":
        node["kind"] = rng.choice([True, "yes", "SONIC-VS", "sonic_vs", 1])
        return t.mut("broken", dump(doc), f"{name} kind {node['kind']!r}")
    key = rng.choice(["Topology", "topologie", " topology"])
    doc[key] = doc.pop("topology")
    return t.mut("broken", dump(doc), f"topology written {key!r}")


# ------------------------------------------------------------------ inventory only


def inventory_values(rng: Random, t: Target) -> Mut | None:
    if t.fmt != "inventory":
        return None
    doc = load(t)
    name = rng.choice(list(doc["nodes"]))
    node = doc["nodes"][name]
    how = rng.choice(["address", "port", "kind", "field", "node", "topology", "sudo", "known_hosts", "key",
                      "empty", "merge", "good"])
    bad = {"address": ["300.1.1.1", "abc", ["172.31.0.8"], {"a": 1}, 5, "", "172.31.0.8/20", None],
           "port": [0, 70000, -1, True, 22.5, "ssh", "22"], "kind": ["cisco", 5, ["sonic"], "SONiC", ""],
           "sudo": ["yes", "maybe", 1, "true", None], "key": [{"path": "x"}, ["a"], 5, ""]}
    if how in bad:
        node[how] = rng.choice(bad[how])
        faithful = (how, node[how]) in (("address", "172.31.0.8/20"), ("port", "22"), ("kind", "SONiC"))
        expect = "any" if (how, node[how]) == ("sudo", None) else "faithful" if faithful else "broken"
        return t.mut(expect, dump(doc), f"{name}.{how} = {node[how]!r}")
    if how == "field":
        node[rng.choice(["adress", "usr", "Port", "password", "kind "])] = "x"
        return t.mut("broken", dump(doc), f"{name}: a field that is none")
    if how == "node":
        doc["nodes"][rng.choice(["nosuch", "be-r9", "GPU01", "gpu01 "])] = dict(node)
        return t.mut("broken", dump(doc), "a node the topology does not have")
    if how == "topology":
        doc["topology"] = rng.choice([5, ["rail-only"], None, "", "nosuch", "nosuch.py", "rail-only.py", "ai cluster"])
        return t.mut("broken", dump(doc), f"topology {doc['topology']!r}")
    if how == "known_hosts":
        doc["known_hosts"] = rng.choice(["/nonexistent/known_hosts", ["a"], "", 5])
        return t.mut("broken", dump(doc), f"known_hosts {doc['known_hosts']!r}")
    if how == "empty":
        doc["nodes"] = rng.choice([{}, None, []])
        return t.mut("broken", dump(doc), f"nodes {doc['nodes']!r}")
    if how == "merge":
        text = t.text.replace("defaults: {", "defaults: &d {", 1)
        text = re.sub(r"(?m)^(  \S+: \{)address", r"\1<<: *d, address", text, count=3)
        return t.mut("same", text, "nodes merging the defaults (<<: *d)")
    node["sudo"] = True
    node["port"] = 2222
    return t.mut("any", dump(doc), f"{name} on port 2222 with sudo")


def odd_scalars(rng: Random, t: Target) -> Mut:
    """Escapes YAML takes in a double-quoted scalar (half a UTF-16 pair, NUL, ESC), a key that is
    a list or a map, numbers YAML reads in other bases."""
    how = rng.choice(["surrogate", "control", "list-key", "map-key", "base"])
    if how in ("surrogate", "control"):
        esc = rng.choice(["\\ud800", "\\udc80"] if how == "surrogate" else ["\\0", "\\e[31m", "\\x07", "\\L"])
        return t.mut("any", _value_at(t, f'"{esc}x"'), f"a value with {esc}")
    if how in ("list-key", "map-key"):
        key = "[gpu, 09]" if how == "list-key" else "{a: 1}"
        if t.fmt == "inventory":
            text = t.text.replace("\nnodes:\n", f"\nnodes:\n  ? {key}\n  : {{address: 10.9.9.9}}\n", 1)
        else:
            text = t.text.replace("  nodes:\n", f"  nodes:\n    ? {key}\n    : {{kind: linux}}\n", 1)
        return t.mut("broken" if t.fmt == "inventory" else "any", text, f"a node whose name is {key}")
    if t.fmt == "inventory":
        return t.mut("same", t.text.replace("{address:", "{port: 0x16, address:", 1), "port: 0x16 (22)")
    return t.mut("any", re.sub(r"speed: (\d+)G", lambda m: f"speed: 0o{int(m.group(1)) * 1000:o}", t.text, count=1),
                 "a speed in octal (YAML 1.1 reads 0o as a string)")


COMMON = [redump, reorder_nodes, tabs, document_markers, tags, alias_bomb, alias_to_list, deep, scalar_for_map,
          odd_node_name, duplicate_key, map_as_list, odd_scalars]
CLAB = COMMON + [clab_layout, clab_links, clab_values] * 3
INVENTORY = COMMON + [inventory_values] * 4
