"""The garbage collector of a process that runs a scheduler (minisched/runner.py)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from minisched import runner


def test_the_scheduler_alone_and_a_step_run_collect_the_young_generation_less_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, ...]] = []

    def run(*args: Any, **kwargs: Any) -> int:
        seen.append(gc.get_threshold())
        return 0

    gc.set_threshold(700, 10, 10)  # CPython's default
    monkeypatch.setattr(runner, "_run_scheduler_alone", run)
    assert runner.scheduler_main("steps.step1", ["--kubeconfig", "unused"]) == 0
    gc.set_threshold(700, 10, 10)
    monkeypatch.setattr(runner, "run_step", run)
    assert runner.main(["1"]) == 0
    assert seen == [runner.GC_THRESHOLD, runner.GC_THRESHOLD]
    assert runner.GC_THRESHOLD[0] > 700
