"""The one way fablab waits (harness/plumbing/wait.py): until a condition holds, or how long it took."""
from __future__ import annotations

import time

import pytest

from harness.plumbing.wait import Timeout, pause_until, until, within


def test_until_returns_the_first_truthy_value():
    values = iter([0, None, "", 7])
    assert until(lambda: next(values), 5.0, "a value", interval=0.001) == 7


def test_until_names_what_it_waited_for():
    with pytest.raises(Timeout, match="waiting for: the moon"):
        until(lambda: False, 0.05, "the moon", interval=0.01)


def test_within_measures_from_the_given_moment():
    start = time.monotonic()
    took = within(lambda: time.monotonic() - start >= 0.05, 2.0, since=start, interval=0.005)
    assert took is not None and 0.05 <= took < 1.0


def test_within_says_none_when_it_never_held():
    start = time.monotonic()
    assert within(lambda: False, 0.05, interval=0.01) is None
    assert time.monotonic() - start < 1.0


def test_within_treats_a_missing_key_as_not_yet():
    seen = {}

    def condition():
        seen["n"] = seen.get("n", 0) + 1
        return {"up": True}["up"] if seen["n"] > 2 else {}["up"]

    assert within(condition, 2.0, interval=0.001) is not None


def test_pause_until_waits_for_the_moment():
    moment = time.monotonic() + 0.05
    pause_until(moment)
    assert time.monotonic() >= moment


def test_until_raises_the_callers_own_error_at_the_deadline():
    class Late(Exception):
        pass

    with pytest.raises(Late, match="3 left"):
        until(lambda: False, 0.02, "anything", interval=0.005, error=lambda: Late("3 left"))


def test_until_runs_on_a_given_clock():
    t = [0.0]
    looks = []

    def condition():
        looks.append(t[0])
        return t[0] >= 2.0

    until(condition, 10, "t >= 2", interval=0.5, clock=lambda: t[0], sleep=lambda s: t.__setitem__(0, t[0] + s))
    assert looks == [0.0, 0.5, 1.0, 1.5, 2.0]
    with pytest.raises(Timeout, match="after 1 s"):
        until(lambda: False, 1, "never", interval=0.5, clock=lambda: t[0],
              sleep=lambda s: t.__setitem__(0, t[0] + s))


def test_until_lets_any_other_error_of_the_condition_through():
    def condition():
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        until(condition, 5.0, "never", interval=0.001)


def test_within_a_window_already_over_is_none_without_a_look():
    looked = []
    since = time.monotonic() - 1.0
    assert within(lambda: looked.append(1) or True, 0.5, since=since) is None
    assert within(lambda: looked.append(1) or True, -0.1) is None
    assert looked == []


def test_within_looks_once_with_no_time_left():
    assert within(lambda: True, 0.0) is not None
