"""BFD offload's set-up, without a lab: the default, the data plane built from the project's
source, and errors raised before anything is made."""
from __future__ import annotations

import subprocess

import pytest

from harness.core.declarations import Bfd
from harness.core.errors import LabError, PrerequisiteError
from harness.runtime import bfd_offload, bgpd_rings, dataplane_process, state


def test_offload_is_the_default_and_needs_bfd_on():
    assert bfd_offload.uses_offload(Bfd())
    assert not bfd_offload.uses_offload(Bfd(offload=False))
    assert not bfd_offload.uses_offload(Bfd(enabled=False))


def test_the_data_plane_builds_from_source_and_says_how_to_run_it(tmp_path, monkeypatch):
    monkeypatch.setattr(bfd_offload, "BINARY", tmp_path / "fablab-bfd-dp")
    exe = bfd_offload.binary()
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 64 and "usage:" in run.stderr and "-c CONFIG" in run.stderr
    assert bfd_offload.binary() == exe  # up to date: not built again
    assert not list(tmp_path.glob(".fablab-bfd-dp.*"))  # no half-written file left


def test_without_a_compiler_the_error_names_the_package_and_the_way_out(tmp_path, monkeypatch):
    monkeypatch.setattr(bfd_offload, "BINARY", tmp_path / "fablab-bfd-dp")
    monkeypatch.setattr(dataplane_process.shutil, "which", lambda name: None)
    with pytest.raises(PrerequisiteError, match=r"apt-get install gcc.*Bfd\(offload=False\)"):
        bfd_offload.binary()
    monkeypatch.setattr(bgpd_rings, "LIBRARY", tmp_path / "libfablab-bgpd-ringbuf.so")
    with pytest.raises(PrerequisiteError, match=r"bgpd's receive rings need a C compiler.*apt-get install gcc"):
        bgpd_rings.build()


def test_a_socket_path_too_long_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path / ("d" * 90))
    with pytest.raises(LabError, match=r"bfd-dp.status is longer than a unix socket path.*FABLAB_RUN_DIR"):
        bfd_offload.check_paths("lab1", ["be-s1"])
    monkeypatch.setattr(state, "RUN_ROOT", tmp_path)
    bfd_offload.check_paths("lab1", ["be-s1"])  # control: a short one passes
