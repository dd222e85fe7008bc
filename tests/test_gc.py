"""The garbage collector of a process that runs a scheduler (minisched/gcpolicy.py, which
minisched/runner.py applies): the young generation's threshold, and the freeze of a large cache
once the informers have listed."""

from __future__ import annotations

import gc
import io
import threading
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from minisched import gcpolicy, runner
from minisched.cluster import EmbeddedServer
from minisched.report import Report
from tests.fakes import scheduler_alone_args


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
    assert seen == [gcpolicy.GC_THRESHOLD, gcpolicy.GC_THRESHOLD]
    assert gcpolicy.GC_THRESHOLD[0] > 700


class FakeInformer:
    def __init__(self, size: int) -> None:
        self.synced = threading.Event()
        self.store = SimpleNamespace(list_keys=lambda: [f"ns/o{i}" for i in range(size)])

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        return self.synced.wait(timeout)


def _freezes(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Record gc.freeze instead of freezing the test process."""
    froze = threading.Event()
    monkeypatch.setattr(gc, "freeze", froze.set)
    return froze


def test_a_large_cache_is_frozen_once_both_informers_have_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    froze = _freezes(monkeypatch)
    pods, nodes = FakeInformer(gcpolicy.FREEZE_CACHE_SIZE - 10), FakeInformer(10)
    scheduler = SimpleNamespace(pod_informer=pods, node_informer=nodes)
    freezer = gcpolicy.freeze_cache_once_listed(scheduler, threading.current_thread())
    pods.synced.set()
    assert not froze.wait(0.2)  # the node informer has not listed yet
    nodes.synced.set()
    freezer.join(10)
    assert froze.is_set()


def test_a_small_cache_is_left_to_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    froze = _freezes(monkeypatch)
    pods, nodes = FakeInformer(gcpolicy.FREEZE_CACHE_SIZE - 11), FakeInformer(10)
    pods.synced.set()
    nodes.synced.set()
    scheduler = SimpleNamespace(pod_informer=pods, node_informer=nodes)
    assert not gcpolicy.freeze_cache(scheduler, threading.current_thread())
    assert not froze.is_set()


def test_the_wait_ends_with_a_scheduler_that_never_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    froze = _freezes(monkeypatch)
    scheduler = SimpleNamespace(pod_informer=FakeInformer(0), node_informer=FakeInformer(0))
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    assert not gcpolicy.freeze_cache(scheduler, ended)
    assert not froze.is_set()


def test_the_scheduler_alone_and_a_step_run_freeze_a_large_cache(
    apiserver: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways a scheduler runs (``python -m steps.stepN``, ``nox -s stepN``) freeze; any
    cache is large here."""
    froze = _freezes(monkeypatch)
    monkeypatch.setattr(gcpolicy, "FREEZE_CACHE_SIZE", 0)
    quiet = Report(Console(file=io.StringIO(), width=120), live=False)
    monkeypatch.setattr(runner, "Report", lambda *args, **kwargs: quiet)

    args = scheduler_alone_args(apiserver.kubeconfig)
    stop = threading.Event()
    alone = threading.Thread(target=runner._run_scheduler_alone, args=(1, args, stop))
    alone.start()
    try:
        assert froze.wait(10), "the scheduler alone did not freeze its cache"
    finally:
        stop.set()
        alone.join(15)

    froze.clear()
    runner.run_step(1, kubeconfig=apiserver.kubeconfig, report=quiet)
    assert froze.wait(10), "a step run did not freeze its cache"
