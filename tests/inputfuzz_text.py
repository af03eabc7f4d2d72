"""What every mutation gets and gives (Target, Mut), and the mutations of any file: its encoding
as a Windows editor or a spreadsheet saves it (BOM, UTF-16, CRLF, cp1252), and its bytes
(flipped, inserted, deleted, truncated, NUL, invalid UTF-8, junk). tests/inputfuzz.py says what
the expectations mean."""
from __future__ import annotations

from dataclasses import dataclass, field
from random import Random


@dataclass(frozen=True)
class Info:
    """The render's names: each device's role, and its cables (a_device, a_port, b_device, b_port)."""
    roles: dict[str, str]
    cables: list[tuple[str, ...]]

    @property
    def switches(self) -> list[str]:
        return [d for d, r in self.roles.items() if "leaf" in r or "spine" in r]

    @property
    def hosts(self) -> list[str]:
        return [d for d in self.roles if d not in self.switches]


@dataclass(frozen=True)
class Target:
    fmt: str
    path: str  # the file to mutate
    text: str  # its text now
    files: dict[str, str]  # every base file's text
    info: Info

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    def mut(self, expect: str, text: str | bytes | None, note: str = "", **kw) -> Mut:
        return Mut(expect, text, note=note, **kw)


@dataclass(frozen=True)
class Mut:
    UNCHANGED = object()
    expect: str
    text: object = UNCHANGED  # the mutated file's new content (str: UTF-8), None: deleted
    others: dict = field(default_factory=dict)  # other files changed: path -> str | bytes | None
    steps: tuple = ()  # recipes (tests/inputfuzz.py apply_steps) for what is large
    note: str = ""
    heavy: bool = False
    only: tuple | None = None  # the commands for which the expectation holds (None: every one)
    says: str | None = None
    max_lines: int | None = None
    same_output: bool = True


def pick_line(rng: Random, lines: list[str], skip_first: bool = True) -> int:
    choices = [i for i, line in enumerate(lines) if line.strip() and (i > 0 or not skip_first)]
    return rng.choice(choices)


def with_note(t: Target, note: str) -> str:
    """`note` (free text, e.g. with ’) where the format keeps a remark: a comment, a description."""
    if t.fmt in ("clab", "inventory"):
        return f"# {note}\n{t.text}"
    if t.fmt == "frr":
        first, _, rest = t.text.partition("\n")
        return f"{first}\n! {note}\n{rest}"
    if t.fmt == "config_db":
        return t.text.replace('"description": "', f'"description": "{note} ', 1)
    header, _, rest = t.text.partition("\n")  # CSV: a comment line under the header
    return f"{header}\n# {note}\n{rest}"


# ------------------------------------------------------------------ encodings


def bom(rng: Random, t: Target) -> Mut:
    return t.mut("same", t.text.encode("utf-8-sig"), "UTF-8 with BOM (a spreadsheet's CSV UTF-8)")


def utf16(rng: Random, t: Target) -> Mut:
    big = rng.random() < 0.3
    data = b"\xfe\xff" + t.text.encode("utf-16-be") if big else t.text.encode("utf-16")
    return t.mut("same", data, f"UTF-16 {'BE' if big else 'LE'} with BOM (Excel's Unicode text)",
                 steps=(), heavy=False)


def utf16_without_bom(rng: Random, t: Target) -> Mut:
    return t.mut("faithful", t.text.encode("utf-16-le"), "UTF-16 LE, no BOM")


def crlf(rng: Random, t: Target) -> Mut:
    with_bom = rng.random() < 0.3
    data = t.text.replace("\n", "\r\n").encode("utf-8-sig" if with_bom else "utf-8")
    return t.mut("same", data, "CRLF line ends" + (" and a BOM" if with_bom else ""))


def cr_only(rng: Random, t: Target) -> Mut:
    return t.mut("faithful", t.text.replace("\n", "\r"), "CR line ends (classic Mac)")


def mixed_line_ends(rng: Random, t: Target) -> Mut:
    lines = t.text.split("\n")
    out = "".join(line + ("\r\n" if rng.random() < 0.5 else "\n") for line in lines[:-1]) + lines[-1]
    return t.mut("same", out, "CRLF on some lines, LF on others")


def trailing_blanks(rng: Random, t: Target) -> Mut:
    pad = rng.choice([" ", "  ", "\t", " \t "])
    return t.mut("same", "\n".join(line + pad if line else line for line in t.text.split("\n")),
                 f"{pad!r} at the end of every line")


def no_final_newline(rng: Random, t: Target) -> Mut:
    return t.mut("same", t.text.rstrip("\n"), "no newline at the end")


def extra_final_newlines(rng: Random, t: Target) -> Mut:
    return t.mut("same", t.text + "\n" * rng.randint(1, 5), "blank lines at the end")


