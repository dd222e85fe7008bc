"""What the web page shows, kept up to date from the report and the scheduler's informers.

Upstream counterpart: none. kube-scheduler-simulator's web UI shows the results (its per-plugin
annotations); this view also shows the queues, from the same recorder that feeds the terminal
report (``Report.subscribe``), and folds the events as the report does (minisched/podstate.py),
so the page and the terminal never disagree.

Two sources feed one ``ClusterView``:

- the report's events (minisched/recorder.py lists them), with the line the terminal printed
  for each: the queues, the pods waiting on Permit (until their ``deadline``), each pod's
  attempts and its last attempt's per-node Filter and Score results. From step 9 the assumed
  pods; from step 11 the preemptor on the node it was nominated to, and a victim on its node
  until it is gone. The pod whose scheduling cycle ended last (``selected``,
  ``unschedulable`` or ``error``) is the *latest decision*: the page shows it until the user
  picks a pod.
- the scheduler's node and pod informers (handlers added before it starts): the nodes, cordoned
  or tainted, and the pods bound to each, with their requests (from step 10) as the scheduler
  counts them (minisched/podresources.py); and a nomination the API server no longer holds
  (``status.nominatedNodeName`` cleared: a later cycle's PostFilter found no room, or a
  preemptor of higher priority took the node).

Memory stays bounded on a long standalone run: at most ``MAX_LINES`` timeline lines,
``MAX_PODS`` pods (the oldest settled ones are forgotten first), ``MAX_ATTEMPTS`` attempts per
pod and the Filter/Score tables of the ``MAX_TABLES`` pods touched last. Nodes and bound pods
are as many as the informers hold anyway.

``_lock`` guards everything below it: recorder events arrive on the scheduling and binding
threads (under the report's lock), informer events on the informers' threads, and the web
server reads from its own thread.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import steps
from ..informer import DeletedFinalStateUnknown, ResourceEventHandler, meta_namespace_key
from ..podresources import compute_pod_resource_request, resource_list

if TYPE_CHECKING:
    from kubernetes.client import V1Pod
from ..podstate import BOUND, FIFO, GONE, PodState, find_pod, natural

MAX_LINES = 1000
MAX_PODS = 500
MAX_ATTEMPTS = 10
MAX_TABLES = 100

# Taint effects that keep pods off a node, and the taint a cordon stands for.
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass
class Features:
    """What a step has, so the page shows only what exists in it."""

    step: int
    queues: tuple[str, ...]
    permit: bool
    flushes: bool  # background loops flush podBackoffQ and unschedulableQ
    assumed: bool
    resources: bool

    @classmethod
    def for_step(cls, step: int) -> Features:
        # Steps 1-5 have a FIFO (their queue events say "FIFO"); step 6 brings the three queues.
        queues = ("activeQ", "podBackoffQ", "unschedulableQ") if step >= 6 else (FIFO,)
        return cls(
            step,
            queues,
            permit=step >= 5,
            flushes=step >= 8,
            assumed=step >= 9,
            resources=step >= 10,
        )


@dataclass
class Pod(PodState):
    """One pod as the page shows it: its state, as the report folds it, and the page's own.
    Its Filter/Score results (``filters``, ``scores``) are kept only while it is among the
    ``MAX_TABLES`` pods touched last (``ClusterView._tables``)."""

    key: str = ""
    history: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_ATTEMPTS))
    nomination_written: bool = False  # the informer has seen status.nominatedNodeName set
    rev: int = 0  # bumped on every change: the page refetches an open table when it moves


@dataclass
class Node:
    name: str
    unschedulable: bool = False
    taints: list[str] = field(default_factory=list)
    allocatable: dict[str, float] = field(default_factory=dict)


@dataclass
class Placement:
    node: str
    ours: bool  # scheduled by minisched (schedulerName), or by someone else
    requests: dict[str, float] = field(default_factory=dict)


class ClusterView:
    """The page's state. ``changes()`` hands the web server what changed since its last call."""

    def __init__(
        self,
        features: Features,
        now: Callable[[], float] = time.monotonic,
        responsible_for_pod: Callable[[V1Pod], bool] | None = None,
    ) -> None:
        self.features = features
        self.now = now  # the scheduler's clock: deadlines are on it
        # Which pods are the scheduler's own (the others are drawn as another scheduler's).
        self.responsible_for_pod = responsible_for_pod or (
            lambda pod: pod.spec.scheduler_name == "minisched"
        )
        self._lock = threading.Lock()
        self._seq = 0
        self._lines: deque[dict[str, Any]] = deque(maxlen=MAX_LINES)
        self._pods: OrderedDict[str, Pod] = OrderedDict()  # least recently touched first
        self._tables: OrderedDict[str, None] = OrderedDict()  # whose results are kept, oldest first
        self._nodes: dict[str, Node] = {}
        self._placements: dict[str, Placement] = {}  # pod key -> where it is bound
        self._by_node: dict[str, set[str]] = {}  # node -> the keys of the pods bound to it
        self._latest = ""  # the pod whose scheduling cycle ended last: the page's default detail
        # What changed since the last changes() call.
        self._new_lines: list[dict[str, Any]] = []
        self._dirty_pods: set[str] = set()
        self._dirty_nodes: set[str] = set()
        self.ended = False  # the scenario is over (the page says so)

    # --- the recorder side ------------------------------------------------------------------

    def on_record(self, event: str, fields: dict[str, Any], line: str) -> None:
        """A ``Report.subscribe`` callback: apply one recorded event and its printed line."""
        key = str(fields.get("pod", ""))
        with self._lock:
            if line:
                self._seq += 1
                entry = {"seq": self._seq, "time": time.time(), "text": line, "pod": key}
                self._lines.append(entry)
                self._new_lines.append(entry)
                del self._new_lines[:-MAX_LINES]
            if key:
                self._apply(self._touch(key), event, fields)

    def end(self, text: str) -> None:
        """The scenario is over: one last timeline line, and the page says so."""
        with self._lock:
            self.ended = True
            self._seq += 1
            entry = {"seq": self._seq, "time": time.time(), "text": text, "pod": ""}
            self._lines.append(entry)
            self._new_lines.append(entry)

    def _touch(self, key: str) -> Pod:
        pod = self._pods.get(key)
        if pod is None:
            pod = self._pods[key] = Pod(key=key)
            if len(self._pods) > MAX_PODS:
                self._forget_one()
        else:
            self._pods.move_to_end(key)
        pod.rev += 1
        self._dirty_pods.add(key)
        return pod

    def _forget_one(self) -> None:
        """Drop the least recently touched pod that is bound or gone, else the oldest."""
        victim = next(
            (k for k, p in self._pods.items() if p.where in (BOUND, GONE)), next(iter(self._pods))
        )
        del self._pods[victim]
        self._tables.pop(victim, None)
        self._dirty_pods.add(victim)

    def _keep_table(self, pod: Pod) -> None:
        """Keep ``pod``'s Filter/Score results; forget those of the pod touched longest ago."""
        self._tables[pod.key] = None
        self._tables.move_to_end(pod.key)
        if len(self._tables) > MAX_TABLES:
            old, _ = self._tables.popitem(last=False)
            forgotten = self._pods.get(old)
            if forgotten is not None:
                forgotten.filters.clear()
                forgotten.scores.clear()

    def _apply(self, pod: Pod, event: str, f: dict[str, Any]) -> None:
        pod.apply(event, f)  # the one interpretation of the event (minisched/podstate.py)
        if event in ("selected", "unschedulable", "error"):
            self._latest = pod.key  # a cycle's decision: where the pod goes, or why nowhere
        if event == "attempt":
            pod.history.append({"n": pod.attempts, "result": "scheduling"})
            self._keep_table(pod)
        elif event in ("filter", "score"):
            self._keep_table(pod)
        elif event == "selected":
            self._result(pod, f"selected {f['node']}")
        elif event == "unschedulable":
            self._result(pod, f["message"])
        elif event == "waiting":
            self._result(pod, f"waiting on Permit on {f['node']}")
        elif event == "error":
            self._result(pod, f"error: {f['message']}")
        elif event == "bound":
            self._result(pod, f"bound to {f['node']}")
            placement = self._placements.get(pod.key)
            # The informer's update follows; placing it now shows it in its node at once.
            if placement is None or placement.node != pod.node:
                requests = placement.requests if placement else {}
                self._place(pod.key, Placement(pod.node, True, requests))

    @staticmethod
    def _result(pod: Pod, text: str) -> None:
        if pod.history:
            pod.history[-1]["result"] = text

    # --- the informer side ------------------------------------------------------------------

    def node_handler(self) -> ResourceEventHandler:
        return _Handler(self._node_changed, self._node_deleted)

    def pod_handler(self) -> ResourceEventHandler:
        return _Handler(self._pod_changed, self._pod_deleted)

    def _node_changed(self, node: Any) -> None:
        spec = node.spec
        taints = [
            f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}"
            for t in (spec.taints or [] if spec else [])
            if t.key != UNSCHEDULABLE_TAINT
        ]
        allocatable = {}
        if self.features.resources and node.status and node.status.allocatable:
            allocatable = _shown(resource_list(node.status.allocatable))
            allocatable = {r: a for r, a in allocatable.items() if r in ("cpu", "memory", "pods")}
        view = Node(node.metadata.name, bool(spec and spec.unschedulable), taints, allocatable)
        with self._lock:
            self._nodes[view.name] = view
            self._dirty_nodes.add(view.name)

    def _node_deleted(self, node: Any) -> None:
        with self._lock:
            self._nodes.pop(node.metadata.name, None)
            self._dirty_nodes.add(node.metadata.name)

    def _pod_changed(self, pod: Any) -> None:
        key = meta_namespace_key(pod)
        node = pod.spec.node_name if pod.spec else None
        with self._lock:
            if not node:
                self._unplace(key)
                self._nomination_changed(key, pod.status.nominated_node_name if pod.status else "")
                return
            requests: dict[str, float] = {}
            if self.features.resources:
                # What the scheduler's NodeInfo counts: init containers and overhead included.
                requested = _shown(compute_pod_resource_request(pod))
                requests = {r: a for r, a in requested.items() if r in ("cpu", "memory")}
            ours = self.responsible_for_pod(pod)
            self._place(key, Placement(node, ours, requests))

    def _nomination_changed(self, key: str, nominated: str | None) -> None:
        """An unbound pod's ``status.nominatedNodeName`` as the API server has it. The
        ``nominated`` event comes first (the scheduler records it, then writes the status), so
        an update without a nomination clears it only once one with it has been seen."""
        pod = self._pods.get(key)
        if pod is None or pod.where == BOUND:  # a late update from before the binding
            return
        if nominated:
            changed = pod.nominated != nominated
            pod.nominated, pod.nomination_written = nominated, True
        elif pod.nomination_written:
            changed = bool(pod.nominated)
            pod.nominated, pod.nomination_written = "", False
        else:
            return
        if changed:
            pod.rev += 1
            self._dirty_pods.add(key)

    def _pod_deleted(self, pod: Any) -> None:
        with self._lock:
            self._unplace(meta_namespace_key(pod))

    def _place(self, key: str, placement: Placement) -> None:
        self._unplace(key)
        self._placements[key] = placement
        self._by_node.setdefault(placement.node, set()).add(key)
        self._dirty_nodes.add(placement.node)

    def _unplace(self, key: str) -> None:
        old = self._placements.pop(key, None)
        if old is not None:
            keys = self._by_node.get(old.node, set())
            keys.discard(key)
            if not keys:
                self._by_node.pop(old.node, None)
            self._dirty_nodes.add(old.node)

    # --- what the web server sends ----------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Everything, for a page that has just connected; clears nothing."""
        with self._lock:
            return {
                "type": "snapshot",
                "features": self._features(),
                "ended": self.ended,
                "latest": self._latest,
                "lines": list(self._lines),
                "pods": [self._pod_json(p) for p in self._pods.values()],
                "nodes": [self._node_json(name) for name in self._nodes],
            }

    def changes(self) -> dict[str, Any] | None:
        """What changed since the last call, or None. A forgotten pod or deleted node comes
        back as ``{"key": ..., "removed": true}``."""
        with self._lock:
            if not (self._new_lines or self._dirty_pods or self._dirty_nodes):
                return None
            pods = [
                self._pod_json(self._pods[k]) if k in self._pods else {"key": k, "removed": True}
                for k in self._dirty_pods
            ]
            nodes = [
                self._node_json(n) if n in self._nodes else {"name": n, "removed": True}
                for n in self._dirty_nodes
            ]
            batch = {
                "type": "changes",
                "ended": self.ended,
                "latest": self._latest,
                "lines": self._new_lines,
                "pods": pods,
                "nodes": nodes,
            }
            self._new_lines = []
            self._dirty_pods = set()
            self._dirty_nodes = set()
            return batch

    def pod_detail(self, key: str) -> dict[str, Any] | None:
        """A pod's attempts and its last attempt's per-node table: the terminal's "why" table."""
        with self._lock:
            pod = self._find(key)
            if pod is None:
                return None
            detail = self._pod_json(pod)
            detail["attempts"] = list(pod.history)
            detail["table"] = self._table_rows(pod)
            detail["table_kept"] = pod.key in self._tables
            return detail

    def _find(self, key: str) -> Pod | None:
        return find_pod(self._pods, key)

    def _table_rows(self, pod: Pod) -> list[dict[str, Any]]:
        """The rows of Report.why_this_node, as data: a rejected node names its filter; a node
        that passed lists its scores, and the selected one is marked."""
        passed = set(pod.scores) | ({pod.selected} if pod.selected else set())
        rows = []
        for node in sorted(set(pod.filters) | passed, key=natural):
            if node in pod.filters:
                plugin, reason = pod.filters[node]
                rows.append({"node": node, "filter": f"{plugin}: {reason}", "scores": []})
            else:
                scores = sorted(pod.scores.get(node, {}).items())
                rows.append(
                    {
                        "node": node,
                        "filter": "passed",
                        "scores": [[p, s] for p, s in scores],
                        "total": sum(s for _, s in scores),
                        "selected": node == pod.selected,
                    }
                )
        return rows

    def _features(self) -> dict[str, Any]:
        f = self.features
        return {
            "step": f.step,
            "title": _title(f.step),
            "queues": list(f.queues),
            "permit": f.permit,
            "flushes": f.flushes,
            "assumed": f.assumed,
            "resources": f.resources,
        }

    def _pod_json(self, pod: Pod) -> dict[str, Any]:
        remaining = None
        if pod.deadline is not None:
            remaining = max(0.0, pod.deadline - self.now())
        return {
            "key": pod.key,
            "name": pod.key.rsplit("/", 1)[-1],
            "where": pod.where,
            "event": pod.event,
            "node": pod.node,
            "selected": pod.selected,
            "assumed": pod.assumed,
            "message": pod.message,
            "rejectors": sorted(pod.rejectors),
            "permit_plugins": pod.permit_plugins,
            "remaining": remaining,
            "attempt_count": pod.attempts,
            "nominated": pod.nominated,
            "preempted_by": pod.preempted_by,
            "profile": pod.profile,
            "rev": pod.rev,
        }

    def _node_json(self, name: str) -> dict[str, Any]:
        node = self._nodes[name]
        keys = sorted(self._by_node.get(name, ()), key=natural)
        pods = [(k, self._placements[k]) for k in keys]
        view: dict[str, Any] = {
            "name": name,
            "unschedulable": node.unschedulable,
            "taints": node.taints,
            "pods": [{"key": k, "name": k.rsplit("/", 1)[-1], "ours": p.ours} for k, p in pods],
        }
        if self.features.resources:
            requested: dict[str, float] = {}
            for _, p in pods:
                for resource, amount in p.requests.items():
                    requested[resource] = requested.get(resource, 0.0) + amount
            requested["pods"] = float(len(pods))
            view["allocatable"] = node.allocatable
            view["requested"] = requested
        return view


class _Handler(ResourceEventHandler):
    """Informer handler: adds and updates go to ``changed``, deletes to ``deleted``."""

    def __init__(self, changed: Callable[[Any], None], deleted: Callable[[Any], None]) -> None:
        self.changed = changed
        self.deleted = deleted

    def add(self, obj: Any) -> None:
        self.changed(obj)

    def update(self, old: Any, new: Any) -> None:
        self.changed(new)

    def delete(self, obj: Any) -> None:
        self.deleted(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)


def _shown(amounts: dict[str, int]) -> dict[str, float]:
    """Upstream's units (cpu in millicores) as the page shows them: cpu in cores."""
    return {r: a / 1000 if r == "cpu" else float(a) for r, a in amounts.items()}


def _title(step: int) -> str:
    try:
        return steps.get(step).title
    except ValueError:  # a step the manifest does not name yet
        return ""
