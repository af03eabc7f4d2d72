"""Plots that teach: a failover plot has a lane per QP and marks the failure, the route change,
the restore and the route's return; a negative control's plot names what was broken; an ECMP
plot labels each uplink's count against the fair band; no title is cut."""
from __future__ import annotations

import pytest

from harness.checks import failover_result
from harness.checks.ecmp import plot as ecmp_plot
from harness.checks.ecmp import EcmpResult, PathCount
from harness.checks.failover_result import FailoverCase

SABOTAGE = "BFD 1000 ms × 3 on be-g1-r0, be-s1 (a profile copied from a campus network, for a long title to wrap)"


def _lane(qp: int, on: bool, gap: tuple[int, int] | None, n: int = 300) -> dict:
    return {"qp": qp, "on_element": on, "path": "be-g1-r0:Ethernet0" if on else "be-g1-r0:Ethernet8",
            "window_ms": 1500.0 if on else 0.0,
            "buckets": [0 if gap and gap[0] <= i < gap[1] else 10 for i in range(n)]}


def _case(passed: bool = False) -> FailoverCase:
    lanes = [_lane(0x300 + i, True, (100, 250)) for i in range(3)] + [_lane(0x310 + i, False, None) for i in range(2)]
    timeline = {"bucket_ms": 10.0, "received": [sum(lane["buckets"][i] for lane in lanes) for i in range(300)],
                "failure_ms": 1000.0, "restore_ms": 2500.0, "offered_pps": 5000.0, "per_qp_pps": 1000.0,
                "lanes": lanes}
    return FailoverCase(case="gray", element="be-g1-r0:Ethernet0–be-s1:Ethernet0", objective_ms=1000.0,
                        restore_objective_ms=10.0, qps=5, qps_on_element=3, min_on_element=3, candidates=8,
                        rate_pps=1000.0, worst_window_ms=1500.0, worst_restore_ms=0.0, lost_elsewhere=0,
                        lost_before=0, detected_ms=1480.0, restored_ms=900.0, returned_packets=100, sender_lag_ms=0.0,
                        not_measurable="", per_qp=(), timeline=timeline, seconds=8.0,
                        problems=() if passed else ("loss window 1500 ms > objective 1000 ms",))


@pytest.fixture
def kept(monkeypatch):
    """The figure a plot function made, kept open to be looked at (laid out as when saved)."""
    seen = {}

    def keep(fig, path):
        fig.tight_layout()
        fig.canvas.draw()
        seen["fig"] = fig
        return path

    monkeypatch.setattr(failover_result, "save", keep)
    monkeypatch.setattr(ecmp_plot, "save", keep)
    return seen


def _whole(fig) -> None:
    """Everything drawn, titles included, inside the figure: nothing cut at an edge."""
    drawn = fig.get_tightbbox(fig.canvas.get_renderer())
    width, height = fig.get_size_inches()
    assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01 and drawn.x1 <= width + 0.01 and drawn.y1 <= height + 0.01, drawn


def test_a_failover_plot_has_a_lane_per_qp_and_marks_every_moment(kept, tmp_path):
    failover_result.plot_failover(_case(), tmp_path / "f.png")
    fig = kept["fig"]
    rate_ax, lane_ax = fig.axes[:2]
    labels = [t.get_text() for t in rate_ax.get_legend().get_texts()]
    assert {"failure", "restore"} <= set(labels)
    assert any(x.startswith("detected: route changed (+1480 ms)") for x in labels)
    assert any(x.startswith("route back (+900 ms)") for x in labels)
    assert any("untouched" in x for x in labels)  # the plateau that stays is named for what it is
    assert len(lane_ax.get_yticklabels()) == 5 and lane_ax.get_yticklabels()[0].get_text().startswith("0x300 on")
    _whole(fig)


def test_a_negative_controls_plot_names_what_was_broken(kept, tmp_path):
    failover_result.plot_failover(_case(), tmp_path / "f.png", sabotage=SABOTAGE)
    title = kept["fig"].axes[0].get_title(loc="left")
    assert title.startswith("NEGATIVE CONTROL, broken on purpose: BFD 1000 ms × 3") and "FAIL" in title
    assert all(len(line) <= 100 for line in title.splitlines())  # wrapped, not cut
    _whole(kept["fig"])


def test_a_failover_plot_of_a_recorded_failure_reds_the_lanes_on_the_element(kept, tmp_path):
    from pathlib import Path

    from harness.report.recorded import judge, read

    recorded = read(Path(__file__).resolve().parents[1] / "observations" / "failover-local" / "carrier-blind.json")
    failover_result.plot_failover(judge(recorded), tmp_path / "f.png", sabotage="carrier loss ignored")
    lane_ax = kept["fig"].axes[1]
    labels = [t.get_text() for t in lane_ax.get_yticklabels()]
    assert len(labels) == 12 and labels[0] == "0x304 on 1007 ms" and labels[-1].endswith(" off")
    rows = lane_ax.get_images()[0].get_array()
    assert (rows[0] == 0).sum() >= 90  # the worst QP on the element: over 900 ms of 10 ms buckets lost whole
    assert (rows[-1] < 0.9).sum() <= 2  # one elsewhere: none short, but its first and last, partly sent
    _whole(kept["fig"])


def test_an_ecmp_plot_labels_each_uplink_against_the_band(kept, tmp_path):
    paths = (PathCount("Ethernet0", 380, 1520, 190.0, 156, 224), PathCount("Ethernet8", 0, 0, 190.0, 156, 224))
    result = EcmpResult("gpu01:rail0", "gpu05:rail0 (10.0.1.9)", "be-g1-r0", 380, 4, paths, 190.0, 156, 224, 0.001,
                        2, 0.999, 0, 0, 2.0, 0.0, 0, 0, 0, {"Ethernet0": 1, "Ethernet8": 1}, seconds=3.0,
                        problems=("be-g1-r0:Ethernet0 carried 380 QPs",))
    ecmp_plot.plot_ecmp(result, tmp_path / "e.png", sabotage="L3-only ECMP hashing on be-g1-r0")
    ax = kept["fig"].axes[0]
    assert {t.get_text() for t in ax.texts} >= {"380", "0"}  # each bar's count
    assert any("fair band 156..224" in t.get_text() for t in ax.get_legend().get_texts())
    assert "L3-only ECMP hashing" in ax.get_title(loc="left")
    _whole(kept["fig"])
