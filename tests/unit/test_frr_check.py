"""`fablab up --configs DIR`: FRR itself (vtysh --dryrun) reads every frr.conf before anything
boots; what it refuses is bad input, named file:line with FRR's message, every file at once."""
from __future__ import annotations

import re
import shutil

import pytest

from harness.cli.main import main
from harness.core.errors import InputError, PrerequisiteError
from harness.render import artifacts, write_artifacts
from harness.render.configs import load_configs
from harness.plumbing import frr_check
from harness.plumbing.frr_check import check_configs, refusals

needs_vtysh = pytest.mark.skipif(shutil.which("vtysh") is None, reason="FRR's vtysh is not installed")

# What vtysh --dryrun printed here (FRR 8.4.4) for an unknown and an incomplete command.
UNKNOWN = "line 93: % Unknown command[79]:  bogus command here\n"
INCOMPLETE = ("line 5: % Command incomplete[28]:   neighbor fab route-map\n\n"
              "line 6: % Command incomplete[28]:  redistribute\n\n")


def test_each_refused_line_is_file_line_and_frrs_message():
    where = "DIR/configs/be-s1/frr.conf"
    assert refusals(where, 2, UNKNOWN) == [f"{where}:93: Unknown command: bogus command here"]
    assert refusals(where, 4, INCOMPLETE) == [f"{where}:5: Command incomplete: neighbor fab route-map",
                                              f"{where}:6: Command incomplete: redistribute"]
    assert refusals(where, 2, "line 7: % Ambiguous command[4]:  ne\n") == [f"{where}:7: Ambiguous command: ne"]


def test_a_file_frr_took_has_no_refusal_and_an_unnamed_failure_keeps_frrs_words():
    assert refusals("f", 0, "") == []
    assert refusals("f", 11, "% Can't open configuration file x\n") == \
        ["f: vtysh --dryrun exited 11: % Can't open configuration file x"]


@pytest.fixture()
def theirs(ai_plan, tmp_path):
    """fablab's render of ai-cluster without one `exit`, `exit-address-family` or `exit-vni`
    line, as SONiC's templates and FRR < 8.2 write them."""
    out = tmp_path / "theirs"
    write_artifacts(artifacts(ai_plan), out)
    for conf in (out / "configs").glob("*/frr.conf"):
        conf.write_text(re.sub(r"(?m)^\s*(exit|exit-address-family|exit-vni)\s*\n", "", conf.read_text()))
    return out


@needs_vtysh
def test_frr_accepts_a_config_without_exit_lines(ai_plan, theirs):
    check_configs(load_configs(ai_plan, theirs), theirs)  # no error


@needs_vtysh
def test_every_refused_file_at_once(ai_plan, theirs):
    for switch, line in (("be-s1", 20), ("fe-l2", 3)):
        conf = theirs / "configs" / switch / "frr.conf"
        lines = conf.read_text().splitlines(True)
        conf.write_text("".join(lines[:line - 1] + ["bogus command here\n"] + lines[line - 1:]))
    with pytest.raises(InputError) as e:
        check_configs(load_configs(ai_plan, theirs), theirs)
    text = str(e.value)
    assert f"{theirs}/configs/be-s1/frr.conf:20: Unknown command: bogus command here" in text
    assert f"{theirs}/configs/fe-l2/frr.conf:3: Unknown command: bogus command here" in text
    assert "2 lines in 2 frr.conf files" in text and "nothing was booted" in text


def test_no_vtysh_is_said_not_skipped(ai_plan, theirs, monkeypatch):
    monkeypatch.setattr(frr_check.shutil, "which", lambda tool: None)
    with pytest.raises(PrerequisiteError, match="vtysh is missing.*apt-get install frr"):
        check_configs(load_configs(ai_plan, theirs), theirs)


@needs_vtysh
def test_up_refuses_before_booting_exit_2_naming_file_and_line(theirs, capsys):
    conf = theirs / "configs" / "be-g1-r0" / "frr.conf"
    conf.write_text(conf.read_text() + "router bgp 64601\n neighbor fabric bogus-option 3\n")
    lines = len(conf.read_text().splitlines())
    code = main(["up", "ai-cluster", "--name", "h2unit", "--configs", str(theirs)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{conf}:{lines}: Unknown command: neighbor fabric bogus-option 3" in err
    assert not [ns for ns in _netns() if "h2unit" in ns]  # nothing booted


def _netns() -> list[str]:
    from pathlib import Path

    run = Path("/run/netns")
    return [p.name for p in run.iterdir()] if run.is_dir() else []
