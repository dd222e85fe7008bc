"""The scheduling queue of steps 6-8 (kube-scheduler's PriorityQueue), driven by a FakeClock.

Upstream: pkg/scheduler/internal/queue/scheduling_queue_test.go covers the same ground.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

import pytest

from minisched.clock import FakeClock
from tests.conftest import built_steps, step_module
from tests.fakes import ListRecorder, make_pod

QUEUE_STEPS = built_steps(6)
EVENT_STEPS = built_steps(7)
FLUSH_STEPS = built_steps(8)


def ids(steps: list[int]) -> list[str]:
    return [f"step{n}" for n in steps]


class Q:
    """One step's queue with its clock and recorder, and helpers to look inside."""

    def __init__(self, step: int, **options: Any) -> None:
        self.step = step
        self.sq: ModuleType = step_module(step, "scheduling_queue")
        self.fw: ModuleType = step_module(step, "framework")
        less = step_module(step, "plugins.prioritysort").PrioritySort().less
        self.clock = FakeClock()
        self.recorder = ListRecorder()
        self.q = self.sq.PriorityQueue(less, self.clock, self.recorder, **options)

    def where(self) -> dict[str, list[str]]:
        """Pod names per sub-queue (activeQ in pop order, ties by name)."""
        q = self.q
        by_name = sorted(q._active_q.list(), key=lambda p: p.pod.metadata.name)
        active = sorted(by_name, key=_rank(q))
        return {
            "activeQ": [p.pod.metadata.name for p in active],
            "podBackoffQ": sorted(p.pod.metadata.name for p in q._pod_backoff_q.list()),
            "unschedulableQ": sorted(p.pod.metadata.name for p in q._unschedulable_q.values()),
        }

    def queue_of(self, name: str) -> str:
        for queue, names in self.where().items():
            if name in names:
                return queue
        return "none"

    def fail(self, p_info: Any, *plugins: str) -> str | None:
        """What the scheduler's error func does after a failed attempt."""
        p_info.unschedulable_plugins = set(plugins)
        return self.q.add_unschedulable_if_not_present(p_info, self.q.scheduling_cycle)

    def pop(self) -> Any:
        """Pop without blocking: a test that pops from an empty activeQ is wrong."""
        assert len(self.q._active_q) > 0, self.where()
        return self.q.pop()

    def event(self, name: str) -> Any:
        """The queue's event of that name. Step 6's events are labels and match every pod, so
        a label the step does not define does as well."""
        return getattr(self.sq, name, name)


def _rank(q: Any) -> Any:
    import functools

    less = q._active_q._less
    return functools.cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))


@pytest.fixture(params=QUEUE_STEPS, ids=ids(QUEUE_STEPS))
def qq(request: pytest.FixtureRequest) -> Q:
    return Q(request.param)


# --- activeQ --------------------------------------------------------------------------------------


def test_active_q_pops_by_priority_then_by_arrival(qq: Q) -> None:
    for name, priority in (("low", 1), ("none", None), ("high", 10), ("high2", 10), ("low2", 1)):
        qq.q.add(make_pod(name, priority=priority))
        qq.clock.advance(0.1)
    popped = [qq.pop().pod.metadata.name for _ in range(5)]
    assert popped == ["high", "high2", "low", "low2", "none"]


def test_pop_counts_the_attempt_and_the_cycle(qq: Q) -> None:
    qq.q.add(make_pod("a"))
    qq.q.add(make_pod("b"))
    assert qq.q.scheduling_cycle == 0
    first = qq.pop()
    assert (first.attempts, qq.q.scheduling_cycle) == (1, 1)
    qq.pop()
    assert qq.q.scheduling_cycle == 2


def test_a_retried_pod_keeps_its_queued_pod_info(qq: Q) -> None:
    qq.q.add(make_pod("a"))
    first = qq.pop()
    start = first.initial_attempt_timestamp
    qq.clock.advance(5)
    assert qq.fail(first) is None
    qq.clock.advance(1)
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))
    again = qq.pop()
    assert again is first
    assert (again.attempts, again.initial_attempt_timestamp) == (2, start)
    assert again.timestamp == start + 5  # re-queueing refreshed the timestamp


def test_pop_blocks_until_a_pod_arrives_and_close_ends_it(qq: Q) -> None:
    got: list[Any] = []
    popper = threading.Thread(target=lambda: got.append(qq.q.pop()))
    popper.start()
    popper.join(0.05)
    assert popper.is_alive() and got == []
    qq.q.add(make_pod("a"))
    popper.join(5)
    assert got[0].pod.metadata.name == "a"

    got.clear()
    popper = threading.Thread(target=lambda: got.append(qq.q.pop()))
    popper.start()
    qq.q.close()
    popper.join(5)
    assert got == [None]


