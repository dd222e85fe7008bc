"""All or nothing, end to end: step 16's scheduler with Coscheduling, on the embedded API
server, one scheduling cycle at a time.

The test calls ``schedule_one`` itself instead of running the scheduler's loop, so that every
cycle is one the test chose, and the PodGroups, pods, bindings and conditions are the API
server's. Timers (Permit's wait) run on a FakeClock: a timeout is a clock advance, not a wait.
From step 16 on (the steps after it carry Coscheduling forward).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from minisched import cluster, goroutine, runner
from minisched.clock import FakeClock
from minisched.scenario import SCENARIO_LABEL, Scenario
from scenarios import step16 as story
from tests.conftest import built_steps, step_module
from tests.fakes import ListRecorder

STEPS = built_steps(16)
MANIFEST = Path(__file__).resolve().parent.parent / "manifests" / "podgroup-crd.yaml"
TIMEOUT = 10.0


class Gang:
    """A step's scheduler, its informers running but not its loop, and a scenario's objects."""

    def __init__(self, step: int, api_client: client.ApiClient, name: str) -> None:
        config = step_module(step, "config").load_config(story.CONFIG)
        self.clock = FakeClock()
        self.recorder = ListRecorder()
        self.sched: Any = step_module(step, "scheduler").Scheduler(
            api_client,
            rng=random.Random(1),
            clock=self.clock,
            recorder=self.recorder,
            node_selector=f"{SCENARIO_LABEL}={name}",
            config=config,
        )
        self.schedule_one = step_module(step, "schedule_one").schedule_one
        informers = [self.sched.pod_informer, self.sched.node_informer]
        for informer in [*informers, *self.sched.dynamic_informers]:
            informer.start()
            assert informer.wait_for_cache_sync(TIMEOUT)
        self.sched.scheduling_queue.run()
        self.scenario = Scenario(
            api_client,
            name,
            wait_for_cache=runner._cache_probe(self.sched, SimpleNamespace(server=None)),
            say=lambda line: None,
        )

    def active(self, count: int) -> None:
        """Wait until activeQ holds ``count`` pods."""
        queue = self.sched.scheduling_queue
        with queue._lock:
            assert queue._lock.wait_for(lambda: len(queue._active_q) == count, TIMEOUT), (
                f"activeQ holds {len(queue._active_q)} pods, not {count}"
            )

    def cycle(self, expected_pod: str) -> None:
        """One scheduling cycle, of the pod at activeQ's head, which must be ``expected_pod``;
        then wait for the binding cycles it started to end or wait."""
        head = self.sched.scheduling_queue._active_q.peek()
        assert head is not None and head.pod.metadata.name == expected_pod
        self.schedule_one(self.sched)

    def settled(self) -> None:
        """Wait until no binding cycle runs (those waiting at Permit count as running)."""
        assert goroutine.wait_for("binding ", TIMEOUT), "a binding cycle is still running"

    def requested_cpu(self) -> dict[str, int]:
        """Each node's requested millicores, as the scheduler's cache counts them."""
        return {i.node().metadata.name: i.requested.milli_cpu for i in self.sched.node_infos()}

    def waiting(self) -> set[str]:
        names: set[str] = set()
        fwk = self.sched.profiles["minisched"]
        fwk.iterate_over_waiting_pods(lambda wp: names.add(wp.get_pod().metadata.name))
        return names

    def member(self, group: str, name: str, cpu: int, scheduler_name: str | None = None) -> None:
        self.scenario.create_pod(
            name,
            requests={"cpu": str(cpu), "memory": f"{4 * cpu}Gi"},
            labels={story.POD_GROUP_LABEL: group},
            scheduler_name=scheduler_name,
        )

    def condition(self, name: str) -> str:
        """The message of the pod's PodScheduled=False condition, once it has one."""
        pods = self.scenario.wait_for(
            lambda pods: name in pods and story.failed_with(pods[name], ""), TIMEOUT
        )
        for c in pods[name].status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False":
                return str(c.message)
        raise AssertionError(f"{name} has no PodScheduled=False condition")

    def close(self) -> None:
        self.sched.stop()
        self.settled()
        self.scenario.cleanup()


@pytest.fixture
def gang(request: pytest.FixtureRequest, api_client: client.ApiClient) -> Iterator[Gang]:
    cluster.apply_crd(api_client, MANIFEST)
    g = Gang(request.param, api_client, "gang")
    g.scenario.__enter__()
    try:
        yield g
    finally:
        g.close()


step_param = pytest.mark.parametrize("gang", STEPS, ids=lambda n: f"step{n}", indirect=True)


def nodes(g: Gang, **cpus: int) -> None:
    for name, cpu in cpus.items():
        g.scenario.create_node(name, cpu=str(cpu), memory=f"{4 * cpu}Gi")
    g.scenario.scheduler_has_seen("node", list(cpus))


