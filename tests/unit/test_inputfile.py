"""The one door every engineer's file comes through (harness/core/inputfile.py): encodings, size,
nesting, duplicate keys and alias bombs, each refused naming file:line and never a traceback;
and many problems said by kind, counted, in under 100 lines (harness/core/errors.py)."""
from __future__ import annotations

import pytest

from harness.core import inputfile
from harness.core.errors import MAX_PROBLEMS, Problem, TopologyError, too_many
from harness.core.inputfile import FileFault, csv_rows, decode, json_of, line_of, read_text, yaml_of

TEXT = "name,role\ngpu-a01\u2019,gpu\n"

DECODED = [  # (bytes, the text, or the words of the refusal)
    (TEXT.encode(), TEXT),
    (b"\xef\xbb\xbf" + TEXT.encode(), TEXT),  # Excel's "CSV UTF-8"
    (TEXT.encode("utf-16"), TEXT),  # UTF-16 by its BOM
    (b"\xff\xfe\x00\xd8a\x00", "not UTF-16 as its byte-order mark says"),
    (TEXT.encode("cp1252"), "f:2: not UTF-8 text (byte 17 is 0x92"),
    (b"a,b\n\x00c,d\n", "f:2: a NUL byte"),
    (TEXT.encode("utf-16-le"), "a NUL byte"),  # UTF-16 without its BOM
]


@pytest.mark.parametrize("data, want", DECODED, ids=range(len(DECODED)))
def test_a_file_is_its_text_or_refused_naming_the_byte(data, want):
    if want == TEXT:
        assert decode(data, "f") == TEXT
        return
    with pytest.raises(FileFault) as e:
        decode(data, "f")
    assert want in str(e.value) and "UTF-8" in str(e.value), str(e.value)


def test_a_file_over_the_limit_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "links.csv"
    path.write_text(TEXT * 100)
    assert read_text(path) == TEXT * 100  # the control
    monkeypatch.setattr(inputfile, "MAX_BYTES", 1000)
    with pytest.raises(FileFault, match=r"links.csv: 2,500 bytes, over the 0.00095 MiB"):
        read_text(path)
    with pytest.raises(FileFault, match="a directory, not a file"):
        read_text(tmp_path)
    with pytest.raises(FileFault, match="cannot be read"):
        read_text(tmp_path / "nothing.csv")


JSON = [  # (text, the words of the refusal; "" = read)
    ('{"PORT": {"Ethernet0": {"mtu": "9100"}}}', ""),
    ('{"PORT": {"Ethernet0": {}, "Ethernet0": {}}}', "c.json:1: PORT.Ethernet0 is given twice"),
    ('{\n "PORT": {},\n "PORT": {}\n}', "c.json:3: PORT is given twice"),
    ('{"a": NaN}', "NaN is not JSON"),
    ('{"a": -Infinity}', "-Infinity is not JSON"),
    ('{"a": 1,}', "c.json:1: not JSON: Expecting property name"),
    ('{"a": ' + "9" * 5000 + "}", "a number of thousands of digits"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64"),
    ('{"a": ' + "[" * 70 + "]" * 70 + "}", "a[0][0]"),  # under Python's limit, over fablab's
    ('{"a": {"b": [', "not JSON"),
]


@pytest.mark.parametrize("text, want", JSON, ids=range(len(JSON)))
def test_json_is_read_or_refused_naming_line_and_key(text, want):
    if not want:
        assert json_of(text, "c.json") == {"PORT": {"Ethernet0": {"mtu": "9100"}}}
        return
    with pytest.raises(FileFault) as e:
        json_of(text, "c.json", "fix it")
    assert want in str(e.value), str(e.value)


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdefg", "bcdefgh"))

YAML = [  # (text, the words of the refusal)
    ("a: 1\na: 2\n", "y.yml:2: 'a' is given twice in one map (first at line 1)"),
    ("a: &x [*x]\n", "y.yml:1: an alias inside the value it names"),
    (BOMB, "expands to over 2,000,000 values"),
    ("a: " + "[" * 70 + "]" * 70 + "\n", "nested deeper than 64"),
    ("a: b: c\n", "y.yml:1: not YAML"),
    ("a:\n\t- b\n", "y.yml:2: not YAML"),  # a tab where YAML wants spaces
    ("? [1]\n: 2\n", "a map or list used as a key"),
]


@pytest.mark.parametrize("text, want", YAML, ids=range(len(YAML)))
def test_yaml_is_refused_naming_line(text, want):
    with pytest.raises(FileFault) as e:
        yaml_of(text, "y.yml")
    assert want in str(e.value), str(e.value)


def test_yaml_values_know_their_lines_and_merge_keys_override():
    doc = yaml_of("d: &d {k: 1, j: 1}\ne:\n  <<: *d\n  k: 2\nl:\n  - x\n  - y\n", "y.yml")
    assert doc == {"d": {"k": 1, "j": 1}, "e": {"k": 2, "j": 1}, "l": ["x", "y"]}
    assert (line_of(doc, "e"), line_of(doc["e"], "k"), line_of(doc["l"], 1), line_of("x")) == (2, 4, 7, 0)
    assert yaml_of("", "y.yml") is None


def test_a_csv_row_the_csv_module_cannot_read_is_said_at_its_line():
    assert list(csv_rows('a,b\n"x\ny",z\n', "f.csv")) == [(1, ["a", "b"]), (3, ["x\ny", "z"])]
    with pytest.raises(FileFault, match=r"f.csv:2: not a CSV row"):
        list(csv_rows("a,b\n" + "x" * 200_000 + ",y\n", "f.csv"))


def test_many_problems_are_said_by_kind_counted_in_under_100_lines():
    few = [Problem(f"f.csv:{i}", f"gpu{i}:rail0 is cabled twice", "fix one") for i in range(3)]
    assert str(TopologyError(few)).count("\n") == 3  # few: each said
    many = [Problem(f"f.csv:{i}", f"gpu{i}:rail{i % 8} is cabled twice (also at line {i - 1})", "fix one")
            for i in range(5000)]
    many += [Problem(f"f.csv:{i}", f"speed '{i}x' is not a speed", "write 400G") for i in range(100)]
    words = ["".join(chr(97 + int(d)) for d in str(i)) for i in range(100)]  # no digits: 100 kinds
    many += [Problem("g.csv:1", f"kind {w} of its own", "fix it") for w in words]
    said = str(TopologyError(many, "f.csv", "cabling plan"))
    lines = said.splitlines()
    assert lines[0] == "f.csv: 5,200 problems in the cabling plan:" and len(lines) < 100
    assert "... and 4,997 more like these (5,000 in all)" in said and "(100 in all)" in said and "kind ca of its own" not in said
    assert lines[-1].startswith("  ... and ") and "more problems of other kinds" in lines[-1]


def test_a_reader_stops_at_the_limit_and_says_where():
    problems: list[Problem] = []
    for line in range(1, 5000):
        if too_many(problems, f"f.csv:{line}"):
            break
        problems.append(Problem(f"f.csv:{line}", "bad", ""))
    assert len(problems) == MAX_PROBLEMS + 1 and problems[-1].field == f"f.csv:{MAX_PROBLEMS + 1}"
    assert "reading stopped here" in str(TopologyError(problems))
