"""Permit, waiting pods and the binding cycle off the scheduling thread (steps 5+).

Every wait is driven by the FakeClock: no test sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from minisched import goroutine
from minisched.clock import FakeClock, Timer
from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    cycle_args,
    framework_of,
    make_node,
    make_pod,
    new_framework,
    offline_scheduler,
    set_framework,
)

STEPS = built_steps(5)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")
# Steps 5-8 keep the UIDs of assumed pods in a set; from step 9 the cache holds them
# (tests/test_reserve.py covers updates of assumed pods there).
interim_assumed_param = pytest.mark.parametrize("step", built_steps(5, 8), ids=lambda n: f"step{n}")


def join_binding_threads(timeout: float = 5.0) -> None:
    """Wait for every binding cycle to end."""
    assert goroutine.wait_for("binding ", timeout), "a binding cycle is still running"


# --- WaitingPod ---------------------------------------------------------------------------------


def _waiting_pod(step: int, clock: FakeClock, waits: dict[str, float]) -> Any:
    wp = step_module(step, "waiting_pods").WaitingPod(make_pod("pod1"), clock)
    wp.start(waits)
    return wp


@step_param
def test_the_pod_is_allowed_once_every_waiting_plugin_allows(step: int) -> None:
    clock = FakeClock()
    wp = _waiting_pod(step, clock, {"A": 10, "B": 10})
    assert sorted(wp.get_pending_plugins()) == ["A", "B"] and clock.pending() == 2
    wp.allow("A")
    assert wp.get_pending_plugins() == ["B"] and clock.pending() == 1
    assert wp._signal.empty()
    wp.allow("B")
    assert clock.pending() == 0
    assert wp.get_signal().is_success()


@step_param
def test_a_reject_stops_every_timer_and_names_the_plugin(step: int) -> None:
    fw = step_module(step, "framework")
    clock = FakeClock()
    wp = _waiting_pod(step, clock, {"A": 10, "B": 10})
    wp.reject("B", "not now")
    assert clock.pending() == 0
    status = wp.get_signal()
    assert (status.code, status.reasons, status.failed_plugin) == (
        fw.Code.UNSCHEDULABLE,
        ["not now"],
        "B",
    )


@step_param
def test_a_timeout_rejects_with_upstreams_message(step: int) -> None:
    clock = FakeClock()
    wp = _waiting_pod(step, clock, {"A": 10, "B": 30})
    clock.advance(9.9)
    assert wp._signal.empty()
    clock.advance(0.1)
    status = wp.get_signal()
    assert status.message() == "rejected due to timeout after waiting 10s at plugin A"
    assert status.failed_plugin == "A" and status.is_unschedulable()
    assert clock.pending() == 0  # B's timer was stopped too


@step_param
def test_the_signal_keeps_the_first_status_and_never_blocks(step: int) -> None:
    clock = FakeClock()
    wp = _waiting_pod(step, clock, {"A": 10})
    wp.allow("A")
    wp.reject("A", "too late")  # does not block on the full signal
    wp.allow("A")
    assert wp.get_signal().is_success()
    assert wp._signal.empty()  # the reject was dropped, not queued


@step_param
def test_an_allow_before_the_wait_starts_is_remembered(step: int) -> None:
    clock = FakeClock()
    wp = step_module(step, "waiting_pods").WaitingPod(make_pod("pod1"), clock)
    wp.allow("A")  # e.g. a 0 s timer armed in Permit fired before Permit returned
    assert wp._signal.empty()
    wp.start({"A": 10, "B": 5})
    assert wp.get_pending_plugins() == ["B"] and clock.pending() == 1
    wp.allow("B")
    assert wp.get_signal().is_success()

    wp = step_module(step, "waiting_pods").WaitingPod(make_pod("pod2"), clock)
    wp.allow("A")
    wp.start({"A": 10})
    assert wp.get_signal().is_success() and clock.pending() == 0


@step_param
@pytest.mark.parametrize(
    ("seconds", "text"),
    [(10, "10s"), (900, "15m0s"), (1.5, "1.5s"), (0.25, "250ms"), (3600, "1h0m0s"), (0, "0s")],
)
def test_durations_print_as_go_does(step: int, seconds: float, text: str) -> None:
    assert step_module(step, "waiting_pods").go_duration(seconds) == text


# --- run_permit_plugins and wait_on_permit -------------------------------------------------------


class FakePermit:
    """A Permit plugin answering with a fixed status and timeout; ``on_permit`` runs first."""

    def __init__(self, name: str, status: Any, timeout: float = 0.0) -> None:
        self._name = name
        self.status = status
        self.timeout = timeout
        self.on_permit: Callable[[Any], None] = lambda pod: None

    def name(self) -> str:
        return self._name

    def permit(self, *args: Any) -> tuple[Any, float]:
        pod, _node_name = args[-2:]
        self.on_permit(pod)
        return self.status, self.timeout


def _permit_framework(step: int, clock: FakeClock, *plugins: FakePermit) -> Any:
    def factory(p: FakePermit) -> Any:
        return lambda args, handle: p

    return new_framework(
        step,
        {p.name(): factory(p) for p in plugins},
        permit=[p.name() for p in plugins],
        clock=clock,
    )


def _run_permit(step: int, fwk: Any, pod: Any) -> Any:
    return fwk.run_permit_plugins(*cycle_args(step), pod, "node1")


@step_param
def test_permit_success_does_not_wait(step: int) -> None:
    fw = step_module(step, "framework")
    clock = FakeClock()
    fwk = _permit_framework(step, clock, FakePermit("A", fw.Status()))
    pod = make_pod("pod1")
    assert _run_permit(step, fwk, pod).is_success()
    assert fwk.get_waiting_pod(pod.metadata.uid) is None
    assert fwk.wait_on_permit(pod).is_success()  # not waiting: returns at once


@step_param
def test_permit_wait_is_clamped_to_15_minutes(step: int) -> None:
    fw = step_module(step, "framework")
    clock = FakeClock()
    fwk = _permit_framework(step, clock, FakePermit("Slow", fw.Status(fw.Code.WAIT), 3600.0))
    pod = make_pod("pod1")
    status = _run_permit(step, fwk, pod)
    assert status.code == fw.Code.WAIT
    assert status.message() == (
        'one or more plugins asked to wait and no plugin rejected pod "pod1"'
    )
    waiting = fwk.get_waiting_pod(pod.metadata.uid)
    assert waiting is not None and waiting.get_pending_plugins() == ["Slow"]
    clock.advance(15 * 60)
    assert not waiting._signal.empty()  # timed out at 15 min, not at the asked-for hour
    result = fwk.wait_on_permit(pod)
    assert result.message() == "rejected due to timeout after waiting 15m0s at plugin Slow"
    assert result.failed_plugin == "Slow"
    assert fwk.get_waiting_pod(pod.metadata.uid) is None  # removed after the wait


@step_param
def test_permit_rejection_ends_at_once_and_a_late_allow_is_harmless(step: int) -> None:
    fw = step_module(step, "framework")
    clock = FakeClock()
    waiter = FakePermit("Waiter", fw.Status(fw.Code.WAIT), 10.0)
    rejecter = FakePermit("Rejecter", fw.Status(fw.Code.UNSCHEDULABLE, ["full"]))
    after = FakePermit("After", fw.Status())
    after.on_permit = lambda pod: pytest.fail("a plugin after the rejection ran")
    fwk = _permit_framework(step, clock, waiter, rejecter, after)

    def allow_later(pod: Any) -> None:
        def allow() -> None:
            wp = fwk.get_waiting_pod(pod.metadata.uid)
            if wp is not None:
                wp.allow("Waiter")

        clock.after_func(1, allow)

    waiter.on_permit = allow_later
    pod = make_pod("pod1")
    status = _run_permit(step, fwk, pod)
    assert (status.code, status.failed_plugin, status.reasons) == (
        fw.Code.UNSCHEDULABLE,
        "Rejecter",
        ["full"],
    )
    assert fwk.get_waiting_pod(pod.metadata.uid) is None
    clock.advance(20)  # Waiter's allow finds no waiting pod; no timeout timer was armed
    assert clock.pending() == 0


@step_param
def test_a_permit_error_is_an_error_status_naming_the_plugin(step: int) -> None:
    fw = step_module(step, "framework")
    fwk = _permit_framework(step, FakeClock(), FakePermit("Bad", fw.Status(fw.Code.SKIP, ["?"])))
    pod = make_pod("pod1")
    status = _run_permit(step, fwk, pod)
    assert (status.code, status.failed_plugin) == (fw.Code.ERROR, "Bad")
    assert status.message() == 'running Permit plugin "Bad": ?'
    assert fwk.get_waiting_pod(pod.metadata.uid) is None


@step_param
def test_wait_on_permit_blocks_until_allowed(step: int) -> None:
    fw = step_module(step, "framework")
    clock = FakeClock()
    fwk = _permit_framework(step, clock, FakePermit("W", fw.Status(fw.Code.WAIT), 10.0))
    pod = make_pod("pod1")
    _run_permit(step, fwk, pod)
    result: list[Any] = []
    waiter = threading.Thread(target=lambda: result.append(fwk.wait_on_permit(pod)))
    waiter.start()
    waiter.join(0.05)
    assert waiter.is_alive()  # still waiting: nobody allowed yet
    seen: list[str] = []
    fwk.iterate_over_waiting_pods(lambda wp: seen.append(wp.get_pod().metadata.name))
    assert seen == ["pod1"]
    fwk.get_waiting_pod(pod.metadata.uid).allow("W")
    waiter.join(5)
    assert result[0].is_success()


@step_param
def test_reject_waiting_pod_through_the_handle(step: int) -> None:
    fw = step_module(step, "framework")
    fwk = _permit_framework(step, FakeClock(), FakePermit("W", fw.Status(fw.Code.WAIT), 10.0))
    pod = make_pod("pod1")
    _run_permit(step, fwk, pod)
    assert fwk.reject_waiting_pod("no-such-uid") is False
    assert fwk.reject_waiting_pod(pod.metadata.uid) is True
    status = fwk.wait_on_permit(pod)
    assert status.is_unschedulable() and status.message() == "removed"


# --- NodeNumber and the binding cycle ------------------------------------------------------------


def _cluster(sched: Any, *names: str) -> None:
    add_nodes(sched, *(make_node(n) for n in names))


@step_param
def test_node_number_holds_the_pod_for_the_nodes_digit_in_seconds(step: int) -> None:
    sched = offline_scheduler(step)
    _cluster(sched, "node8")
    sched.scheduling_queue.add(make_pod("pod8"))
    step_module(step, "schedule_one").schedule_one(sched)
    # The deadline is the 10 s timeout, on the scheduler's clock (the web page counts it down).
    timeout = sched.clock.now() + 10
    assert sched.recorder.of("waiting") == [
        {"pod": "default/pod8", "node": "node8", "plugins": ["NodeNumber"], "deadline": timeout}
    ]
    sched.clock.advance(7.9)
    assert not sched.client.wait_for_bindings(1, timeout=0.05)
    sched.clock.advance(0.1)
    assert sched.client.wait_for_bindings(1)
    assert sched.client.bindings == [("default/pod8", "node8")]
    assert sched.clock.pending() == 0  # the 10 s timeout was stopped by the allow


@step_param
def test_binding_runs_off_the_scheduling_thread(step: int) -> None:
    sched = offline_scheduler(step)
    _cluster(sched, "node8", "node5")
    schedule_one = step_module(step, "schedule_one").schedule_one
    # pod8 goes to node8 and waits 8 s; meanwhile pod5 is scheduled and waits only 5 s.
    for name in ("pod8", "pod5"):
        sched.scheduling_queue.add(make_pod(name))
        schedule_one(sched)
    assert [w["pod"] for w in sched.recorder.of("waiting")] == ["default/pod8", "default/pod5"]
    sched.clock.advance(5)
    assert sched.client.wait_for_bindings(1)
    sched.clock.advance(3)
    assert sched.client.wait_for_bindings(2)
    assert sched.client.bindings == [("default/pod5", "node5"), ("default/pod8", "node8")]


@step_param
def test_a_node_without_a_digit_allows_at_once(step: int) -> None:
    sched = offline_scheduler(step)
    _cluster(sched, "node-x")
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.recorder.of("waiting") == []
    assert sched.client.wait_for_bindings(1)  # no clock advance needed


class EagerClock(FakeClock):
    """A clock whose 0 s timers fire before ``after_func`` returns, in another thread: the
    worst case of the real clock's race."""

    def after_func(self, delay: float, fn: Callable[[], None]) -> Timer:
        if delay > 0:
            return super().after_func(delay, fn)
        t = threading.Thread(target=fn)
        t.start()
        t.join()
        timer = Timer(self, self.now(), fn, 0.0)
        timer.stopped = True
        return timer


