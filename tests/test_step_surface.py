"""What the runtime reads of a step's Scheduler (``minisched/steps.py``: ``StepScheduler``,
``CountsRequests``): every built step offers it, from the step that has each part on, and the
runner reads nothing else. Before, the runner looked into the steps' internals
(``getattr(scheduler, "cache")``, ``type(scheduler.snapshot)()``, ``hasattr(info,
"non_zero_requested")``)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from minisched import runner, steps
from minisched.report import Report
from tests.conftest import built_steps
from tests.fakes import add_nodes, make_node, offline_scheduler
from tests.test_noderesources import container, pod_asking

# The step whose cache counts each node's requests (PreFilter and NodeResourcesFit).
COUNTS_REQUESTS_FROM = 10


def members(protocol: type) -> set[str]:
    """The attributes and methods a Protocol states, its bases' included."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls.__module__ == steps.__name__:
            names |= set(cls.__dict__.get("__annotations__", {}))
            names |= {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}
    return names


SURFACE = members(steps.CountsRequests)


def test_the_surface_is_the_two_protocols() -> None:
    assert members(steps.StepScheduler) == {
        "responsible_for_pod",
        "clock",
        "pod_informer",
        "node_informer",
        "run",
        "stop",
    }
    assert SURFACE == members(steps.StepScheduler) | {"node_infos"}


@pytest.mark.parametrize("step", built_steps(1), ids=lambda n: f"step{n}")
def test_every_step_offers_the_surface_from_the_step_that_has_it(step: int) -> None:
    sched = offline_scheduler(step)
    assert isinstance(sched, steps.StepScheduler)
    assert isinstance(sched, steps.CountsRequests) == (step >= COUNTS_REQUESTS_FROM)


@pytest.mark.parametrize("step", built_steps(COUNTS_REQUESTS_FROM), ids=lambda n: f"step{n}")
def test_node_infos_are_the_caches_counts(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("a"), make_node("b"))
    pod = pod_asking("p", container("c", cpu="500m"))
    pod.spec.node_name = "a"
    sched.cache.add_pod(pod)
    infos = {i.node().metadata.name: i for i in sched.node_infos()}
    assert infos.keys() == {"a", "b"}
    assert (len(infos["a"].pods), infos["a"].requested.milli_cpu) == (1, 500)
    assert (len(infos["b"].pods), infos["b"].requested.milli_cpu) == (0, 0)


class Recording:
    """A step's Scheduler that notes each attribute read through it (that it has)."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "read", set())

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        self.read.add(name)
        return value


@pytest.mark.parametrize(
    "step", sorted({built_steps(1)[0], built_steps(1)[-1]}), ids=lambda n: f"step{n}"
)
def test_the_runner_reads_only_the_surface(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Recording] = []
    new_scheduler = runner.new_scheduler

    def recording(*args: Any, **kwargs: Any) -> Any:
        built.append(Recording(new_scheduler(*args, **kwargs)))
        return built[-1]

    monkeypatch.setattr(runner, "new_scheduler", recording)
    quiet = Report(Console(file=io.StringIO(), width=200), live=False)
    runner.run_step(step, report=quiet)
    (sched,) = built
    assert sched.read <= SURFACE, sched.read - SURFACE
    assert {"run", "stop", "pod_informer"} <= sched.read
    assert ("node_infos" in sched.read) == (step >= COUNTS_REQUESTS_FROM)