# --- backoff --------------------------------------------------------------------------------------


def test_backoff_is_1_2_4_8_10_10_seconds(qq: Q) -> None:
    qq.q.add(make_pod("a"))
    durations = []
    for _ in range(6):
        p_info = qq.pop()
        qq.fail(p_info, "NodeUnschedulable")
        durations.append(qq.q.get_backoff_time(p_info) - p_info.timestamp)
        qq.clock.advance(durations[-1])
        qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))
        assert qq.queue_of("a") == "activeQ"  # the backoff is over: straight to activeQ
    assert durations == [1, 2, 4, 8, 10, 10]


def test_a_pod_backs_off_until_its_backoff_ends(qq: Q) -> None:
    _fail_in_order(qq, {"a": (), "b": ()})
    qq.clock.advance(0.999)
    qq.q.move_all_to_active_or_backoff_queue(
        qq.event("WILDCARD_EVENT"), lambda pod: pod.metadata.name == "a"
    )
    qq.clock.advance(0.001)
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))
    assert qq.where() == {"activeQ": ["b"], "podBackoffQ": ["a"], "unschedulableQ": []}


def test_backoff_limits_are_parameters(qq: Q) -> None:
    q = Q(qq.step, pod_initial_backoff_duration=0.5, pod_max_backoff_duration=3).q
    p_info = q._new_queued_pod_info(make_pod("a"))
    got = []
    for attempts in range(1, 6):
        p_info.attempts = attempts
        got.append(q.calculate_backoff_duration(p_info))
    assert got == [0.5, 1, 2, 3, 3]


def test_backoff_q_is_ordered_by_backoff_end(qq: Q) -> None:
    for name in ("a", "b"):
        qq.q.add(make_pod(name))
    a, b = qq.pop(), qq.pop()
    a.attempts = 3  # 4 s
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))  # a move request
    assert qq.fail(a) is None and qq.fail(b) is None
    assert qq.where()["podBackoffQ"] == ["a", "b"]
    assert qq.q._pod_backoff_q.peek() is b  # 1 s < 4 s
    # Each move into podBackoffQ records when the backoff ends, for the web page.
    now = qq.clock.now()
    deadlines = {m["pod"]: m["deadline"] for m in qq.recorder.of("queue")[-2:]}
    assert deadlines == {"default/a": now + 4, "default/b": now + 1}


# --- unschedulableQ and the moveRequestCycle rule -------------------------------------------------


def test_a_failed_pod_waits_in_unschedulable_q_under_its_full_name(qq: Q) -> None:
    qq.q.add(make_pod("a", namespace="ns1"))
    p_info = qq.pop()
    assert qq.fail(p_info, "NodeUnschedulable") is None
    assert list(qq.q._unschedulable_q) == ["a_ns1"]
    assert qq.q._unschedulable_q["a_ns1"].unschedulable_plugins == {"NodeUnschedulable"}
    moves = qq.recorder.of("queue")
    assert moves[-1] == {
        "pod": "ns1/a",
        "queue": "unschedulableQ",
        "event": "ScheduleAttemptFailure",
        "plugins": ["NodeUnschedulable"],  # the web page shows who rejected it
    }


def test_a_pod_that_failed_after_a_move_request_backs_off_instead(qq: Q) -> None:
    qq.q.add(make_pod("a"))
    p_info = qq.pop()
    assert qq.q.move_request_cycle == -1
    # An event arrives while "a" is being scheduled; unschedulableQ is empty, nothing moves,
    # but the queue remembers the request...
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))
    assert qq.q.move_request_cycle == qq.q.scheduling_cycle == 1
    # ...so "a", which may have missed it, goes to podBackoffQ, not unschedulableQ.
    assert qq.fail(p_info, "NodeUnschedulable") is None
    assert qq.queue_of("a") == "podBackoffQ"


def test_a_pod_popped_after_the_move_request_waits_for_the_next_event(qq: Q) -> None:
    qq.q.add(make_pod("a"))
    qq.q.add(make_pod("b"))
    qq.pop()
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))
    b = qq.pop()  # cycle 2 starts after the request (cycle 1)
    assert qq.fail(b, "NodeUnschedulable") is None
    assert qq.queue_of("b") == "unschedulableQ"


