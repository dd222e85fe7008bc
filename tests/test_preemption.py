"""PostFilter and DefaultPreemption (steps 11+): victim selection and the reprieve order, the
choice among candidates on each criterion, eligibility, filtering with nominated pods, and
that a pod never preempts one of its own priority or higher."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module
from tests.fakes import add_nodes, add_pods, framework_of, make_pod, offline_scheduler
from tests.test_noderesources import container, node_of

STEPS = built_steps(11)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


def pod(name: str, priority: int, cpu: str = "1", node: str | None = None, **kw: Any) -> Any:
    p = make_pod(name, priority=priority, node_name=node)
    p.spec.containers = [container("c", cpu=cpu)]
    p.status = client.V1PodStatus(start_time=kw.get("start"), nominated_node_name=kw.get("nnn"))
    if kw.get("terminating"):
        p.metadata.deletion_timestamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    p.spec.preemption_policy = kw.get("policy")
    return p


def cluster(step: int, nodes: dict[str, str], pods: list[Any], **options: Any) -> Any:
    """An offline scheduler whose cache and pod informer hold these nodes (name -> CPU) and
    bound pods, its snapshot up to date."""
    sched = offline_scheduler(step, **options)
    add_nodes(sched, *(node_of(n, cpu=cpu, memory="32Gi") for n, cpu in nodes.items()))
    for p in pods:
        sched.cache.add_pod(p)
    add_pods(sched, *pods)
    sched.cache.update_snapshot(sched.snapshot)
    return sched


def preemption_plugin(sched: Any) -> Any:
    [pl] = framework_of(sched).post_filter_plugins
    return pl


def victims_on(step: int, sched: Any, preemptor: Any, node: str) -> tuple[list[str], int, Any]:
    """select_victims_on_node on copies, after PreFilter, as the dry run calls it."""
    state = step_module(step, "cycle_state").CycleState()
    assert framework_of(sched).run_pre_filter_plugins(state, preemptor).is_success()
    node_info = sched.snapshot.get(node).clone()
    victims, violations, status = preemption_plugin(sched).select_victims_on_node(
        state, preemptor, node_info, []
    )
    return [v.metadata.name for v in victims], violations, status


# --- select_victims_on_node --------------------------------------------------------------------


@step_param
def test_victims_are_reprieved_from_the_highest_priority_down(step: int) -> None:
    # 3 CPU full: a (300), b (200), c (100), and same (1000), which is never a victim.
    pods = [
        pod("c", 100, node="n"),
        pod("a", 300, node="n"),
        pod("same", 1000, cpu="0", node="n"),
        pod("b", 200, node="n"),
    ]
    sched = cluster(step, {"n": "3"}, pods)
    # 1 CPU: a and b are put back, c cannot be.
    assert victims_on(step, sched, pod("p", 1000, cpu="1"), "n")[0] == ["c"]
    # 2 CPU: a is put back first; then neither b nor c fits: both go, the more important first.
    names, violations, status = victims_on(step, sched, pod("p", 1000, cpu="2"), "n")
    assert (names, violations, status.is_success()) == (["b", "c"], 0, True)


@step_param
def test_the_reprieve_order_among_equal_priorities_is_the_earliest_started_first(step: int) -> None:
    t = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    pods = [
        pod("late", 100, node="n", start=t + datetime.timedelta(hours=1)),
        pod("early", 100, node="n", start=t),
    ]
    sched = cluster(step, {"n": "2"}, pods)
    # One of the two can stay: the one that started first is more important.
    assert victims_on(step, sched, pod("p", 1000), "n")[0] == ["late"]


@step_param
def test_a_node_where_even_evicting_every_lower_pod_is_not_enough_is_no_candidate(
    step: int,
) -> None:
    sched = cluster(step, {"n": "2"}, [pod("low", 100, node="n"), pod("high", 2000, node="n")])
    names, _, status = victims_on(step, sched, pod("p", 1000, cpu="2"), "n")
    fw = step_module(step, "framework")
    assert names == [] and status.code == fw.Code.UNSCHEDULABLE
    assert "Insufficient cpu" in status.message()


@step_param
def test_a_pod_never_preempts_pods_of_its_own_priority_or_higher(step: int) -> None:
    sched = cluster(step, {"n": "2"}, [pod("equal", 1000, node="n"), pod("higher", 2000, node="n")])
    names, _, status = victims_on(step, sched, pod("p", 1000), "n")
    fw = step_module(step, "framework")
    assert names == [] and status.code == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "No victims found on node n for preemptor pod p"


@step_param
def test_a_lower_priority_pod_never_preempts_a_higher_one_end_to_end(step: int) -> None:
    sched = cluster(step, {"n": "1", "m": "1"}, [pod("a", 500, node="n"), pod("b", 500, node="m")])
    preemptor = pod("p", 100)
    add_pods(sched, preemptor)
    sched.scheduling_queue.add(preemptor)
    step_module(step, "schedule_one").schedule_one(sched)
    assert not [c for c in sched.client.calls if c[0] == "delete_namespaced_pod"]
    assert not sched.recorder.of("nominated")


# --- pick_one_node_for_preemption: each criterion ----------------------------------------------


def victims(step: int, *pods: Any, violations: int = 0) -> Any:
    return step_module(step, "preemption").Victims(list(pods), violations)


@step_param
def test_pick_fewest_pdb_violations_first(step: int) -> None:
    pick = step_module(step, "preemption").pick_one_node_for_preemption
    node, why = pick(
        {"a": victims(step, pod("x", 1), violations=1), "b": victims(step, pod("y", 500))}
    )
    assert (node, why) == ("b", "the fewest PodDisruptionBudget violations")


@step_param
def test_pick_the_lowest_highest_priority_victim(step: int) -> None:
    pick = step_module(step, "preemption").pick_one_node_for_preemption
    two_low = victims(step, pod("x", 100), pod("y", 100))
    assert pick({"a": victims(step, pod("z", 200)), "b": two_low}) == (
        "b",
        "the lowest highest-priority victim",
    )


@step_param
def test_pick_the_smallest_sum_of_priorities(step: int) -> None:
    pick = step_module(step, "preemption").pick_one_node_for_preemption
    a = victims(step, pod("x", 100), pod("y", 50))
    b = victims(step, pod("z", 100), pod("w", 10))
    assert pick({"a": a, "b": b}) == ("b", "the smallest sum of victim priorities")


@step_param
def test_pick_the_fewest_victims(step: int) -> None:
    # Each priority is raised by MaxInt32 + 1 in the sum: one more victim at the lowest
    # priority (-2**31) adds 0, so both sums are equal and the count decides.
    pick = step_module(step, "preemption").pick_one_node_for_preemption
    a = victims(step, pod("x", 100), pod("y", -(2**31)))
    b = victims(step, pod("z", 100))
    assert pick({"a": a, "b": b}) == ("b", "the fewest victims")


@step_param
def test_pick_the_latest_start_of_the_highest_priority_victims_then_the_first(step: int) -> None:
    pick = step_module(step, "preemption").pick_one_node_for_preemption
    t = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    hour = datetime.timedelta(hours=1)
    # a's highest-priority victims started at t and t+2h: its earliest is t. b's is t+1h.
    a = victims(step, pod("x", 100, start=t), pod("y", 100, start=t + 2 * hour))
    b = victims(step, pod("z", 100, start=t + hour), pod("w", 100, start=t + hour))
    assert pick({"a": a, "b": b}) == ("b", "the latest-started highest-priority victims")
    # Tied on everything: the first.
    c = victims(step, pod("v", 100, start=t + hour), pod("u", 100, start=t + hour))
    assert pick({"b": b, "c": c})[0] == "b"
    assert pick({"c": c, "b": b})[0] == "c"


# --- eligibility -------------------------------------------------------------------------------


@step_param
def test_a_pod_with_preemption_policy_never_is_not_eligible(step: int) -> None:
    sched = cluster(step, {"n": "1"}, [pod("low", 1, node="n")])
    ok, message = preemption_plugin(sched).pod_eligible_to_preempt_others(
        pod("p", 1000, policy="Never"), None
    )
    assert not ok and "preemptionPolicy=Never" in message


@step_param
def test_a_pod_whose_nominated_node_has_terminating_victims_waits(step: int) -> None:
    fw = step_module(step, "framework")
    sched = cluster(step, {"n": "2"}, [pod("victim", 100, node="n", terminating=True)])
    plugin = preemption_plugin(sched)
    nominated = pod("p", 1000, nnn="n")
    assert plugin.pod_eligible_to_preempt_others(nominated, fw.Status(fw.Code.UNSCHEDULABLE)) == (
        False,
        "not eligible due to a terminating pod on the nominated node (victim on n).",
    )
    # Unless the nominated node can no longer take it at all.
    unresolvable = fw.Status(fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    assert plugin.pod_eligible_to_preempt_others(nominated, unresolvable)[0]
    # A terminating pod of higher priority, or no nomination, does not hold it back.
    assert plugin.pod_eligible_to_preempt_others(pod("p", 1000), None)[0]
    assert plugin.pod_eligible_to_preempt_others(pod("p", 50, nnn="n"), None)[0]


# --- the dry run and the whole PostFilter ------------------------------------------------------


@step_param
def test_the_number_of_candidates_follows_v1_23s_defaults(step: int) -> None:
    plugin = preemption_plugin(offline_scheduler(step))
    assert [plugin.calculate_num_candidates(n) for n in (5, 100, 1000, 2000)] == [5, 100, 100, 200]


@step_param
def test_post_filter_evicts_the_victims_and_nominates_the_node(step: int) -> None:
    fw = step_module(step, "framework")
    pods = [
        pod("web", 200, node="north"),
        pod("batch-c", 100, cpu="2", node="north"),
        pod("batch-a", 100, node="east"),
        pod("batch-b", 100, node="east"),
        pod("spared", 100, cpu="2", node="spare"),
    ]
    sched = cluster(step, {"north": "3", "east": "2", "spare": "2"}, pods)
    preemptor = pod("payments", 1000, cpu="2")
    # A lower-priority pod nominated to north loses its nomination; a higher one keeps it.
    lower, higher = pod("lower", 10, nnn="north"), pod("higher", 5000, cpu="0", nnn="north")
    add_pods(sched, preemptor, lower, higher)
    for p in (lower, higher):
        sched.scheduling_queue.pod_nominator.add_nominated_pod(p, None)
    state = step_module(step, "cycle_state").CycleState()
    assert framework_of(sched).run_pre_filter_plugins(state, preemptor).is_success()
    # spare fails with UnschedulableAndUnresolvable (say, cordoned): it is not even tried.
    m = {
        "north": fw.Status(fw.Code.UNSCHEDULABLE, ["Insufficient cpu"]),
        "east": fw.Status(fw.Code.UNSCHEDULABLE, ["Insufficient cpu"]),
        "spare": fw.Status(fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) were unschedulable"]),
    }
    result, status = framework_of(sched).run_post_filter_plugins(state, preemptor, m)
    assert status.is_success()
    assert result.nominating_info == fw.NominatingInfo("north", fw.NominatingMode.OVERRIDE)
    deleted = [args for name, args in sched.client.calls if name == "delete_namespaced_pod"]
    assert deleted == [("batch-c", "default")]
    patched = [
        args[0] for name, args in sched.client.calls if name == "patch_namespaced_pod_status"
    ]
    assert patched == ["lower"]
    assert ("Normal", "Preempted", "Preempted by default/payments on node north") in (
        sched.event_recorder.events
    )
    messages = [f["message"] for f in sched.recorder.of("preemption")]
    assert not any(m.startswith("spare") for m in messages), messages
    assert "picked north: the smallest sum of victim priorities" in messages


@step_param
def test_no_candidate_is_a_fit_error_and_nothing_is_evicted(step: int) -> None:
    fw = step_module(step, "framework")
    sched = cluster(step, {"n": "1"}, [pod("high", 5000, node="n")])
    preemptor = pod("p", 1000)
    add_pods(sched, preemptor)
    state = step_module(step, "cycle_state").CycleState()
    framework_of(sched).run_pre_filter_plugins(state, preemptor)
    m = {"n": fw.Status(fw.Code.UNSCHEDULABLE, ["Insufficient cpu"])}
    result, status = framework_of(sched).run_post_filter_plugins(state, preemptor, m)
    # v1.23's Preempt: NewPostFilterResultWithNominatedNode(""), which clears a nomination.
    assert result.nominating_info == fw.NominatingInfo("", fw.NominatingMode.OVERRIDE)
    assert status.code == fw.Code.UNSCHEDULABLE
    assert "0/1 nodes are available: 1 No victims found on node n for preemptor pod p." in (
        status.message()
    )
    assert not [c for c in sched.client.calls if c[0] == "delete_namespaced_pod"]


@step_param
def test_a_failed_cycle_writes_the_nomination_to_the_pod_and_the_nominator(step: int) -> None:
    sched = cluster(step, {"n": "1"}, [pod("low", 100, node="n")])
    preemptor = pod("p", 1000)
    add_pods(sched, preemptor)
    sched.scheduling_queue.add(preemptor)
    step_module(step, "schedule_one").schedule_one(sched)
    patches = [args for name, args in sched.client.calls if name == "patch_namespaced_pod_status"]
    assert any(body["status"].get("nominatedNodeName") == "n" for _, _, body in patches), patches
    nominated = sched.scheduling_queue.pod_nominator.nominated_pods_for_node("n")
    assert [p.metadata.name for p in nominated] == ["p"]


@step_param
def test_a_failed_preemption_clears_the_pods_nomination(step: int) -> None:
    # p was nominated to n earlier; meanwhile a pod of higher priority took n, so the dry run
    # finds no victims: the nomination, which kept room on n for p, must go (issue 29).
    sched = cluster(step, {"n": "1"}, [pod("high", 5000, node="n")])
    preemptor = pod("p", 1000, nnn="n")
    add_pods(sched, preemptor)
    nominator = sched.scheduling_queue.pod_nominator
    nominator.add_nominated_pod(preemptor, None)
    assert [p.metadata.name for p in nominator.nominated_pods_for_node("n")] == ["p"]
    sched.scheduling_queue.add(preemptor)
    step_module(step, "schedule_one").schedule_one(sched)
    assert nominator.nominated_pods_for_node("n") == []
    patches = [args for name, args in sched.client.calls if name == "patch_namespaced_pod_status"]
    # Cleared as upstream's two-way merge patch clears it: the field set to null.
    cleared = [body for _, _, body in patches if "nominatedNodeName" in body["status"]]
    assert cleared and cleared[-1]["status"]["nominatedNodeName"] is None, patches


# --- filtering with nominated pods -------------------------------------------------------------


@step_param
def test_filter_counts_nominated_pods_of_equal_or_higher_priority(step: int) -> None:
    # n has 1 CPU free; "kept" (priority 1000, 1 CPU) is nominated there.
    sched = cluster(step, {"n": "2"}, [pod("running", 0, node="n")])
    kept = pod("kept", 1000, nnn="n")
    add_pods(sched, kept)
    sched.scheduling_queue.pod_nominator.add_nominated_pod(kept, None)
    state_module = step_module(step, "cycle_state")

    def fits(p: Any) -> bool:
        state = state_module.CycleState()
        framework_of(sched).run_pre_filter_plugins(state, p)
        node_info = sched.snapshot.get("n")
        status = framework_of(sched).run_filter_plugins_with_nominated_pods(state, p, node_info)
        return status.is_success()

    assert not fits(pod("lower", 500))  # it must not take the room kept for kept
    assert not fits(pod("equal", 1000))
    assert fits(pod("higher", 2000))  # room kept for a lower-priority pod may be taken
    assert fits(kept)  # a pod never counts against itself
    # Without the nomination, any pod fits.
    sched.scheduling_queue.pod_nominator.delete_nominated_pod_if_exists(kept)
    assert fits(pod("lower", 500))


# --- the scenario on a shared cluster ----------------------------------------------------------


def test_the_scenario_finds_other_namespaces_pods_its_preemptor_could_evict(
    api_client: client.ApiClient,
) -> None:
    from minisched.scenario import Scenario
    from scenarios import step11

    core = client.CoreV1Api(api_client)
    with Scenario(api_client, "preemption-test", say=lambda line: None) as s:
        s.create_node("n", cpu="2", memory="4Gi", taints=[step11.TAINT])
        assert step11.foreign_pods_at_risk(s, 1000) == []
        # A pod of someone else's, bound to the scenario's node (a DaemonSet's, say).
        theirs = client.V1Pod(
            metadata=client.V1ObjectMeta(name="theirs"),
            spec=client.V1PodSpec(
                node_name="n", containers=[client.V1Container(name="c", image="pause")]
            ),
        )
        core.create_namespaced_pod("default", theirs)
        try:
            assert step11.foreign_pods_at_risk(s, 1000) == ["default/theirs on n"]
            assert step11.foreign_pods_at_risk(s, 0) == []  # not below priority 0
        finally:
            core.delete_namespaced_pod("theirs", "default", grace_period_seconds=0)


# --- the dry run's sample, the PreFilter extensions, waiting victims ----------------------------


@step_param
def test_the_dry_run_starts_at_the_offset_and_stops_at_enough_candidates(step: int) -> None:
    pods = [pod(f"low-{n}", 100, node=n) for n in ("a", "b", "c")]
    sched = cluster(step, {"a": "1", "b": "1", "c": "1"}, pods, seed=7)
    preemption = step_module(step, "preemption")
    dp = step_module(step, "plugins.defaultpreemption")
    plugin = dp.DefaultPreemption(dp.DefaultPreemptionArgs(10, 1), framework_of(sched))
    # The offset comes from the scheduler's seeded source: a run with the same seed repeats it.
    rng = random.Random(7)
    assert plugin.get_offset_and_num_candidates(3) == (rng.randrange(3), 1)
    preemptor = pod("p", 1000)
    state = step_module(step, "cycle_state").CycleState()
    framework_of(sched).run_pre_filter_plugins(state, preemptor)
    ev = preemption.Evaluator(dp.NAME, framework_of(sched), state, plugin)
    nodes = sched.snapshot.list()
    candidates, statuses, errs = ev.dry_run_preemption(preemptor, nodes, [], 2, 1)
    # One candidate is enough: c (offset 2) is the first tried, and the last.
    assert [c.name for c in candidates] == ["c"] and statuses == {} and errs == []
    candidates, _, _ = ev.dry_run_preemption(preemptor, nodes, [], 2, 3)
    assert [c.name for c in candidates] == ["c", "a", "b"]  # wrapping around


class CountingPreFilter:
    """A PreFilter plugin whose extensions record what the dry run adds and removes."""

    def __init__(self, fw: Any) -> None:
        self.fw = fw
        self.calls: list[tuple[str, str]] = []

    def name(self) -> str:
        return "Counting"

    def pre_filter(self, state: Any, p: Any) -> Any:
        return self.fw.Status()

    def pre_filter_extensions(self) -> Any:
        return self

    def add_pod(self, state: Any, p: Any, pod_to_add: Any, node_info: Any) -> Any:
        self.calls.append(("add", pod_to_add.metadata.name))
        return self.fw.Status()

    def remove_pod(self, state: Any, p: Any, pod_to_remove: Any, node_info: Any) -> Any:
        self.calls.append(("remove", pod_to_remove.metadata.name))
        return self.fw.Status()


@step_param
def test_victim_selection_keeps_the_prefilter_state_right_through_its_extensions(
    step: int,
) -> None:
    pods = [pod("web", 200, node="n"), pod("batch", 100, cpu="2", node="n")]
    sched = cluster(step, {"n": "3"}, pods)
    counting = CountingPreFilter(step_module(step, "framework"))
    framework_of(sched).pre_filter_plugins.append(counting)
    assert victims_on(step, sched, pod("p", 1000, cpu="2"), "n")[0] == ["batch"]
    # Both removed, then each put back from the most important down; batch out again.
    assert counting.calls == [
        ("remove", "web"),
        ("remove", "batch"),
        ("add", "web"),
        ("add", "batch"),
        ("remove", "batch"),
    ]


@step_param
def test_a_victim_waiting_on_permit_is_rejected_not_deleted(step: int) -> None:
    fw = step_module(step, "framework")
    victim = pod("waiting", 100, node="n")
    sched = cluster(step, {"n": "1"}, [victim])
    waiting = step_module(step, "waiting_pods").WaitingPod(victim, sched.clock)
    framework_of(sched).waiting_pods.add(waiting)
    waiting.start({"NodeNumber": 10.0})
    preemptor = pod("p", 1000)
    add_pods(sched, preemptor)
    state = step_module(step, "cycle_state").CycleState()
    framework_of(sched).run_pre_filter_plugins(state, preemptor)
    m = {"n": fw.Status(fw.Code.UNSCHEDULABLE, ["Insufficient cpu"])}
    result, status = framework_of(sched).run_post_filter_plugins(state, preemptor, m)
    assert status.is_success() and result.nominating_info.nominated_node_name == "n"
    signal = waiting.get_signal()
    assert signal.code == fw.Code.UNSCHEDULABLE and signal.message() == "preempted"
    assert not [c for c in sched.client.calls if c[0] == "delete_namespaced_pod"]
