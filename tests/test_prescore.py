"""PreScore and CycleState (steps 4+)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    drive,
    framework_of,
    make_node,
    make_pod,
    new_framework,
    offline_scheduler,
    set_framework,
)

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
    set_framework(
        sched,
        new_framework(
            step,
            {"Spy": lambda a, h: spy},
            pre_score=["Spy"],
            score=["Spy"],
            clock=sched.clock,
            client=sched.client,
        ),
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
        p
        for p in framework_of(offline_scheduler(step)).pre_score_plugins
        if p.name() == "NodeNumber"
    ]
    return plugin


@step_param
def test_node_number_pre_score_writes_the_pods_digit(step: int) -> None:
    cs = step_module(step, "cycle_state")
    plugin = _node_number(step)
    for pod_name, digit in (("pod8", 8), ("pod-x", None)):
        state = cs.CycleState()
        assert plugin.pre_score(state, make_pod(pod_name), []).is_success()
        assert state.read("PreScoreNodeNumber").pod_suffix_number == digit
        assert state.clone().read("PreScoreNodeNumber").pod_suffix_number == digit


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
    """The Go original wrote no state for such a pod, so its Score failed every time."""
    sched = offline_scheduler(step)
    add_nodes(sched, *(make_node(f"node{i}") for i in range(5, 10)))
    sched.scheduling_queue.add(make_pod("web"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert drive(sched, 1)
    assert sched.recorder.of("error") == []
    assert {s["score"] for s in sched.recorder.of("score") if s["plugin"] == "NodeNumber"} == {0}
