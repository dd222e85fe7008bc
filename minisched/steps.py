"""The manifest of steps: number, slug, title and what each one adds.

Everything that lists the steps reads this table: the nox sessions (``nox -s stepN``), the
runner, the README's steps table, the docs tests and the layout tests. A step is *built* when
its package ``steps/stepN`` exists; the manifest may name a step before it is built, so that
``nox -s stepN`` can say "not built yet" instead of "no such session", and a later step may be
built first: it then grows from the last built step before it (``previous_built``). Steps 1-8
are Part I, the workshop; Part II continues it from step 9, one feature per step; Part III,
from step 13, is how a user controls and extends the scheduler.

It also states what the runtime reads of a step's ``Scheduler`` (``StepScheduler``,
``CountsRequests``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # the manifest imports nothing third-party (the noxfile reads it)
    from kubernetes.client import V1Node, V1Pod

    from .clock import Clock
    from .informer import Informer

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Step:
    number: int
    slug: str
    title: str
    adds: str

    @property
    def package(self) -> str:
        """The importable package, e.g. ``steps.step3``."""
        return f"steps.step{self.number}"

    @property
    def directory(self) -> Path:
        return ROOT / "steps" / f"step{self.number}"

    @property
    def scenario(self) -> str:
        """The scenario module, e.g. ``scenarios.step3``."""
        return f"scenarios.step{self.number}"

    @property
    def chapter(self) -> Path:
        return ROOT / "docs" / f"step{self.number}-{self.slug}.md"

    @property
    def built(self) -> bool:
        return (self.directory / "__init__.py").is_file()


STEPS: tuple[Step, ...] = (
    Step(
        1,
        "random",
        "A random scheduler",
        "pop a pod from a FIFO, pick a random node, bind it",
    ),
    Step(
        2,
        "filter",
        "Filter",
        "the Filter extension point, NodeUnschedulable and the FitError message",
    ),
    Step(
        3,
        "score",
        "Score",
        "Score and NormalizeScore, the NodeNumber plugin, select_host with a random tie-break",
    ),
    Step(
        4,
        "prescore",
        "PreScore",
        "PreScore and CycleState: NodeNumber computes the pod's number once per cycle",
    ),
    Step(
        5,
        "permit",
        "Permit",
        "Permit and waiting pods; the binding cycle runs off the scheduling thread",
    ),
    Step(
        6,
        "queue",
        "The scheduling queue",
        "activeQ, podBackoffQ and unschedulableQ; every failure re-queues the pod",
    ),
    Step(
        7,
        "events",
        "Cluster events",
        "plugins register cluster events; node events move pods back to the active queue",
    ),
    Step(
        8,
        "flush",
        "Flushing the queues",
        "background loops flush completed backoffs and pods left unschedulable too long",
    ),
    Step(
        9,
        "cache",
        "The scheduler cache",
        "the cache and its snapshot; assume before binding; Reserve, PreBind, Bind, PostBind",
    ),
    Step(
        10,
        "resources",
        "PreFilter and NodeResourcesFit",
        "PreFilter and its extensions; NodeResourcesFit filters and scores by requests",
    ),
    Step(
        11,
        "preemption",
        "PostFilter and preemption",
        "PostFilter and DefaultPreemption; the nominator; Filter counts nominated pods",
    ),
    Step(
        12,
        "sampling",
        "percentageOfNodesToScore",
        "Filter stops once enough nodes fit, starting where the last cycle stopped",
    ),
    Step(
        13,
        "constraints",
        "The Pod's own constraints",
        "NodeAffinity and TaintToleration read the pod's spec; BalancedAllocation; v1.23's weights",
    ),
    Step(
        14,
        "configuration",
        "KubeSchedulerConfiguration and profiles",
        "--config: the file kube-scheduler reads; profiles, plugin sets, multiPoint, plugin args",
    ),
    Step(
        15,
        "extender",
        "The Extender",
        "a scheduler extended over HTTP: filter, prioritize, preempt and bind webhooks",
    ),
    Step(
        16,
        "coscheduling",
        "An out-of-tree plugin: Coscheduling",
        "gang scheduling: a PodGroup binds all or nothing (QueueSort, Permit, PodsToActivate)",
    ),
    Step(
        17,
        "wasm",
        "WebAssembly plugins",
        "a plugin compiled to WebAssembly, loaded from a file: the wasm extension's guests",
    ),
    Step(
        18,
        "fast",
        "Make it fast",
        "the same decisions in less time, each change measured against kube-scheduler",
    ),
)


def get(number: int) -> Step:
    """The step with this number; ValueError names the valid ones."""
    for step in STEPS:
        if step.number == number:
            return step
    raise ValueError(f"no step {number}: steps are 1..{len(STEPS)}")


def built() -> list[Step]:
    """The steps whose package exists, in order."""
    return [step for step in STEPS if step.built]


def previous_built(number: int) -> Step | None:
    """The built step before step ``number``, the one it was made from; None for the first.

    Usually step ``number - 1``; a step may be built before the one ahead of it, and is then
    compared with the last built step before it.
    """
    before = [step for step in built() if step.number < number]
    return before[-1] if before else None


class NoSuchStep(ValueError):
    """The step asked for does not exist or is not built; the message lists the ones that are."""


def choose(text: str | int) -> Step:
    """The built step named by ``text`` ("5"); NoSuchStep, in one line, for anything else."""
    runnable = ", ".join(str(s.number) for s in built())
    try:
        step = get(int(text))
    except ValueError:
        raise NoSuchStep(f"there is no step {text}; the steps are {runnable}") from None
    if not step.built:
        raise NoSuchStep(
            f"step {step.number} ({step.title}) is not built yet; the steps are {runnable}"
        )
    return step


# What the runtime reads of a step's Scheduler (the runner, the collector policy, the live
# page), and nothing else: the steps are free to change the rest. tests/test_step_surface.py
# holds every built step to it and the runner to reading no more.


@runtime_checkable
class StepScheduler(Protocol):
    """Every step's ``Scheduler``: built with the keywords ``runner.new_scheduler`` passes,
    ``run()`` until ``stop()``; its informers (the runner waits on their stores, the page adds
    handlers to them), its clock, and which pods are its own (their ``schedulerName`` is one it
    serves: a profile's, from step 14)."""

    clock: Clock
    pod_informer: Informer[V1Pod]
    node_informer: Informer[V1Node]

    def responsible_for_pod(self, pod: V1Pod) -> bool: ...

    def run(self) -> None: ...

    def stop(self) -> None: ...


class ResourceView(Protocol):
    """What the runner reads of a NodeInfo's ``Resource``."""

    milli_cpu: int
    memory: int
    allowed_pod_number: int


class NodeInfoView(Protocol):
    """What the runner reads of a NodeInfo (upstream's ``framework.NodeInfo``)."""

    pods: list[Any]
    requested: ResourceView
    allocatable: ResourceView

    def node(self) -> V1Node | None: ...


@runtime_checkable
class CountsRequests(StepScheduler, Protocol):
    """The steps whose cache counts each node's requests (from step 10, NodeResourcesFit): the
    runner's last table shows them."""

    def node_infos(self) -> Sequence[NodeInfoView]:
        """Each node's NodeInfo as the cache counts it now (a snapshot of its own)."""
        ...
