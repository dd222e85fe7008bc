"""The manifest of steps: number, slug, title and what each one adds.

Everything that lists the steps reads this table: the nox sessions (``nox -s stepN``), the
runner, the README's steps table, the docs tests and the layout tests. A step is *built* when
its package ``steps/stepN`` exists; the manifest may name a step before it is built, so that
``nox -s stepN`` can say "not built yet" instead of "no such session", and a later step may be
built first: it then grows from the last built step before it (``previous_built``). Steps 1-8
are Part I, the workshop; Part II continues it from step 9, one feature per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
