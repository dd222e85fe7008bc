"""Assume, Reserve and the binding extension points (steps 9+): Unreserve runs in reverse
order on every failure after Reserve, then the cache forgets the pod and the pod is re-queued;
the Bind plugin chain; PostBind after a success; the next cycle counts an assumed pod; and an
update of an assumed pod does not schedule it again. Driven by a FakeClock and the fake API
client: no test sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from minisched.informer import meta_namespace_key
from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    add_pods,
    framework_of,
    make_node,
    make_pod,
    new_framework,
    offline_scheduler,
    set_framework,
)
from tests.test_permit import join_binding_threads
from tests.test_requeue import attempt, where

STEPS = built_steps(9)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

POINTS = ("reserve", "permit", "pre_bind", "bind", "post_bind")


class Tracer:
    """A plugin at every extension point from Reserve on; logs each call in ``calls`` and
    answers Success (Skip for Bind) unless ``answers`` says otherwise."""

    def __init__(self, name: str, fw: Any, calls: list[tuple[str, str]]) -> None:
        self._name = name
        self.fw = fw
        self.calls = calls
        self.answers: dict[str, Any] = {"bind": fw.Status(fw.Code.SKIP)}
        self.permit_timeout = 0.0

    def name(self) -> str:
        return self._name

    def _call(self, point: str) -> Any:
        self.calls.append((self._name, point))
        return self.answers.get(point, self.fw.Status())

    def reserve(self, state: Any, pod: Any, node_name: str) -> Any:
        return self._call("reserve")

    def unreserve(self, state: Any, pod: Any, node_name: str) -> None:
        self._call("unreserve")

    def permit(self, state: Any, pod: Any, node_name: str) -> tuple[Any, float]:
        return self._call("permit"), self.permit_timeout

    def pre_bind(self, state: Any, pod: Any, node_name: str) -> Any:
        return self._call("pre_bind")

    def bind(self, state: Any, pod: Any, node_name: str) -> Any:
        return self._call("bind")

    def post_bind(self, state: Any, pod: Any, node_name: str) -> None:
        self._call("post_bind")


def traced(step: int) -> tuple[Any, Tracer, Tracer, list[tuple[str, str]]]:
    """An offline scheduler whose profile runs tracers A then B at every point from Reserve
    on, with one node (no digit: no NodeNumber here anyway)."""
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    calls: list[tuple[str, str]] = []
    a, b = Tracer("A", fw, calls), Tracer("B", fw, calls)
    b.answers["bind"] = fw.Status()  # B binds (without the API) unless told otherwise
    set_framework(
        sched,
        new_framework(
            step,
            {"A": lambda args, h: a, "B": lambda args, h: b},
            **{point: ["A", "B"] for point in POINTS},
            clock=sched.clock,
            client=sched.client,
        ),
    )
    add_nodes(sched, make_node("node-x"))
    return sched, a, b, calls


def before(point: str) -> list[tuple[str, str]]:
    """The calls of a successful run up to (not including) ``point``."""
    upto = POINTS[: POINTS.index(point)]
    return [(name, p) for p in upto for name in ("A", "B")]


UNRESERVE = [("B", "unreserve"), ("A", "unreserve")]


def assert_forgotten_and_requeued(sched: Any, message: str) -> None:
    assert sched.cache.pod_count() == 0 and not sched.cache.is_assumed_pod(make_pod("pod1"))
    assert where(sched, "pod1")[0] != "none"  # never lost
    assert message in sched.recorder.of("error")[-1]["message"]


@step_param
def test_a_failed_reserve_unreserves_every_plugin_in_reverse_order(step: int) -> None:
    fw = step_module(step, "framework")
    sched, a, b, calls = traced(step)
    b.answers["reserve"] = fw.Status(fw.Code.UNSCHEDULABLE, ["no room"])
    attempt(sched, step, make_pod("pod1"))
    # B's Reserve failed, and A's share is given back too: Unreserve runs for all, B first.
    assert calls == [("A", "reserve"), ("B", "reserve"), *UNRESERVE]
    assert_forgotten_and_requeued(sched, 'running Reserve plugin "B": no room')


@step_param
def test_a_permit_rejection_unreserves_and_forgets(step: int) -> None:
    fw = step_module(step, "framework")
    sched, a, b, calls = traced(step)
    a.answers["permit"] = fw.Status(fw.Code.UNSCHEDULABLE, ["not now"])
    attempt(sched, step, make_pod("pod1"))
    assert calls == [*before("permit"), ("A", "permit"), *UNRESERVE]
    assert_forgotten_and_requeued(sched, "not now")


@step_param
def test_a_rejection_while_waiting_on_permit_unreserves_and_forgets(step: int) -> None:
    fw = step_module(step, "framework")
    sched, a, b, calls = traced(step)
    a.answers["permit"] = fw.Status(fw.Code.WAIT)
    a.permit_timeout = 10.0
    add_pods(sched, make_pod("pod1"))
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.cache.is_assumed_pod(make_pod("pod1"))  # assumed while it waits
    sched.clock.advance(11)  # the wait times out: a rejection
    join_binding_threads()
    assert calls == [*before("pre_bind"), *UNRESERVE]
    assert_forgotten_and_requeued(sched, "rejected due to timeout after waiting")


@step_param
def test_a_failed_pre_bind_unreserves_and_forgets(step: int) -> None:
    fw = step_module(step, "framework")
    sched, a, b, calls = traced(step)
    a.answers["pre_bind"] = fw.Status(fw.Code.ERROR, ["volume lost"])
    attempt(sched, step, make_pod("pod1"))
    assert calls == [*before("pre_bind"), ("A", "pre_bind"), *UNRESERVE]
    assert_forgotten_and_requeued(sched, 'running PreBind plugin "A": volume lost')


@step_param
def test_a_failed_bind_unreserves_and_forgets(step: int) -> None:
    fw = step_module(step, "framework")
    sched, a, b, calls = traced(step)
    b.answers["bind"] = fw.Status(fw.Code.ERROR, ["refused"])
    attempt(sched, step, make_pod("pod1"))
    assert calls == [*before("bind"), ("A", "bind"), ("B", "bind"), *UNRESERVE]
    assert_forgotten_and_requeued(sched, 'binding rejected: running Bind plugin "B": refused')
    # The forget made a move request: the pod backs off instead of waiting for an event.
    assert where(sched, "pod1")[0] == "podBackoffQ"


@step_param
def test_a_bound_pod_runs_post_bind_and_stays_assumed_until_the_informer_confirms(
    step: int,
) -> None:
    sched, a, b, calls = traced(step)
    attempt(sched, step, make_pod("pod1"))
    # A skipped Bind, B bound: then PostBind, and no Unreserve.
    assert calls == [*before("post_bind"), ("A", "post_bind"), ("B", "post_bind")]
    assert sched.recorder.of("assumed") == [{"pod": "default/pod1", "node": "node-x"}]
    assert sched.recorder.of("bound") == [{"pod": "default/pod1", "node": "node-x"}]
    assert sched.cache.is_assumed_pod(make_pod("pod1"))
    bound = make_pod("pod1", node_name="node-x")
    step_module(step, "eventhandlers").add_pod_to_cache(sched, bound)
    assert not sched.cache.is_assumed_pod(bound) and sched.cache.pod_count() == 1


# --- the Bind plugin chain ---------------------------------------------------------------------


def factory(plugin: Tracer) -> Any:
    return lambda args, handle: plugin


def bind_chain(step: int, *answers: Any) -> tuple[Any, list[tuple[str, str]]]:
    fw = step_module(step, "framework")
    calls: list[tuple[str, str]] = []
    plugins = {}
    for i, answer in enumerate(answers):
        t = Tracer(f"B{i}", fw, calls)
        t.answers["bind"] = answer
        plugins[t.name()] = factory(t)
    fwk = new_framework(step, plugins, bind=list(plugins))
    status = fwk.run_bind_plugins(step_module(step, "cycle_state").CycleState(), make_pod("p"), "n")
    return status, calls


@step_param
def test_the_first_bind_plugin_that_does_not_skip_decides(step: int) -> None:
    fw = step_module(step, "framework")
    skip, ok = fw.Status(fw.Code.SKIP), fw.Status()
    status, calls = bind_chain(step, skip, ok, ok)
    assert status.is_success() and calls == [("B0", "bind"), ("B1", "bind")]
    status, calls = bind_chain(step, fw.Status(fw.Code.ERROR, ["boom"]), ok)
    assert status.code == fw.Code.ERROR and calls == [("B0", "bind")]
    assert status.message() == 'running Bind plugin "B0": boom'


@step_param
def test_when_every_bind_plugin_skips_the_binding_fails(step: int) -> None:
    fw = step_module(step, "framework")
    skip = fw.Status(fw.Code.SKIP)
    status, calls = bind_chain(step, skip, skip)
    assert status.code == fw.Code.SKIP and calls == [("B0", "bind"), ("B1", "bind")]
    if step >= 14:
        # No Bind plugin at all: from a configuration, upstream's framework refuses the
        # profile. One that skips shows the same failure.
        with pytest.raises(ValueError, match="at least one bind plugin is needed"):
            bind_chain(step)
        skipping = {"B0": factory(Tracer("B0", fw, []))}
        sched = offline_scheduler(step)
        set_framework(sched, new_framework(step, skipping, bind=["B0"], clock=sched.clock))
    else:
        assert bind_chain(step)[0].code == fw.Code.SKIP  # no Bind plugin at all
        sched = offline_scheduler(step)
        set_framework(sched, new_framework(step, {}, bind=[], clock=sched.clock))
    add_nodes(sched, make_node("node-x"))
    attempt(sched, step, make_pod("pod1"))
    assert sched.recorder.of("error")[-1]["message"] == "binding rejected: bind status: Skip, "
    assert sched.cache.pod_count() == 0


@step_param
def test_default_binder_binds_through_the_api_and_flaky_binder_refuses_once(step: int) -> None:
    flaky = step_module(step, "plugins.flakybinder")
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node-x"))
    pod = make_pod("pod1")
    pod.metadata.annotations = {flaky.ANNOTATION: "true"}
    attempt(sched, step, pod)
    assert sched.client.bindings == []
    assert 'running Bind plugin "FlakyBinder"' in sched.recorder.of("error")[-1]["message"]
    sched.clock.advance(10)  # the backoff; the flush loop is not running: move by hand
    sched.scheduling_queue.flush_backoff_q_completed()
    step_module(step, "schedule_one").schedule_one(sched)
    join_binding_threads()
    assert sched.client.bindings == [("default/pod1", "node-x")]
    assert framework_of(sched).bind_plugins[0].refused == set()


# --- assume: the next cycle counts the pod; updates of an assumed pod ---------------------------


def schedule(sched: Any, step: int, pod: Any) -> None:
    """One scheduling cycle for the pod; its binding cycle may go on waiting on Permit."""
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)


def full_after_one(name: str) -> Any:
    node = make_node(name)
    node.status.allocatable = {**node.status.allocatable, "pods": "1"}
    return node


@step_param
def test_the_next_cycle_counts_a_pod_assumed_but_not_bound(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, full_after_one("node5"))  # NodeNumber: 5 s on Permit
    schedule(sched, step, make_pod("pod1"))
    assert sched.client.bindings == [] and sched.cache.is_assumed_pod(make_pod("pod1"))
    schedule(sched, step, make_pod("pod2"))
    assert sched.recorder.of("filter")[-1] == {
        "pod": "default/pod2",
        "node": "node5",
        "plugin": "MaxPods" if step == 9 else "NodeResourcesFit",
        "reason": "Too many pods",
    }
    assert where(sched, "pod2")[0] == "unschedulableQ"
    sched.clock.advance(5)
    join_binding_threads()
    assert sched.client.bindings == [("default/pod1", "node5")]
    if step == 9:  # MaxPods gave back what it reserved once the pod was bound.
        assert framework_of(sched).reserve_plugins[0].in_flight == {}


@step_param
def test_an_update_of_an_assumed_pod_does_not_schedule_it_again(step: int) -> None:
    handlers = step_module(step, "eventhandlers")
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node5"))  # NodeNumber: 5 s on Permit
    old = make_pod("pod1")
    schedule(sched, step, old)
    assert sched.cache.is_assumed_pod(old)
    # Its PodScheduled condition written, say: a new resourceVersion.
    new = make_pod("pod1")
    new.metadata.resource_version = "2"
    handlers.update_pod_in_scheduling_queue(sched, old, new)
    assert where(sched, "pod1")[0] == "none"
    # Queued again anyway (an update before it was assumed): the cycle skips it.
    sched.scheduling_queue.add(new)
    step_module(step, "schedule_one").schedule_one(sched)
    assert len(sched.recorder.of("attempt")) == 1
    sched.clock.advance(5)
    join_binding_threads()
    assert sched.client.bindings == [("default/pod1", "node5")]


@pytest.mark.parametrize("step", built_steps(9), ids=lambda n: f"step{n}")
def test_a_pod_deleted_before_its_binding_is_a_failure_the_error_func_drops(
    step: int, caplog: Any
) -> None:
    """A pod deleted while its bind is on the wire (a scenario's cleanup, with no Permit wait
    on a node without a digit). As v1.23: the cache forgets it, and recordSchedulingFailure
    still runs (a FailedScheduling event, a status update that finds no pod); the error func
    logs the 404 at info (V(2) upstream) and does not queue a pod the informer no longer has."""
    import json

    from kubernetes import client

    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node-a"))
    pod = make_pod("pod1")

    def gone(name: str, namespace: str, body: Any, **_: Any) -> Any:
        sched.pod_informer.store._pop(meta_namespace_key(pod))  # the informer saw it go
        err = client.ApiException(status=404, reason="Not Found")
        err.body = json.dumps(
            {"kind": "Status", "code": 404, "message": f'pods "{name}" not found'}
        )
        raise err

    sched.client.create_namespaced_pod_binding = gone
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    with caplog.at_level("INFO"):
        step_module(step, "schedule_one").schedule_one(sched)
        join_binding_threads()
    assert sched.recorder.of("error") == []
    assert sched.recorder.of("queue")[-1]["event"] == "deleted before binding"
    assert not sched.cache.is_assumed_pod(pod)
    assert [r.levelname for r in caplog.records if r.levelname == "WARNING"] == []
    assert "Unable to schedule pod, possibly due to node not found; waiting" in caplog.text
    assert "Pod doesn't exist in informer cache" in caplog.text
    [(kind, reason, message)] = sched.event_recorder.events
    assert (kind, reason) == ("Warning", "FailedScheduling")
    assert message == (
        'binding rejected: running Bind plugin "DefaultBinder": pods "pod1" not found'
    )
    assert [c[0] for c in sched.client.calls] == ["patch_namespaced_pod_status"]
    assert sched.scheduling_queue.pending_pods() == []
