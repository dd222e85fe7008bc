"""PreScore and CycleState (steps 4+)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import built_steps, step_module
from tests.fakes import add_nodes, drive, make_node, make_pod, new_framework, offline_scheduler

STEPS = built_steps(4)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


@dataclass
class Box:
    """A mutable StateData whose clone is a real copy."""

    items: list[str] = field(default_factory=list)
    clones: int = 0

    def clone(self) -> Box:
        self.clones += 1
        return Box(list(self.items))


@step_param
def test_cycle_state_read_write_delete(step: int) -> None:
    cs = step_module(step, "cycle_state")
    state = cs.CycleState()
    with pytest.raises(cs.NotFoundError) as e:
        state.read("k")
    assert str(e.value) == "not found"
    box = Box(["a"])
    state.write("k", box)
    assert state.read("k") is box
    state.delete("k")
    state.delete("k")  # deleting a missing key is fine
    with pytest.raises(cs.NotFoundError):
        state.read("k")


@step_param
def test_cycle_state_clone_clones_every_value(step: int) -> None:
    cs = step_module(step, "cycle_state")
    state = cs.CycleState()
    box = Box(["a"])
    state.write("k", box)
    copy = state.clone()
    assert box.clones == 1
    copied = copy.read("k")
    assert copied is not box and copied.items == ["a"]
    box.items.append("b")
    copy.write("other", Box())
    assert copied.items == ["a"]
    with pytest.raises(cs.NotFoundError):
        state.read("other")


class Spy:
    """PreScore writes the pod's name; Score checks it reads its own cycle's value."""

    KEY = "PreScoreSpy"

    def __init__(self, fw: Any) -> None:
        self.fw = fw
        self.leaked: list[str] = []  # values a new cycle found already there

    def name(self) -> str:
        return "Spy"

    def pre_score(self, state: Any, pod: Any, nodes: list[Any]) -> Any:
        try:
            self.leaked.append(state.read(self.KEY).items[0])
        except KeyError:
            pass
        state.write(self.KEY, Box([pod.metadata.name]))
        return self.fw.Status()

    def score(self, state: Any, pod: Any, node_name: str) -> tuple[int, Any]:
        assert state.read(self.KEY).items == [pod.metadata.name]
        return 0, self.fw.Status()

    def score_extensions(self) -> None:
        return None


@step_param
def test_every_scheduling_cycle_gets_a_new_cycle_state(step: int) -> None:
    sched = offline_scheduler(step)
    spy = Spy(step_module(step, "framework"))
    sched.framework = new_framework(
        step,
        {"Spy": lambda a, h: spy},
        pre_score=["Spy"],
        score=["Spy"],
        clock=sched.clock,
        client=sched.client,
    )
    add_nodes(sched, make_node("node-a"), make_node("node-b"))
    schedule_one = step_module(step, "schedule_one").schedule_one
    for name in ("first", "second"):
        sched.scheduling_queue.add(make_pod(name))
        schedule_one(sched)
    assert drive(sched, 2)
    assert spy.leaked == []


@step_param
def test_a_failing_pre_score_ends_the_cycle_with_an_error(step: int) -> None:
    fw = step_module(step, "framework")

    class Broken:
        def name(self) -> str:
            return "Broken"

        def pre_score(self, *args: Any) -> Any:
            return fw.Status(fw.Code.UNSCHEDULABLE, ["not today"])

    fwk = new_framework(step, {"Broken": lambda a, h: Broken()}, pre_score=["Broken"])
    status = fwk.run_pre_score_plugins(
        step_module(step, "cycle_state").CycleState(), make_pod("p"), []
    )
    assert status.code == fw.Code.ERROR
    assert status.message() == 'running PreScore plugin "Broken": not today'


# --- NodeNumber --------------------------------------------------------------------------------


def _node_number(step: int) -> Any:
    [plugin] = [
        p for p in offline_scheduler(step).framework.pre_score_plugins if p.name() == "NodeNumber"
    ]
    return plugin


@step_param
def test_node_number_pre_score_writes_the_pods_digit(step: int) -> None:
    cs = step_module(step, "cycle_state")
    plugin = _node_number(step)
    state = cs.CycleState()
    assert plugin.pre_score(state, make_pod("pod8"), []).is_success()
    assert state.read("PreScoreNodeNumber").pod_suffix_number == 8
    assert state.clone().read("PreScoreNodeNumber").pod_suffix_number == 8


@step_param
def test_node_number_pre_score_skips_a_pod_without_a_digit(step: int) -> None:
    """Nothing to score (every node would score 0): Skip, as upstream plugins since v1.27, and
    nothing written."""
    fw = step_module(step, "framework")
    cs = step_module(step, "cycle_state")
    state = cs.CycleState()
    assert _node_number(step).pre_score(state, make_pod("pod-x"), []).code == fw.Code.SKIP
    with pytest.raises(KeyError):
        state.read("PreScoreNodeNumber")


class Skipper:
    """PreScore returns Skip; a Score that runs anyway is counted."""

    def __init__(self, fw: Any) -> None:
        self.fw = fw
        self.scored = 0

    def name(self) -> str:
        return "Skipper"

    def pre_score(self, state: Any, pod: Any, nodes: list[Any]) -> Any:
        return self.fw.Status(self.fw.Code.SKIP)

    def score(self, state: Any, pod: Any, node_name: str) -> tuple[int, Any]:
        self.scored += 1
        return 0, self.fw.Status()

    def score_extensions(self) -> None:
        return None


@step_param
def test_a_plugin_whose_pre_score_skips_does_not_score(step: int) -> None:
    """kubernetes#115652 (v1.27): Skip at PreScore is not a failure, and that plugin's Score
    does not run in this cycle; the other plugins score as before. The cycle's clone (what
    preemption works on) keeps the list."""
    fw = step_module(step, "framework")
    cs = step_module(step, "cycle_state")
    skipper, spy = Skipper(fw), Spy(fw)
    fwk = new_framework(
        step,
        {"Skipper": lambda a, h: skipper, "Spy": lambda a, h: spy},
        pre_score=["Skipper", "Spy"],
        score=["Skipper", "Spy"],
    )
    state, pod, nodes = cs.CycleState(), make_pod("p"), [make_node("a"), make_node("b")]
    assert fwk.run_pre_score_plugins(state, pod, nodes).is_success()
    assert state.skip_score_plugins == {"Skipper"}
    assert state.clone().skip_score_plugins == {"Skipper"}
    scores, status = fwk.run_score_plugins(state, pod, nodes)
    assert status.is_success() and list(scores) == ["Spy"]
    assert skipper.scored == 0
    # A new cycle starts with nothing skipped.
    assert cs.CycleState().skip_score_plugins == frozenset()


@step_param
def test_when_every_score_plugin_skips_every_node_totals_0(step: int) -> None:
    """Then select_host picks among all the nodes, as if each had tied at 0."""
    fw = step_module(step, "framework")
    cs = step_module(step, "cycle_state")
    sched = offline_scheduler(step)
    sched.framework = new_framework(
        step, {"Skipper": lambda a, h: Skipper(fw)}, pre_score=["Skipper"], score=["Skipper"]
    )
    state = cs.CycleState()
    state.skip_score_plugins = frozenset({"Skipper"})
    # No node is looked at, not even for its name (at thousands of nodes that read is slow).
    scores, status = sched.framework.run_score_plugins(state, make_pod("p"), [object()])
    assert status.is_success() and scores == {}
    nodes = [make_node("a"), make_node("b")]
    prioritize = step_module(step, "schedule_one").prioritize_nodes
    result = prioritize(sched, sched.framework, cs.CycleState(), make_pod("p"), nodes)
    assert [(ns.name, ns.score) for ns in result] == [("a", 0), ("b", 0)]


@step_param
def test_node_number_score_reads_the_state_not_the_pod(step: int) -> None:
    cs = step_module(step, "cycle_state")
    plugin = _node_number(step)
    state = cs.CycleState()
    plugin.pre_score(state, make_pod("pod3"), [])
    # The digit comes from PreScore: the pod passed to Score is not parsed again.
    assert plugin.score(state, make_pod("pod8"), "node3")[0] == 10
    assert plugin.score(state, make_pod("pod8"), "node8")[0] == 0


@step_param
def test_node_number_score_without_pre_score_is_an_error(step: int) -> None:
    fw = step_module(step, "framework")
    cs = step_module(step, "cycle_state")
    plugin = _node_number(step)
    score, status = plugin.score(cs.CycleState(), make_pod("pod8"), "node8")
    assert (score, status.code) == (0, fw.Code.ERROR)
    assert status.message() == 'failed to read "PreScoreNodeNumber" from cycleState: not found'
    state = cs.CycleState()
    state.write("PreScoreNodeNumber", Box())
    assert plugin.score(state, make_pod("pod8"), "node8")[1].code == fw.Code.ERROR


@step_param
def test_a_pod_without_a_digit_is_scheduled_not_failed(step: int) -> None:
    """The Go original wrote no state for such a pod, so its Score failed every time. Here
    its PreScore returns Skip (the story says so), and NodeNumber scores no node."""
    sched = offline_scheduler(step)
    add_nodes(sched, *(make_node(f"node{i}") for i in range(5, 10)))
    sched.scheduling_queue.add(make_pod("web"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert drive(sched, 1)
    assert sched.recorder.of("error") == []
    assert [s for s in sched.recorder.of("score") if s["plugin"] == "NodeNumber"] == []
    [prescore] = [p for p in sched.recorder.of("prescore") if p["plugin"] == "NodeNumber"]
    assert prescore["skip"] is True
