"""Clock and FakeClock: the timers every step's backoff, permit and flush loops use."""

from __future__ import annotations

import threading

from minisched.clock import Clock, FakeClock


def test_fake_clock_fires_timers_in_due_order_at_their_due_time() -> None:
    clock = FakeClock(start=0)
    fired: list[tuple[str, float]] = []
    clock.after_func(2, lambda: fired.append(("two", clock.now())))
    clock.after_func(1, lambda: fired.append(("one", clock.now())))
    clock.advance(1.5)
    assert fired == [("one", 1.0)]
    clock.advance(10)
    assert fired == [("one", 1.0), ("two", 2.0)]
    assert clock.now() == 11.5


def test_stop_cancels_a_timer_and_reports_whether_it_was_pending() -> None:
    clock = FakeClock()
    fired: list[int] = []
    timer = clock.after_func(1, lambda: fired.append(1))
    assert timer.stop() is True
    assert timer.stop() is False
    clock.advance(5)
    assert fired == []


def test_every_repeats_until_stopped() -> None:
    clock = FakeClock(start=0)
    ticks: list[float] = []
    timer = clock.every(1, lambda: ticks.append(clock.now()))
    clock.advance(3.5)
    timer.stop()
    clock.advance(5)
    assert ticks == [1.0, 2.0, 3.0]


def test_a_callback_may_arm_another_timer() -> None:
    clock = FakeClock(start=0)
    fired: list[float] = []
    clock.after_func(1, lambda: clock.after_func(1, lambda: fired.append(clock.now())))
    clock.advance(2)
    assert fired == [2.0]


def test_wait_for_timers_sees_a_timer_armed_in_another_thread() -> None:
    clock = FakeClock()
    assert clock.wait_for_timers(1, timeout=0.01) is False
    threading.Thread(target=lambda: clock.after_func(5, lambda: None)).start()
    assert clock.wait_for_timers(1, timeout=5)


def test_real_clock_fires_a_timer() -> None:
    done = threading.Event()
    Clock().after_func(0.01, done.set)
    assert done.wait(5)