def test_a_pod_already_queued_is_not_added_twice(qq: Q) -> None:
    pod = make_pod("a")
    qq.q.add(pod)
    p_info = qq.pop()
    qq.q.update(pod, make_pod("a"))  # e.g. re-added by an update while in flight
    assert qq.queue_of("a") == "activeQ"
    assert "already present in the active queue" in qq.fail(p_info)
    assert qq.where() == {"activeQ": ["a"], "podBackoffQ": [], "unschedulableQ": []}


# --- moving pods on cluster events ----------------------------------------------------------------


def _queue_with_event_map(step: int) -> Q:
    fw = step_module(step, "framework")
    node_add = fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD)
    node_add_or_taint = fw.ClusterEvent(
        fw.GVK.NODE, fw.ActionType.ADD | fw.ActionType.UPDATE_NODE_TAINT
    )
    return Q(
        step,
        cluster_event_map={
            node_add_or_taint: {"NodeUnschedulable"},
            node_add: {"NodeNumber"},
            fw.ClusterEvent(fw.GVK.WILDCARD, fw.ActionType.ALL): {"NoExtensions"},
        },
    )


def _fail_in_order(qq: Q, rejected_by: dict[str, tuple[str, ...]]) -> None:
    for name in rejected_by:
        qq.q.add(make_pod(name))
    for _ in rejected_by:
        p_info = qq.pop()
        qq.fail(p_info, *rejected_by[p_info.pod.metadata.name])


@pytest.mark.parametrize("step", EVENT_STEPS, ids=ids(EVENT_STEPS))
def test_an_event_moves_only_pods_whose_rejecting_plugins_registered_it(step: int) -> None:
    qq = _queue_with_event_map(step)
    fw = qq.fw
    _fail_in_order(
        qq,
        {
            "unschedulable": ("NodeUnschedulable",),
            "number": ("NodeNumber",),
            "both": ("NodeUnschedulable", "NodeNumber"),
            "other": ("Unregistered",),
            "anything": (),  # failed without a plugin (an error): any event moves it
        },
    )
    qq.clock.advance(1)  # past every backoff: movers go to activeQ
    taint = fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.UPDATE_NODE_TAINT, "NodeTaintChange")
    qq.q.move_all_to_active_or_backoff_queue(taint)
    assert qq.where() == {
        "activeQ": ["anything", "both", "unschedulable"],
        "podBackoffQ": [],
        "unschedulableQ": ["number", "other"],
    }
    assert {m["pod"]: m["event"] for m in qq.recorder.of("queue")[-3:]} == {
        "default/anything": "NodeTaintChange",
        "default/both": "NodeTaintChange",
        "default/unschedulable": "NodeTaintChange",
    }
    label = fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.UPDATE_NODE_LABEL, "NodeLabelChange")
    qq.q.move_all_to_active_or_backoff_queue(label)
    assert qq.where()["unschedulableQ"] == ["number", "other"]
    qq.q.move_all_to_active_or_backoff_queue(fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD))
    assert qq.where()["unschedulableQ"] == ["other"]
    qq.q.move_all_to_active_or_backoff_queue(fw.ClusterEvent(fw.GVK.POD, fw.ActionType.DELETE))
    assert qq.where()["unschedulableQ"] == ["other"]
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))
    assert qq.where()["unschedulableQ"] == []


@pytest.mark.parametrize("step", EVENT_STEPS, ids=ids(EVENT_STEPS))
def test_a_plugin_registered_for_the_wildcard_is_moved_by_any_event(step: int) -> None:
    qq = _queue_with_event_map(step)
    _fail_in_order(qq, {"a": ("NoExtensions",)})
    qq.q.move_all_to_active_or_backoff_queue(
        qq.fw.ClusterEvent(qq.fw.GVK.POD, qq.fw.ActionType.ADD)
    )
    assert qq.queue_of("a") == "podBackoffQ"  # moved, but still backing off


def test_before_plugins_register_events_every_event_moves_every_pod() -> None:
    # Step 6: no plugin has EnqueueExtensions, so, as upstream, each counts as registered for
    # every event; a pod delete moves a pod NodeUnschedulable rejected.
    qq = Q(6)
    _fail_in_order(qq, {"a": ("NodeUnschedulable",), "b": ()})
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))
    assert qq.where()["podBackoffQ"] == ["a", "b"]


@pytest.mark.parametrize("step", EVENT_STEPS, ids=ids(EVENT_STEPS))
def test_with_no_event_map_only_pods_without_plugins_move(step: int) -> None:
    qq = Q(step)
    _fail_in_order(qq, {"a": ("NodeUnschedulable",), "b": ()})
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))
    assert qq.where()["unschedulableQ"] == ["a"]
    assert qq.where()["podBackoffQ"] == ["b"]


