"""minisched.goroutine.go: functions run on threads kept for the next one, as Go's ``go``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from minisched import goroutine


def test_go_returns_at_once_and_runs_the_function_under_its_name() -> None:
    release, seen = threading.Event(), []

    def fn(a: int, b: int) -> None:
        seen.append((a + b, threading.current_thread().name))
        release.wait(5)

    goroutine.go(fn, 1, 2, name="test-go one")
    assert not goroutine.wait_for("test-go ", 0.05)  # still running, held by release
    release.set()
    assert goroutine.wait_for("test-go ", 5)
    assert seen == [(3, "test-go one")]


def test_a_thread_that_finished_runs_the_next_function_without_a_new_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = []
    real_start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    ran = []
    for i in range(5):
        goroutine.go(lambda: ran.append(threading.current_thread().name), name=f"test-reuse {i}")
        assert goroutine.wait_for("test-reuse ", 5)
    assert ran == [f"test-reuse {i}" for i in range(5)]
    # The first may have needed a new thread (none was idle); each later one found the thread
    # of the one before waiting (wait_for returns once that thread counts as idle).
    assert len(started) <= 1


def test_functions_that_run_at_once_each_get_a_thread() -> None:
    # A binding cycle can wait on Permit for long: the next one must not wait behind it.
    release = threading.Event()
    arrived = threading.Barrier(4, timeout=5)

    def held() -> None:
        arrived.wait()
        release.wait(5)

    for i in range(3):
        goroutine.go(held, name=f"test-many {i}")
    arrived.wait()  # three functions run at the same time
    release.set()
    assert goroutine.wait_for("test-many ", 5)


def test_an_exception_is_reported_as_a_thread_reports_it_and_the_thread_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reported: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", reported.append)

    def boom() -> None:
        raise RuntimeError("boom")

    goroutine.go(boom, name="test-boom 1")
    assert goroutine.wait_for("test-boom ", 5)
    (args,) = reported
    assert (args.exc_type, str(args.exc_value)) == (RuntimeError, "boom")
    done = threading.Event()
    goroutine.go(done.set, name="test-boom 2")
    assert done.wait(5)


def test_an_idle_thread_ends_after_the_idle_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(goroutine, "IDLE_TIMEOUT", 0.05)
    ran = threading.Event()
    goroutine.go(lambda: setattr(ran, "thread", threading.current_thread()) or ran.set(), name="t")
    assert ran.wait(5) and goroutine.wait_for("t", 5)
    thread: threading.Thread = ran.thread  # type: ignore[attr-defined]
    # Idle threads from other tests may take the function; only this one is waited on: it ends
    # once it has waited IDLE_TIMEOUT (now short) for a function that never comes.
    thread.join(5)
    assert not thread.is_alive()