def group_seen(g: Gang, name: str) -> None:
    """Wait until the scheduler's PodGroup informer holds the group: its pods' PreFilter reads
    it there, and a pod scheduled before it arrives fails with "PodGroup not found"."""
    informers = [i for i in g.sched.dynamic_informers if i.name != "V1Pod"]
    assert informers, "the profile has no PodGroup informer"
    assert informers[0].store.wait_until(
        lambda items: any(key.rsplit("/", 1)[-1] == name for key in items), 10
    ), f"the scheduler never saw PodGroup {name}"


@step_param
def test_two_of_three_bind_nothing_and_the_third_binds_all(gang: Gang) -> None:
    g = gang
    nodes(g, **{"gang-n1": 4, "gang-n2": 4})
    story.create_pod_group(g.scenario, "trio", 3)
    group_seen(g, "trio")
    g.member("trio", "trio-a", 1)
    g.member("trio", "trio-b", 1)
    g.scenario.scheduler_has_seen("pod", ["trio-a", "trio-b"])
    g.active(2)
    g.cycle("trio-a")
    g.cycle("trio-b")
    message = (
        "0/2 nodes are available: 2 pre-filter pod trio-b cannot find enough sibling pods, "
        "current pods number: 2, minMember of group: 3."
    )
    assert g.condition("trio-b") == message
    assert g.requested_cpu() == {"gang-n1": 0, "gang-n2": 0}
    assert g.scenario.bindings() == {"trio-a": None, "trio-b": None}

    # The third pod waits at Permit, and has its siblings activated: they leave
    # unschedulableQ, though no cluster event moved them.
    g.member("trio", "trio-c", 1)
    g.active(1)
    g.cycle("trio-c")
    assert g.waiting() == {"trio-c"}
    g.active(2)
    assert [e["queue"] for e in g.recorder.of("queue") if e.get("event") == "ForceActivate"] == [
        "activeQ",
        "activeQ",
    ]
    g.cycle("trio-a")
    assert g.waiting() == {"trio-a", "trio-c"}
    g.cycle("trio-b")  # assigned 2 + 1 >= minMember: Permit allows all three
    g.settled()
    bound = g.scenario.wait_for_bindings(["trio-a", "trio-b", "trio-c"], TIMEOUT)
    assert all(bound.values()), bound
    assert sum(g.requested_cpu().values()) == 3000


@step_param
def test_a_group_that_does_not_fit_binds_nothing_and_holds_no_room(gang: Gang) -> None:
    g = gang
    nodes(g, **{"gang-big": 4, "gang-small": 2})
    story.create_pod_group(g.scenario, "giant", 3)
    group_seen(g, "giant")
    for name in ("giant-a", "giant-b", "giant-c"):
        g.member("giant", name, 3)
    g.scenario.scheduler_has_seen("pod", ["giant-a", "giant-b", "giant-c"])
    g.active(3)
    g.cycle("giant-a")  # fits gang-big, waits at Permit
    assert g.waiting() == {"giant-a"}
    assert g.requested_cpu() == {"gang-big": 3000, "gang-small": 0}
    g.cycle("giant-b")  # fits nowhere: PostFilter rejects the waiting giant-a
    g.settled()
    assert g.waiting() == set()
    assert g.condition("giant-a") == "optimistic rejection in PostFilter"
    assert g.condition("giant-b") == (
        "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."
    )
    # giant-a was forgotten: no room is held for a group that cannot run.
    assert g.requested_cpu() == {"gang-big": 0, "gang-small": 0}
    assert g.scenario.bindings() == {"giant-a": None, "giant-b": None, "giant-c": None}
    # And no pod is dropped: both wait in the queue for another try.
    pending = {p.metadata.name for p in g.sched.scheduling_queue.pending_pods()}
    assert pending == {"giant-a", "giant-b", "giant-c"}


@step_param
def test_a_group_whose_last_pod_never_comes_times_out_at_permit(gang: Gang) -> None:
    g = gang
    nodes(g, **{"gang-n1": 4})
    story.create_pod_group(g.scenario, "late", 3)
    group_seen(g, "late")
    g.member("late", "late-a", 1)
    g.member("late", "late-b", 1)
    # The third pod is another scheduler's: it counts at PreFilter, and never gets a node.
    g.member("late", "late-c", 1, scheduler_name="another-scheduler")
    g.scenario.scheduler_has_seen("pod", ["late-a", "late-b", "late-c"])
    g.active(2)
    g.cycle("late-a")
    g.cycle("late-b")
    assert g.waiting() == {"late-a", "late-b"}
    assert g.requested_cpu() == {"gang-n1": 2000}
    # permitWaitingTimeSeconds: 10 (the group sets no scheduleTimeoutSeconds).
    g.clock.advance(9.9)
    assert g.waiting() == {"late-a", "late-b"}
    g.clock.advance(0.1)
    g.settled()
    assert g.waiting() == set()
    timeout = "rejected due to timeout after waiting 10s at plugin Coscheduling"
    for name in ("late-a", "late-b"):
        assert g.condition(name) in (timeout, "rejection in Unreserve")
    assert g.requested_cpu() == {"gang-n1": 0}
    assert g.scenario.bindings() == {"late-a": None, "late-b": None, "late-c": None}
    pending = {p.metadata.name for p in g.sched.scheduling_queue.pending_pods()}
    assert pending == {"late-a", "late-b"}
