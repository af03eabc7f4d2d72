"""Mutations of the CSV files (a cable list and its devices.csv, sonic-mgmt's links and devices,
numbering.csv) of the kinds a spreadsheet export or a hand edit makes. tests/inputfuzz.py says
what the expectations mean."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from random import Random

from inputfuzz_text import Mut, Target


@dataclass(frozen=True)
class Spec:
    required: tuple[str, ...]
    ends: tuple[tuple[str, str], ...] = ()  # (device column, port column) of each end of a cable
    name: str = ""  # the devices file's name column
    speed: str = ""
    ip: str = ""
    role: str = ""
    hwsku: str = ""


SPECS = {
    "cable-csv": Spec(("a_device", "a_port", "b_device", "b_port"), (("a_device", "a_port"), ("b_device", "b_port")),
                      speed="speed"),
    "sonic-links": Spec(("StartDevice", "StartPort", "EndDevice", "EndPort"),
                        (("StartDevice", "StartPort"), ("EndDevice", "EndPort")), speed="BandWidth"),
    "devices-csv": Spec(("name",), name="name", ip="mgmt_ip", role="role", hwsku="hwsku"),
    "sonic-devices": Spec(("Hostname",), name="Hostname", ip="ManagementIp", role="Role", hwsku="HwSku"),
    "numbering": Spec(("device", "item", "value"), name="device", ip="value"),
}
BAD_SPEEDS = ["abc", "-400", "1e9", "0", "nan", "inf", "400X", "400GG", "9" * 30, "400 G b", "\u00bd", "-0"]
BAD_IPS = ["172.31.0.300/20", "172.31.0.2/33", "abc", "172.31.0.2/20/1", "::1/200", "300.1.1.1/20", "172.31.0.2/",
           "172.31.00.2/20", "0.0.0.0/0", "255.255.255.255/32", "224.0.0.5/20", "127.0.0.1/8", "172.31.0.0/20",
           "172.31.15.255/20", "172.31.0.2/-1", "1.2.3.4.5/20"]
BAD_PORTS = ["Ethernet9999", "Ethernet", "Ethernet-4", "Ethernet0/1", "Ethernet 0", "Ethernet4x", "Ethernet1.5",
             "Ethernet" + "9" * 40, "Port0", "\u0415thernet0"]  # the last: a Cyrillic Е
BAD_ASNS = ["99999999999", "-1", "0", "AS65101", "65101.5", "4294967295", "0x10", "6.5e4", "", "\u0666\u0665\u0661"]
ODD_NAMES = ["0", "true", "null", "1e3", "x" * 64, "gpu-01.rack7", "g\u00fcpu01", "gpu 01", "gpu/01", "gpu:01",
             "-gpu01", "GPU01", "~", "gpu01;rm -rf", "'gpu01'",
             "gpu\x1b[2J\x1b]0;owned\x0701", "gpu\r01"]


def parse(text: str, delimiter: str = ",") -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    return rows[0], rows[1:]


def write(header: list[str], rows: list[list[str]], **kw) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", **kw)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _col(header: list[str], name: str) -> int:
    return [h.strip().lower() for h in header].index(name.lower())


def _table(t: Target) -> tuple[Spec, list[str], list[list[str]]]:
    header, rows = parse(t.text)
    return SPECS[t.fmt], header, rows


def _set(t: Target, column: str, value_of, pick=None, rng: Random | None = None) -> tuple[str, str] | None:
    """The file with one cell of `column` (in a row `pick` accepts) set to value_of(old)."""
    spec, header, rows = _table(t)
    if not column:
        return None
    c = _col(header, column)
    candidates = [r for r in rows if len(r) > c and (pick is None or pick(header, r))]
    if not candidates:
        return None
    row = rng.choice(candidates)
    old = row[c]
    row[c] = value_of(old)
    return write(header, rows), f"{column} {old!r} -> {row[c]!r} on {row[0]}"


# ------------------------------------------------------------------ neutral: same plan


def blank_rows(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    for _ in range(rng.randint(1, 5)):
        rows.insert(rng.randint(0, len(rows)), [] if rng.random() < 0.5 else [""] * len(header))
    return t.mut("same", write(header, rows), "blank rows, some as ,,,, (Excel's empty row)")


def comment_rows(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    for _ in range(rng.randint(1, 4)):
        rows.insert(rng.randint(0, len(rows)), [rng.choice(["# moved in Q3", "#", "# rack B, row 4, a,b"])])
    return t.mut("same", write(header, rows), "comment rows under the header")


def quote_all(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    return t.mut("same", write(header, rows, quoting=csv.QUOTE_ALL), "every cell quoted")


def shuffle_rows(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    rng.shuffle(rows)
    return t.mut("same", write(header, rows), "rows in another order", same_output=False)


def reorder_columns(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    order = list(range(len(header)))
    rng.shuffle(order)
    return t.mut("same", write([header[i] for i in order], [[r[i] for i in order if i < len(r)] for r in rows]),
                 f"columns in the order {[header[i] for i in order]}")


def header_case(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    how = rng.choice([str.upper, str.title, lambda h: f" {h} "])
    return t.mut("same", write([how(h) for h in header], rows), f"header written {[how(h) for h in header][:3]}")


def padded_cells(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    return t.mut("same", write(header, [[f" {c}  " if c else c for c in r] for r in rows]), "blanks around cells")


def extra_column(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    name = rng.choice(["rack", "Asset Tag", "notes", "VlanID2"])
    values = ["B4", "", "row 3, slot 7", "\u2713", "=SUM(A1:A2)"]
    return t.mut("same", write(header + [name], [r + [rng.choice(values)] for r in rows]), f"an extra column {name}")


def trailing_empty_column(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    return t.mut("same", write(header + [""], [r + [""] for r in rows]), "a trailing empty column (a,b,c,)")


def multiline_note(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    return t.mut("same", write(header + ["notes"], [r + [rng.choice(["", "line one\nline two", "a\r\nb"])]
                                                     for r in rows]), "a notes column, quoted cells with newlines")


def excel_sep_line(rng: Random, t: Target) -> Mut:
    return t.mut("faithful", "sep=,\n" + t.text, "Excel's sep=, first line")


def other_separator(rng: Random, t: Target) -> Mut:
    sep = rng.choice([";", "\t", "|"])
    header, rows = parse(t.text)
    return t.mut("faithful", write(header, rows, delimiter=sep), f"{sep!r} as the separator (a European Excel)")


def excel_text_cells(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    how = rng.choice([lambda c: f'="{c}"', lambda c: f"'{c}"])
    return t.mut("any", write(header, [[how(c) if c else c for c in r] for r in rows]), "cells as Excel text formulas")


# ------------------------------------------------------------------ broken or odd structure


def drop_column(rng: Random, t: Target) -> Mut:
    spec, header, rows = _table(t)
    c = rng.randrange(len(header))
    required = header[c].strip() in spec.required
    return t.mut("broken" if required else "any", write(header[:c] + header[c + 1:], [r[:c] + r[c + 1:] for r in rows]),
                 f"column {header[c]} dropped")


def short_row(rng: Random, t: Target) -> Mut | None:
    spec, header, rows = _table(t)
    if not rows:
        return None
    row = rng.choice(rows)
    keep = rng.randrange(1, len(row))  # no cell left is a blank row, skipped: a cable removed
    lost = [h.strip() for h in header[keep:len(row)]]
    del row[keep:]
    broken = any(h in spec.required for h in lost) and not (t.fmt == "numbering" and keep == 0)
    return t.mut("broken" if broken else "any", write(header, rows), f"a row cut to {keep} cells (lost {lost})")


def long_row(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    row = rng.choice(rows)
    row += ["x"] * rng.randint(1, 5)
    return t.mut("any", write(header, rows), f"a row of {len(row)} cells under a header of {len(header)}")


def newline_in_name(rng: Random, t: Target) -> Mut:
    spec, header, rows = _table(t)
    col = spec.ends[0][0] if spec.ends else spec.name
    fixed = _set(t, col, lambda v: v[:2] + rng.choice(["\n", "\r\n", "\n\n"]) + v[2:], rng=rng)
    return t.mut("broken", fixed[0], f"a newline in a name: {fixed[1]}")


def duplicate_row(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    i = rng.randrange(len(rows))
    rows.insert(rng.randint(0, len(rows)), list(rows[i]))
    return t.mut("any" if t.fmt == "numbering" else "broken", write(header, rows), f"row {i + 2} twice")


def repeat_rows(rng: Random, t: Target) -> Mut:
    """A row repeated to 1 or 10 MB (thousands of `cabled twice`), or rows each a problem of its own
    (`#` numbered: thousands of devices no devices file lists)."""
    lines = t.text.split("\n")
    line = lines[rng.randint(1, len(lines) - 2)] + "\n"
    size = rng.choice([1_000_000, 10_000_000])
    numbered = rng.random() < 0.4
    if numbered:
        first, _, rest = line.partition(",")
        line = f"{first}x#,{rest}"
    devices = t.fmt in ("devices-csv", "sonic-devices")  # devices listed and not cabled may be ignored
    expect = "broken" if (numbered if t.fmt == "numbering" else not (devices and numbered)) else "any"
    return Mut(expect, steps=({"op": "grow", "path": t.path, "after": line if
               not numbered else lines[0] + "\n", "unit": line, "bytes": size, "numbered": numbered},),
               note=f"{line.strip()!r} repeated to {size:,} bytes", heavy=True)


def huge_cell(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    text = write(header + ["notes"], [r + ["n"] for r in rows])
    return Mut("any", text, steps=({"op": "grow", "path": t.path, "after": ",n\n", "unit": "x",
                                    "bytes": 5_000_000},), note="a 5 MB notes cell", heavy=True)


def many_columns(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    n = rng.choice([1000, 20000])
    return t.mut("any", write(header + [f"c{i}" for i in range(n)], [r + ["1"] * n for r in rows]),
                 f"{n} extra columns")


def empty_required_cell(rng: Random, t: Target) -> Mut | None:
    spec = SPECS[t.fmt]
    col = rng.choice(spec.required)
    fixed = _set(t, col, lambda v: rng.choice(["", " ", "\t"]), rng=rng)
    return fixed and t.mut("broken", fixed[0], f"empty {fixed[1]}")


# ------------------------------------------------------------------ values


def _switch_end(t: Target):
    switches = set(t.info.switches)
    spec = SPECS[t.fmt]
    return lambda header, row: any(row[_col(header, d)] in switches for d, _ in spec.ends)


def bad_port(rng: Random, t: Target) -> Mut | None:
    spec, header, rows = _table(t)
    data = set(t.info.switches)  # a switch's data ports: its mgmt port (to the OOB switch) is mgmt_port's
    if t.fmt == "numbering":
        fixed = _set(t, "item", lambda v: rng.choice(BAD_PORTS), lambda h, r: r[1].startswith("Ethernet"), rng)
        return fixed and t.mut("broken", fixed[0], f"no such port: {fixed[1]}")
    if not spec.ends:
        return None
    oob = {d for d, r in t.info.roles.items() if r == "oob-switch"}
    cables = [r for r in rows if not {r[_col(header, d)] for d, _ in spec.ends} & oob]
    row = rng.choice([r for r in cables if any(r[_col(header, d)] in data for d, _ in spec.ends)])
    dev, port = next((d, p) for d, p in spec.ends if row[_col(header, d)] in data)
    old, row[_col(header, port)] = row[_col(header, port)], rng.choice(BAD_PORTS)
    return t.mut("broken", write(header, rows), f"{row[_col(header, dev)]} port {old} -> {row[_col(header, port)]!r}")


def mgmt_port(rng: Random, t: Target) -> Mut | None:
    """A switch's end of its mgmt cable named otherwise (SONiC's mgmt port is eth0)."""
    spec, header, rows = _table(t)
    if not spec.ends:
        return None
    oob = {d for d, r in t.info.roles.items() if r == "oob-switch"}
    row = rng.choice([r for r in rows if r[_col(header, spec.ends[1][0])] in oob
                      and r[_col(header, spec.ends[0][0])] in t.info.switches])
    c = _col(header, spec.ends[0][1])
    old, row[c] = row[c], rng.choice(["Ethernet9999", "mgmt0", "eth1", "\u0435th0", "Management0"])
    return t.mut("any", write(header, rows), f"{row[0]}'s mgmt port {old} -> {row[c]!r}")


def header_only(rng: Random, t: Target) -> Mut:
    header, rows = parse(t.text)
    how = rng.choice(["header only", "header twice", "a column twice"])
    if how == "header only":  # a numbering.csv that numbers nothing leaves fablab's numbering
        return t.mut("broken" if t.fmt != "numbering" else "any", write(header, []), how)
    if how == "header twice":
        rows.insert(rng.randrange(len(rows)), list(header))
        return t.mut("broken" if t.fmt != "numbering" else "any", write(header, rows), how)
    c = rng.randrange(len(header))
    return t.mut("any", write(header + [header[c]], [r + ["x"] for r in rows]), f"{how}: {header[c]}")


def unclosed_quote(rng: Random, t: Target) -> Mut:
    lines = t.text.split("\n")
    i = rng.randrange(1, len(lines) - 1)
    lines[i] = '"' + lines[i]
    return t.mut("any", "\n".join(lines), f"an unclosed quote on line {i + 1}")


def ignored_columns(rng: Random, t: Target) -> Mut | None:
    header, rows = parse(t.text)
    known = {"plane", "rail", "media", "vlanid", "vlanmode", "type"}
    cols = [i for i, h in enumerate(header) if h.strip().lower() in known]
    if not cols:
        return None
    c = rng.choice(cols)
    for r in rows:
        if len(r) > c and rng.random() < 0.3:
            r[c] = rng.choice(["xx", "-1", "abc", "99999999999", "\u2603", "1e9"])
    return t.mut("any", write(header, rows), f"odd values in {header[c]}")


def self_loop(rng: Random, t: Target) -> Mut | None:
    spec, header, rows = _table(t)
    if not spec.ends:
        return None
    row = rng.choice(rows)
    row[_col(header, spec.ends[1][0])] = row[_col(header, spec.ends[0][0])]
    return t.mut("broken", write(header, rows), f"a cable from {row[0]} to itself")


def unknown_device(rng: Random, t: Target) -> Mut | None:
    spec = SPECS[t.fmt]
    col = spec.ends[rng.randrange(2)][0] if spec.ends else spec.name
    if t.fmt in ("devices-csv", "sonic-devices"):
        return None  # a device listed and not cabled is another question
    new = rng.choice(["nosuch", "gpu99", "be-r9", "gpu01 ", "gpu1"])
    fixed = _set(t, col, lambda v: new, rng=rng)
    return fixed and t.mut("broken" if new.strip() != "gpu01" else "any", fixed[0], f"unknown device: {fixed[1]}")


def speed(rng: Random, t: Target) -> Mut | None:
    spec = SPECS[t.fmt]
    if not spec.speed:
        return None
    bare_mbps = t.fmt == "sonic-links"
    if rng.random() < 0.6:
        fixed = _set(t, spec.speed, lambda v: rng.choice(BAD_SPEEDS), rng=rng)
        return t.mut("broken", fixed[0], f"not a speed: {fixed[1]}")

    def same(v: str) -> str:
        g = int(v) // 1000 if bare_mbps else int(v.rstrip("G"))
        forms = [f"{g}G", f"{g}Gbps", f"{g} Gb/s", f"{g}gbps", f"{g * 1000}M", f" {g}G "]
        forms += [str(g * 1000)] if g * 1000 >= 1000 and not bare_mbps else []
        return rng.choice(forms)
    fixed = _set(t, spec.speed, same, lambda h, r: bool(r[_col(h, spec.speed)]), rng)
    return t.mut("same", fixed[0], f"the same speed said another way: {fixed[1]}")


def bad_address(rng: Random, t: Target) -> Mut | None:
    spec = SPECS[t.fmt]
    if not spec.ip:
        return None
    pick = (lambda h, r: r[1] != "asn") if t.fmt == "numbering" else (lambda h, r: bool(r[_col(h, spec.ip)]))
    fixed = _set(t, spec.ip, lambda v: rng.choice(BAD_IPS), pick, rng)
    return fixed and t.mut("broken", fixed[0], f"not a host address: {fixed[1]}")


def duplicate_address(rng: Random, t: Target) -> Mut | None:
    spec, header, rows = _table(t)
    if not spec.ip or t.fmt == "numbering":
        return None
    c = _col(header, spec.ip)
    given = [r for r in rows if r[c]]
    a, b = rng.sample(given, 2)
    b[c] = a[c]
    return t.mut("broken", write(header, rows), f"{a[0]} and {b[0]} both at {a[c]}")


def ipv6_address(rng: Random, t: Target) -> Mut | None:
    spec = SPECS[t.fmt]
    if not spec.ip or t.fmt == "numbering":
        return None
    fixed = _set(t, spec.ip, lambda v: rng.choice(["2001:db8::5/64", "fe80::1/64"]), lambda h, r: True, rng)
    return t.mut("any", fixed[0], f"IPv6: {fixed[1]}")


def role(rng: Random, t: Target) -> Mut | None:
    spec = SPECS[t.fmt]
    if not spec.role:
        return None
    if rng.random() < 0.5:
        fixed = _set(t, spec.role, lambda v: rng.choice(["gpuu", "spine2", "router", "42", "be-leaf2"]),
                     rng=rng)
        return t.mut("broken", fixed[0], f"not a role: {fixed[1]}")
    fixed = _set(t, spec.role, lambda v: v.upper(), lambda h, r: bool(r[_col(h, spec.role)]), rng)
    return t.mut("faithful", fixed[0], f"a role in capitals: {fixed[1]}")


def hwsku(rng: Random, t: Target) -> Mut | None:
    spec = SPECS[t.fmt]
    if not spec.hwsku:
        return None
    bad = rng.choice(["NoSuchSku-64x400G", "../../etc", "/dev/null", "/", "Arista-7060X6-64PE-O128S2 x", "*"])
    fixed = _set(t, spec.hwsku, lambda v: bad, lambda h, r: bool(r[_col(h, spec.hwsku)]), rng)
    return t.mut("broken", fixed[0], f"no such HwSKU: {fixed[1]}")


def rename_device(rng: Random, t: Target) -> Mut:
    """One device renamed in every plan file at once: the plan is whole, its name odd."""
    old, new = rng.choice(sorted(t.info.roles)), rng.choice(ODD_NAMES)
    pattern = re.compile(rf"(?<![\w-]){re.escape(old)}(?![\w-])")
    others = {p: pattern.sub(new.replace("\\", "\\\\"), text) for p, text in t.files.items()
              if p.endswith((".csv", ".clab.yml")) and p != t.path}
    return Mut("any", pattern.sub(new.replace("\\", "\\\\"), t.text), others=others,
               note=f"{old} -> {new!r} everywhere")


MUTATIONS = [blank_rows, comment_rows, quote_all, shuffle_rows, reorder_columns, header_case, padded_cells,
             extra_column, trailing_empty_column, multiline_note, excel_sep_line, other_separator, excel_text_cells,
             drop_column, short_row, long_row, newline_in_name, duplicate_row, repeat_rows, huge_cell, many_columns,
             empty_required_cell, bad_port, mgmt_port, header_only, unclosed_quote, ignored_columns, self_loop,
             unknown_device, speed, bad_address, duplicate_address, ipv6_address, role, hwsku, rename_device, bad_port,
             speed, bad_address]