@step_param
def test_node0_permit_race_is_safe(step: int) -> None:
    """The Go original crashes here: node0's 0 s allow fires before the pod is registered."""
    sched = offline_scheduler(step, clock=EagerClock())
    _cluster(sched, "node0")
    sched.scheduling_queue.add(make_pod("pod0"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.client.wait_for_bindings(1)  # without advancing: the allow was not lost
    assert sched.client.bindings == [("default/pod0", "node0")]
    assert sched.recorder.of("waiting") == []  # allowed before it waited: nothing to report


@step_param
def test_node0_with_the_fake_clock(step: int) -> None:
    sched = offline_scheduler(step)
    _cluster(sched, "node0")
    sched.scheduling_queue.add(make_pod("pod0"))
    step_module(step, "schedule_one").schedule_one(sched)
    sched.clock.advance(0)
    assert sched.client.wait_for_bindings(1)


def _always_waits(step: int, sched: Any) -> None:
    fw = step_module(step, "framework")
    plugin = FakePermit("Slow", fw.Status(fw.Code.WAIT), 10.0)
    set_framework(
        sched,
        new_framework(step, {"Slow": lambda a, h: plugin}, permit=["Slow"], clock=sched.clock),
    )


@step_param
def test_a_timed_out_pod_is_not_bound_and_is_reported(step: int) -> None:
    sched = offline_scheduler(step)
    _always_waits(step, sched)
    _cluster(sched, "node1")
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    sched.clock.advance(10)
    join_binding_threads()
    message = "rejected due to timeout after waiting 10s at plugin Slow"
    assert sched.client.bindings == []
    assert [e["message"] for e in sched.recorder.of("error")] == [message]
    assert sched.event_recorder.events == [("Warning", "FailedScheduling", message)]
    [(_, args)] = [c for c in sched.client.calls if c[0] == "patch_namespaced_pod_status"]
    assert args[2]["status"]["conditions"][0]["reason"] == "Unschedulable"


@step_param
@pytest.mark.parametrize(
    ("code", "reason"), [("UNSCHEDULABLE", "Unschedulable"), ("ERROR", "SchedulerError")]
)
def test_a_permit_failure_in_the_scheduling_cycle_is_reported(
    step: int, code: str, reason: str
) -> None:
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    plugin = FakePermit("No", fw.Status(fw.Code[code], ["no way"]))
    set_framework(
        sched, new_framework(step, {"No": lambda a, h: plugin}, permit=["No"], clock=sched.clock)
    )
    _cluster(sched, "node1")
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    join_binding_threads()
    assert sched.client.bindings == []
    [(_, args)] = [c for c in sched.client.calls if c[0] == "patch_namespaced_pod_status"]
    assert args[2]["status"]["conditions"][0]["reason"] == reason


@step_param
def test_stop_rejects_waiting_pods_so_binding_threads_end(step: int) -> None:
    sched = offline_scheduler(step)
    _always_waits(step, sched)
    _cluster(sched, "node1")
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    sched.stop()
    join_binding_threads(timeout=2)
    assert sched.client.bindings == []
    # A pod cut short by stop() is no scheduling failure: no error, no status written.
    assert sched.recorder.of("error") == []
    assert [c for c in sched.client.calls if c[0] == "patch_namespaced_pod_status"] == []


# --- assumed pods -------------------------------------------------------------------------------


def _waiting_at_gate(step: int) -> tuple[Any, Any]:
    """A scheduler whose only pod, pod1, has been scheduled and waits at Permit ("Gate")."""
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    set_framework(
        sched,
        _permit_framework(step, sched.clock, FakePermit("Gate", fw.Status(fw.Code.WAIT), 10.0)),
    )
    add_nodes(sched, make_node("node1"))
    pod = make_pod("pod1")
    sched.pod_informer.store._set("default/pod1", pod)
    sched.pod_informer._notify("add", pod)
    step_module(step, "schedule_one").schedule_one(sched)
    assert framework_of(sched).get_waiting_pod(pod.metadata.uid) is not None
    return sched, pod


def _changed(pod: Any, version: str, **spec: Any) -> Any:
    new = make_pod("pod1", **spec)
    new.metadata.resource_version = version
    new.metadata.labels = {"x": "y"}
    return new


@interim_assumed_param
def test_an_update_of_a_pod_in_its_binding_cycle_does_not_queue_it_again(step: int) -> None:
    # Upstream ignores updates of assumed pods. Queued again, the labelled pod would run a
    # second cycle whose WaitingPod replaces the first; the first would time out and write
    # FailedScheduling and PodScheduled=False for a pod that is then bound.
    sched, pod = _waiting_at_gate(step)
    labelled = _changed(pod, "2")
    sched.pod_informer._notify("update", pod, labelled)
    assert sched.scheduling_queue.pending_pods() == []
    framework_of(sched).get_waiting_pod(pod.metadata.uid).allow("Gate")
    assert sched.client.wait_for_bindings(1)
    join_binding_threads()
    # The informer sees it bound: it is not assumed any more.
    sched.pod_informer._notify("update", labelled, _changed(pod, "3", node_name="node1"))
    assert sched.assumed_pods == set()
    assert sched.client.bindings == [("default/pod1", "node1")]
    assert [e[1] for e in sched.event_recorder.events] == ["Scheduled"]


@interim_assumed_param
def test_a_pod_whose_binding_cycle_failed_takes_updates_again(step: int) -> None:
    sched, pod = _waiting_at_gate(step)
    sched.clock.advance(10)  # Gate times out: the attempt fails and the pod is forgotten
    join_binding_threads()
    assert sched.assumed_pods == set()
    sched.scheduling_queue.delete(pod)  # wherever the failure put it
    sched.pod_informer._notify("update", pod, _changed(pod, "2"))
    assert [p.metadata.name for p in sched.scheduling_queue.pending_pods()] == ["pod1"]