def test_pods_still_backing_off_move_to_the_backoff_q(qq: Q) -> None:
    _fail_in_order(qq, {"a": (), "b": ()})
    qq.clock.advance(0.5)
    # "b" has waited its second already.
    qq.q._unschedulable_q["b_default"].timestamp -= 1
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))
    assert qq.where() == {"activeQ": ["b"], "podBackoffQ": ["a"], "unschedulableQ": []}


def test_the_pre_check_filters_the_pods_to_move(qq: Q) -> None:
    _fail_in_order(qq, {"a": (), "b": ()})
    qq.q.move_all_to_active_or_backoff_queue(
        qq.event("WILDCARD_EVENT"), lambda pod: pod.metadata.name == "b"
    )
    assert qq.where()["unschedulableQ"] == ["a"]


def test_a_move_request_is_remembered_even_if_nothing_moves(qq: Q) -> None:
    qq.q.add(make_pod("a"))
    qq.pop()
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))
    assert qq.q.move_request_cycle == 1


# --- updates and deletes --------------------------------------------------------------------------


def test_update_in_active_or_backoff_q_is_in_place(qq: Q) -> None:
    _fail_in_order(qq, {"b": ()})
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))  # b -> backoff
    qq.q.add(make_pod("a"))
    new_a, new_b = make_pod("a", priority=5), make_pod("b", priority=5)
    qq.q.update(make_pod("a"), new_a)
    qq.q.update(make_pod("b"), new_b)
    assert qq.q._active_q.get("default/a").pod is new_a
    assert qq.q._pod_backoff_q.get("default/b").pod is new_b
    assert qq.where() == {"activeQ": ["a"], "podBackoffQ": ["b"], "unschedulableQ": []}


def test_a_status_only_update_leaves_an_unschedulable_pod_waiting(qq: Q) -> None:
    from kubernetes.client import V1PodCondition, V1PodStatus

    _fail_in_order(qq, {"a": ("NodeUnschedulable",)})
    new = make_pod("a")
    new.metadata.resource_version = "2"
    new.status = V1PodStatus(
        conditions=[V1PodCondition(type="PodScheduled", status="False", reason="Unschedulable")]
    )
    qq.q.update(make_pod("a"), new)
    assert qq.queue_of("a") == "unschedulableQ"
    assert qq.q._unschedulable_q["a_default"].pod is new  # the newest version is kept


def test_a_meaningful_update_moves_an_unschedulable_pod(qq: Q) -> None:
    from kubernetes.client import V1Toleration

    _fail_in_order(qq, {"a": ("NodeUnschedulable",), "b": ("NodeUnschedulable",)})
    tolerant = [V1Toleration(operator="Exists")]
    qq.q.update(make_pod("a"), make_pod("a", tolerations=tolerant))
    assert qq.queue_of("a") == "podBackoffQ"  # still backing off
    qq.clock.advance(1)
    qq.q.update(make_pod("b"), make_pod("b", tolerations=tolerant))
    assert qq.queue_of("b") == "activeQ"
    assert qq.recorder.of("queue")[-1]["event"] == "PodUpdate"


def test_an_update_of_an_unknown_pod_adds_it(qq: Q) -> None:
    qq.q.update(make_pod("a"), make_pod("a"))
    assert qq.where()["activeQ"] == ["a"]


def test_delete_removes_the_pod_from_any_queue(qq: Q) -> None:
    _fail_in_order(qq, {"u": ("X",), "b": ()})
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))  # b -> backoff
    qq.q.add(make_pod("a"))
    for name in ("a", "b", "u"):
        qq.q.delete(make_pod(name))
    assert qq.q.pending_pods() == []
    assert [m["queue"] for m in qq.recorder.of("queue")[-3:]] == ["none"] * 3


def test_pending_pods_lists_all_three_queues(qq: Q) -> None:
    _fail_in_order(qq, {"u": ("X",), "b": ()})
    qq.q.move_all_to_active_or_backoff_queue(qq.event("ASSIGNED_POD_DELETE"))
    qq.q.add(make_pod("a"))
    assert sorted(p.metadata.name for p in qq.q.pending_pods()) == ["a", "b", "u"]


def test_add_takes_a_pod_out_of_the_other_queues(qq: Q) -> None:
    _fail_in_order(qq, {"u": ("X",)})
    qq.q.add(make_pod("u"))
    assert qq.where() == {"activeQ": ["u"], "podBackoffQ": [], "unschedulableQ": []}


# --- assigned pods (step 7 on) --------------------------------------------------------------------


