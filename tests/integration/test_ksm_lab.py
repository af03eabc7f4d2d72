"""KSM on a real lab: a lab that needs it starts its bgpds mergeable and holds ksmd's settings
(the boot rate while it boots, the resting rate once up), and its teardown puts back what the
machine had. The threshold is lowered to ai-cluster's 40 sessions so a small lab shows it."""
from __future__ import annotations

from pathlib import Path

from .conftest import leftovers_of

from harness import Lab
from harness.runtime import bgpd_rings, ksm, processes
from harness.runtime.state import namespace
from topologies import ai_cluster


def _settings() -> dict[str, int]:
    return {k: int((ksm.KSM_ROOT / k).read_text()) for k in ksm.SETTINGS}


def test_a_lab_that_needs_ksm_merges_its_bgpds_and_puts_ksmd_back(lab_name, monkeypatch):
    if not (ksm.KSM_ROOT / "run").exists() or not Path("/proc/self/ksm_stat").exists():
        import pytest
        pytest.skip("this kernel has no KSM, or no per-process KSM (Linux 6.4)")
    before = _settings()
    monkeypatch.setattr(ksm, "FROM_SESSIONS", 1)
    monkeypatch.setattr(bgpd_rings, "applies", lambda: False)  # KSM: the fallback where the preload cannot reach
    lab = Lab.up(ai_cluster(), name=lab_name, mgmt_services=False)
    try:
        assert _settings() == {**ksm.SETTINGS, "pages_to_scan": ksm.RESTING}  # up: ksmd at its resting rate
        bgpds = [pid for pid, ns in processes.frr_pids_by_namespace(namespace(lab_name, "")).items()
                 if Path(f"/proc/{pid}/comm").read_text().strip() == "bgpd"]
        assert len(bgpds) == len(lab.plan.switches)
        assert all("ksm_merge_any: yes" in Path(f"/proc/{pid}/ksm_stat").read_text() for pid in bgpds)
        assert "ksm_merge_any: no" in Path("/proc/self/ksm_stat").read_text()  # the boot's own process: cleared
    finally:
        lab.down()
    assert _settings() == before and leftovers_of(lab_name) == []