def windows_code_page(rng: Random, t: Target) -> Mut:
    note, enc = rng.choice([("Jane\u2019s rack \u2013 rev 3", "cp1252"), ("caf\u00e9 row B", "cp1252"),
                            ("na\u00efve \u00bd", "latin-1")])
    return t.mut("faithful", with_note(t, note).encode(enc), f"{note!r} saved as {enc}")


def utf8_remark(rng: Random, t: Target) -> Mut:
    note = rng.choice(["Jane\u2019s rack \u2013 rev 3", "\u6a5f\u67b6 B", "\U0001f50c patch :100: done"])
    return t.mut("same", with_note(t, note), f"{note!r} in a remark, UTF-8")


def one_cp1252_byte(rng: Random, t: Target) -> Mut:
    data = with_note(t, "rack \x00").encode().replace(b"\x00", rng.choice([b"\x92", b"\x96", b"\xe9"]))
    return t.mut("faithful", data, "one cp1252 byte in an otherwise UTF-8 remark")


# ------------------------------------------------------------------ bytes


def flip(rng: Random, t: Target) -> Mut:
    data = bytearray(t.text.encode())
    at = [rng.randrange(len(data)) for _ in range(rng.randint(1, 8))]
    for i in at:
        data[i] ^= 1 << rng.randrange(8)
    return t.mut("any", bytes(data), f"{len(at)} bits flipped at {sorted(at)[:4]}")


def insert_bytes(rng: Random, t: Target) -> Mut:
    data = t.text.encode()
    at = rng.randrange(len(data))
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return t.mut("any", data[:at] + junk + data[at:], f"{len(junk)} random bytes at {at}")


def delete_bytes(rng: Random, t: Target) -> Mut:
    data = t.text.encode()
    at = rng.randrange(len(data))
    n = rng.randint(1, 64)
    return t.mut("any", data[:at] + data[at + n:], f"{n} bytes deleted at {at}")


def truncate(rng: Random, t: Target) -> Mut:
    data = t.text.encode()
    at = rng.randrange(1, len(data))
    return t.mut("any", data[:at], f"truncated at byte {at} of {len(data)}")


def nul_bytes(rng: Random, t: Target) -> Mut:
    data = t.text.encode()
    at = rng.randrange(len(data))
    return t.mut("any", data[:at] + b"\x00" * rng.randint(1, 4) + data[at:], f"NUL at {at}")


def invalid_utf8(rng: Random, t: Target) -> Mut:
    data = t.text.encode()
    at = rng.randrange(len(data))
    seq = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe2\x82", b"\xf8\x88\x80\x80\x80"])
    return t.mut("any", data[:at] + seq + data[at:], f"invalid UTF-8 {seq!r} at {at}")


def invisible_char(rng: Random, t: Target) -> Mut:
    at = rng.randrange(len(t.text))
    ch = rng.choice(["\u200b", "\u00a0", "\ufeff", "\u202e", "\u00ad"])
    return t.mut("any", t.text[:at] + ch + t.text[at:], f"U+{ord(ch):04X} at {at}")


def junk(rng: Random, t: Target) -> Mut:
    size = rng.choice([1, 100, 4096])
    data = bytes(rng.randrange(256) for _ in range(size))
    return t.mut("broken", data, f"{size} random bytes in place of the file")


def empty(rng: Random, t: Target) -> Mut:
    text = rng.choice(["", "\n", "   \n\n", "\ufeff", "\r\n"])
    return t.mut("broken", text, f"the file is {text!r}")


def binary_file(rng: Random, t: Target) -> Mut:
    head = rng.choice([b"\x89PNG\r\n\x1a\n", b"PK\x03\x04", b"\x1f\x8b\x08\x00", b"%PDF-1.7\n"])
    return t.mut("broken", head + bytes(rng.randrange(256) for _ in range(512)), f"a binary file {head[:4]!r}")


def swap_lines(rng: Random, t: Target) -> Mut | None:
    lines = t.lines
    if len(lines) < 4:
        return None
    i = rng.randrange(len(lines) - 2)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return t.mut("any", "\n".join(lines), f"lines {i + 1} and {i + 2} swapped")


def duplicate_line(rng: Random, t: Target) -> Mut:
    lines = t.lines
    i = pick_line(rng, lines, skip_first=False)
    return t.mut("any", "\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]), f"line {i + 1} twice")


def delete_line(rng: Random, t: Target) -> Mut:
    lines = t.lines
    i = pick_line(rng, lines, skip_first=False)
    return t.mut("any", "\n".join(lines[:i] + lines[i + 1:]), f"line {i + 1} deleted")


GENERIC = [bom, utf16, utf16_without_bom, crlf, cr_only, mixed_line_ends, trailing_blanks, no_final_newline,
           extra_final_newlines, windows_code_page, utf8_remark, one_cp1252_byte, flip, insert_bytes, delete_bytes,
           truncate, nul_bytes, invalid_utf8, invisible_char, junk, empty, binary_file, swap_lines, duplicate_line,
           delete_line]
