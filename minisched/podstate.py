"""Where each pod is and what its last scheduling cycle decided, folded from recorded events.

Upstream counterpart: none; it reads what the steps record (minisched/recorder.py) the way a
reader of kube-scheduler's logs follows one pod. It is the one interpreter of that vocabulary:
the terminal report (minisched/report.py) and the live page (minisched/web/state.py) each keep
a ``PodState`` per pod, fold every event into it with ``PodState.apply`` and only choose how
to show it and how long to keep it, so the two never disagree on where a pod is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

V = TypeVar("V")

QUEUES = ("activeQ", "podBackoffQ", "unschedulableQ")
FIFO = "FIFO"  # steps 1-5 have one queue, a FIFO; step 6 brings the three above

# Where a pod is, beyond its queue.
SCHEDULING = "scheduling"  # popped: a scheduling cycle is trying it
WAITING = "waiting"  # between Permit and its binding
PENDING = "pending"  # its cycle failed and it is in no queue (steps 1-5 do not re-queue)
BOUND = "bound"
GONE = "gone"  # deleted before it was bound (a queue event into "none")

# Where a pod waits for the scheduler: a queue, or on Permit.
QUEUED = frozenset({*QUEUES, FIFO, WAITING})


@dataclass
class PodState:
    """One pod, as its recorded events left it. ``filters``, ``scores``, ``passed``..``permit``,
    ``selected`` and ``message`` are from its last attempt; the per-node ``filters`` and
    ``scores`` stay empty when the events carrying them were not recorded (or were dropped by a
    view that keeps them for fewer pods)."""

    where: str = ""  # a queue (QUEUES, FIFO), or SCHEDULING, WAITING, PENDING, BOUND, GONE
    event: str = ""  # why it entered its queue (the queue event's label)
    attempts: int = 0
    deadline: float | None = None  # backoff end or Permit timeout, on the scheduler's clock
    filters: dict[str, tuple[str, str]] = field(default_factory=dict)  # node -> (plugin, reason)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> plugin -> score
    rejectors: list[str] = field(default_factory=list)  # the Filter plugins that rejected nodes
    passed: int = -1  # how many nodes passed Filter (-1: not recorded)
    nodes: int = 0  # ... of how many
    nominated_first: bool = False  # the last attempt tried its nominated node alone
    among: int = 0  # step 1: the random pick was among this many nodes
    permit: dict[str, tuple[float, float]] = field(default_factory=dict)  # plugin -> wait, timeout
    permit_plugins: list[str] = field(default_factory=list)  # the plugins it waits on
    selected: str = ""  # the node its last cycle picked
    message: str = ""  # why its last cycle failed
    assumed: str = ""  # the node the scheduler cache counts it on before the binding
    node: str = ""  # bound to
    nominated: str = ""  # the node preemption nominated it to, until it is bound or gone
    preempted_by: str = ""  # a victim: the preemptor it is evicted for, until it moves
    profile: str = ""  # the profile (schedulerName) of its last attempt, from step 14
    algorithm_seconds: float | None = None  # how long its last cycle took to choose (step 15)

    @property
    def queued(self) -> bool:
        """Waiting for the scheduler: in a queue or on Permit."""
        return self.where in QUEUED

    def apply(self, event: str, f: dict[str, Any]) -> None:
        """Fold one recorded event of this pod (minisched/recorder.py lists them)."""
        if event == "queue":
            queue = str(f["queue"])
            self.where = GONE if queue == "none" else queue
            self.event = str(f.get("event", ""))
            self.deadline = f.get("deadline") if queue == "podBackoffQ" else None
            if queue == "unschedulableQ":
                self.rejectors = list(f.get("plugins", self.rejectors))
            if queue == "none":
                self.nominated = ""
            self.permit_plugins = []
            self.preempted_by = ""
        elif event == "attempt":
            self.attempts += 1
            self.profile = str(f.get("profile", ""))
            self.where = SCHEDULING
            self.deadline = None
            self.filters.clear()
            self.scores.clear()
            self.rejectors = []
            self.passed, self.nodes, self.among = -1, 0, 0
            self.nominated_first = False
            self.permit.clear()
            self.permit_plugins = []
            self.selected = self.message = ""
        elif event == "filter":
            self.filters[f["node"]] = (str(f["plugin"]), str(f["reason"]))
            if f["plugin"] not in self.rejectors:
                self.rejectors.append(str(f["plugin"]))
        elif event == "feasible":
            self.passed, self.nodes = int(f["passed"]), int(f["nodes"])
            self.nominated_first = bool(f.get("nominated"))
        elif event == "score":
            self.scores.setdefault(f["node"], {})[str(f["plugin"])] = int(f["score"])
        elif event == "selected":
            self.selected = str(f["node"])
            self.algorithm_seconds = f.get("seconds")
            self.among = int(f.get("among", 0))
        elif event == "permit":
            self.permit[str(f["plugin"])] = (float(f["wait"]), float(f["timeout"]))
        elif event == "waiting":
            self.where = WAITING
            self.permit_plugins = list(f.get("plugins", ()))
            self.deadline = f.get("deadline") or None
        elif event == "assumed":
            self.assumed = str(f["node"])
        elif event == "forgotten":
            self.assumed = ""
        elif event == "nominated":
            self.nominated = str(f["node"])
        elif event == "preempted":
            self.preempted_by = str(f["by"])
        elif event == "bound":
            self.where = BOUND
            self.node = str(f["node"])
            self.assumed = ""
            self.nominated = ""  # bound: no longer a nomination
            self.deadline = None
            self.permit_plugins = []
        elif event in ("unschedulable", "error"):
            self.message = str(f["message"])
            if self.where in (SCHEDULING, WAITING):
                self.where = PENDING  # steps 6+ record the queue it goes to next
            if event == "error":
                self.assumed = ""


def find_pod(pods: dict[str, V], pod: str) -> V | None:
    """``pods[pod]``, where ``pod`` is ``namespace/name`` or just ``name``."""
    if pod in pods:
        return pods[pod]
    for key, value in pods.items():
        if key.rsplit("/", 1)[-1] == pod:
            return value
    return None


def natural(name: str) -> tuple[str, int]:
    """Sort node2 before node10."""
    stem = name.rstrip("0123456789")
    digits = name[len(stem) :]
    return stem, int(digits) if digits else -1