@pytest.mark.parametrize("step", EVENT_STEPS, ids=ids(EVENT_STEPS))
def test_an_assigned_pod_is_a_move_request_but_moves_nobody(step: int) -> None:
    qq = Q(step)
    _fail_in_order(qq, {"a": ()})
    qq.q.add(make_pod("b"))
    qq.pop()
    qq.q.assigned_pod_added(make_pod("x", node_name="node1"))
    assert qq.q.move_request_cycle == 2
    assert qq.queue_of("a") == "unschedulableQ"
    qq.q.assigned_pod_updated(make_pod("x", node_name="node1"))
    assert qq.queue_of("a") == "unschedulableQ"


# --- the background loops (step 8) ----------------------------------------------------------------


@pytest.mark.parametrize("step", FLUSH_STEPS, ids=ids(FLUSH_STEPS))
def test_the_backoff_flush_moves_pods_within_a_second_of_their_backoff(step: int) -> None:
    qq = Q(step)
    qq.q.run()
    qq.clock.advance(0.5)  # the flush ticks at 1.0, 2.0, ... from now on: off by 0.5
    _fail_in_order(qq, {"a": ()})
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))
    assert qq.queue_of("a") == "podBackoffQ"  # backoff ends at 1.5
    qq.clock.advance(0.5)  # tick at 1.0: still backing off
    assert qq.queue_of("a") == "podBackoffQ"
    qq.clock.advance(0.99)  # 1.99: backoff over, no tick yet
    assert qq.queue_of("a") == "podBackoffQ"
    qq.clock.advance(0.01)  # tick at 2.0
    assert qq.queue_of("a") == "activeQ"
    assert qq.recorder.of("queue")[-1]["event"] == "BackoffComplete"
    assert qq.pop().pod.metadata.name == "a"
    qq.q.close()


@pytest.mark.parametrize("step", FLUSH_STEPS, ids=ids(FLUSH_STEPS))
def test_the_backoff_flush_takes_only_expired_pods_in_order(step: int) -> None:
    qq = Q(step)
    qq.q.add(make_pod("a"))
    qq.q.add(make_pod("b"))
    a, b = qq.pop(), qq.pop()
    a.attempts = 4  # 8 s
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))
    qq.fail(a)
    qq.fail(b)
    qq.clock.advance(1)
    qq.q.flush_backoff_q_completed()
    assert qq.where() == {"activeQ": ["b"], "podBackoffQ": ["a"], "unschedulableQ": []}
    qq.clock.advance(7)
    qq.q.flush_backoff_q_completed()
    assert sorted(qq.where()["activeQ"]) == ["a", "b"]


@pytest.mark.parametrize("step", FLUSH_STEPS, ids=ids(FLUSH_STEPS))
def test_pods_left_in_unschedulable_q_over_60_s_are_retried_by_the_30_s_loop(step: int) -> None:
    qq = Q(step)
    qq.q.run()
    _fail_in_order(qq, {"a": ("NeverMovedByAnEvent",)})
    qq.clock.advance(60)  # ticks at 30 and 60: waited 60 s, not more than 60 s
    assert qq.queue_of("a") == "unschedulableQ"
    qq.clock.advance(29.9)
    assert qq.queue_of("a") == "unschedulableQ"
    qq.clock.advance(0.1)  # tick at 90
    assert qq.queue_of("a") == "activeQ"  # its 1 s backoff is long over
    assert qq.recorder.of("queue")[-1]["event"] == "UnschedulableTimeout"
    qq.q.close()


@pytest.mark.parametrize("step", FLUSH_STEPS, ids=ids(FLUSH_STEPS))
def test_the_loop_periods_and_the_leftover_age_are_parameters(step: int) -> None:
    qq = Q(
        step,
        backoff_q_flush_period=0.25,
        unschedulable_q_flush_period=2,
        unschedulable_q_time_interval=3,
    )
    qq.q.run()
    _fail_in_order(qq, {"a": ("NeverMovedByAnEvent",)})
    qq.clock.advance(4)
    assert qq.queue_of("a") == "activeQ"
    qq.q.close()


@pytest.mark.parametrize("step", FLUSH_STEPS, ids=ids(FLUSH_STEPS))
def test_close_stops_the_loops(step: int) -> None:
    qq = Q(step)
    assert qq.clock.pending() == 0
    qq.q.run()
    qq.q.run()  # a second run starts nothing more
    assert qq.clock.pending() == 2
    qq.q.close()
    assert qq.clock.pending() == 0
    _fail_in_order(qq, {"a": ()})
    qq.q.move_all_to_active_or_backoff_queue(qq.event("WILDCARD_EVENT"))
    qq.clock.advance(100)
    assert qq.queue_of("a") == "podBackoffQ"  # nothing flushes a closed queue
