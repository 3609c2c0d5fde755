"""The thread policy: a pin wins; otherwise the idle cores, so a busy machine slows a run in proportion."""

from __future__ import annotations

import pytest

from tpar.runtime import threads


@pytest.fixture
def machine(monkeypatch):
    """A machine of 2 cores whose 1-minute load the test sets; no thread pin in the environment."""
    for name in (threads.THREADS_ENV, "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads, "available_cores", lambda: 2)
    state = {"load": 0.0}
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (state["load"], 0.0, 0.0))
    return state


@pytest.mark.parametrize("load, expected", [(0.0, 2), (0.4, 2), (1.0, 1), (1.6, 1), (2.0, 1), (7.5, 1)])
def test_idle_cores_are_taken_and_never_fewer_than_one(machine, load, expected):
    machine["load"] = load
    assert threads.choose_threads() == expected


def test_an_explicit_request_or_an_environment_pin_wins(machine, monkeypatch):
    machine["load"] = 2.0
    assert threads.choose_threads(2) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.choose_threads() == 3
    monkeypatch.setenv(threads.THREADS_ENV, "4")  # the package's own pin comes first
    assert threads.choose_threads() == 4
    assert threads.choose_threads(1) == 1
    monkeypatch.setenv(threads.THREADS_ENV, "many")  # not a number: ignored
    assert threads.choose_threads() == 3


def test_a_process_subtracts_its_own_threads_from_the_load(machine):
    machine["load"] = 2.0  # its own 2 threads make the whole load: nobody else is busy
    assert threads.choose_threads(own_threads=2) == 2


def test_apply_threads_sets_torch(machine):
    import torch

    before = torch.get_num_threads()
    try:
        machine["load"] = 1.0
        assert threads.apply_threads() == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_the_cli_applies_the_policy_to_training_and_evaluation():
    from tpar.cli import build_parser

    p = build_parser()
    for argv in (["train", "--data", "d", "--setting", "extrapolation", "--out", "m.tpar"],
                 ["evaluate", "--checkpoint", "m.tpar", "--data", "d"],
                 ["calibrate", "--checkpoint", "m.tpar", "--data", "d"], ["bench"]):
        assert p.parse_args(argv).threads == 0  # 0: chosen by the policy when the command starts
