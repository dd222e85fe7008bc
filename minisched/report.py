"""All terminal output: the bindings table, "why this node", and the queues as they change.

Upstream counterpart: none in the scheduler; it plays the part of kube-scheduler's logs,
``kubectl get pods -o wide`` and the kube-scheduler-simulator's per-plugin result annotations
(``kube-scheduler-simulator.sigs.k8s.io/filter-result``, ``score-result``).

Steps never import rich. They call one small interface, ``Recorder.record(event, **fields)``,
and this module turns what they recorded into tables. The events a step may record:

===============  ===========================================================================
``queue``        pod, queue (activeQ/podBackoffQ/unschedulableQ/none), event: a queue move
``attempt``      pod: a scheduling cycle started for the pod
``filter``       pod, node, plugin, reason: a Filter plugin rejected the node
``score``        pod, node, plugin, score: a Score plugin's final (normalised, weighted) score
``selected``     pod, node: the node the scheduling cycle picked
``assumed``      pod, node: the scheduler cache counts the pod on the node before it is bound
``unschedulable`` pod, message: the cycle failed, with the FitError message
``waiting``      pod, node, plugins: Permit made the pod wait
``bound``        pod, node: the binding was accepted by the API server
``error``        pod, message: anything else that went wrong for the pod
===============  ===========================================================================

Every event of interest is one plain line, so tests and CI logs can read it; on a terminal the
three queues are also shown as a live table below those lines.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Console
from rich.live import Live
from rich.table import Table

QUEUES = ("activeQ", "podBackoffQ", "unschedulableQ")
WAITING = "waiting on Permit"  # not a queue: the pods between Permit and their binding


class Recorder(Protocol):
    """What a step calls to make its decisions visible."""

    def record(self, event: str, /, **fields: Any) -> None: ...


class NullRecorder:
    """Records nothing: the default when a step runs alone."""

    def record(self, event: str, /, **fields: Any) -> None:
        return None


@dataclass
class PodView:
    """What the report knows about one pod; ``filters``/``scores`` are from its last attempt."""

    attempts: int = 0
    queue: str = ""
    filters: dict[str, tuple[str, str]] = field(default_factory=dict)  # node -> (plugin, reason)
    scores: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    selected: str = ""
    node: str = ""
    message: str = ""


class Report:
    """Collects what the scheduler records and renders it with rich.

    ``_lock`` guards ``pods`` and ``lines``: the scheduling thread, binding threads and the
    informers record concurrently.
    """

    def __init__(self, console: Console | None = None, *, live: bool | None = None) -> None:
        self.console = console or Console()
        self.live_view = self.console.is_terminal if live is None else live
        self._lock = threading.Lock()
        self.pods: dict[str, PodView] = defaultdict(PodView)
        self._live: Live | None = None

    # --- Recorder ---------------------------------------------------------------------------

    def record(self, event: str, /, **fields: Any) -> None:
        pod = str(fields.get("pod", ""))
        with self._lock:
            view = self.pods[pod]
            line = self._apply(view, event, fields)
        # With a live view, lines print above it (rich keeps the live table at the bottom).
        if line:
            self.console.print(line, markup=False, highlight=False)
        if self._live is not None:
            self._live.update(self.queue_table(), refresh=True)

    def _apply(self, view: PodView, event: str, f: dict[str, Any]) -> str:
        """Update one pod's view; return the plain line to print, or ""."""
        pod = f.get("pod", "")
        if event == "queue":
            view.queue = f["queue"]
            return f"queue    {pod}: -> {f['queue']} ({f.get('event', '')})"
        if event == "attempt":
            view.attempts += 1
            view.queue = ""
            view.filters.clear()
            view.scores.clear()
            return ""
        if event == "filter":
            view.filters[f["node"]] = (f["plugin"], f["reason"])
            return ""
        if event == "score":
            view.scores[f["node"]][f["plugin"]] = int(f["score"])
            return ""
        if event == "selected":
            view.selected = f["node"]
            return ""
        if event == "unschedulable":
            view.message = f["message"]
            return f"pending  {pod}: {f['message']}"
        if event == "assumed":
            return f"assumed  {pod} -> {f['node']}"
        if event == "waiting":
            view.queue = WAITING
            plugins = ", ".join(f.get("plugins", ()))
            return f"waiting  {pod}: on {f['node']}, Permit by {plugins}"
        if event == "bound":
            view.node = f["node"]
            view.queue = ""
            return f"bound    {pod} -> {f['node']}"
        if event == "error":
            view.message = f["message"]
            return f"error    {pod}: {f['message']}"
        return ""

    # --- live queue view ---------------------------------------------------------------------

    def __enter__(self) -> Report:
        if self.live_view:
            self._live = Live(self.queue_table(), console=self.console, auto_refresh=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def queue_table(self) -> Table:
        table = Table(title="Scheduling queue")
        for name in (*QUEUES, WAITING):
            table.add_column(name)
        with self._lock:
            columns = [
                sorted(p.rsplit("/", 1)[-1] for p, v in self.pods.items() if v.queue == q)
                for q in (*QUEUES, WAITING)
            ]
        for row in range(max((len(c) for c in columns), default=0)):
            table.add_row(*(c[row] if row < len(c) else "" for c in columns))
        return table

    # --- the summary --------------------------------------------------------------------------

    def bindings_table(self, bindings: dict[str, str | None], title: str = "Bindings") -> Table:
        table = Table(title=title, title_justify="left", min_width=len(title))
        table.add_column("pod")
        table.add_column("node")
        table.add_column("why")
        for pod, node in bindings.items():
            table.add_row(pod, node or "(pending)", self.why(pod, node))
        return table

    def why(self, pod: str, node: str | None) -> str:
        """One line on the decision: the winning scores, or why the pod is pending."""
        with self._lock:
            view = self._find(pod)
            if view is None:
                return ""
            if node and node in view.scores:
                total = sum(view.scores[node].values())
                per_plugin = ", ".join(f"{p} {s}" for p, s in sorted(view.scores[node].items()))
                return f"score {total} ({per_plugin})"
            if not node and view.message:
                return view.message
            return ""

    def bound_node(self, pod: str) -> str:
        """The node the pod was bound to, or ""."""
        with self._lock:
            view = self._find(pod)
            return view.node if view else ""

    def has_decision(self, pod: str) -> bool:
        """Whether filters or scores were recorded for the pod's last attempt."""
        with self._lock:
            view = self._find(pod)
            return bool(view and (view.filters or view.scores))

    def why_this_node(self, pod: str) -> Table:
        """Per node: which filter rejected it, or its score per plugin (the simulator's view)."""
        title = f"Why this node: {pod}" if self.bound_node(pod) else f"Why no node: {pod}"
        table = Table(title=title, title_justify="left", min_width=len(title))
        table.add_column("node")
        table.add_column("filter")
        table.add_column("scores")
        with self._lock:
            view = self._find(pod) or PodView()
            # The selected node too: it has no scores when it was the only one to pass.
            passed = set(view.scores) | ({view.selected} if view.selected else set())
            nodes = sorted(set(view.filters) | passed, key=_natural)
            for node in nodes:
                if node in view.filters:
                    plugin, reason = view.filters[node]
                    table.add_row(node, f"{plugin}: {reason}", "")
                else:
                    per_plugin = sorted(view.scores.get(node, {}).items())
                    scores = ", ".join(f"{p} {s}" for p, s in per_plugin)
                    mark = " <- selected" if node == view.selected else ""
                    table.add_row(node, "passed", scores + mark)
        return table

    def _find(self, pod: str) -> PodView | None:
        """The view for ``pod``, given as ``namespace/name`` or just ``name``."""
        if pod in self.pods:
            return self.pods[pod]
        for key, view in self.pods.items():
            if key.rsplit("/", 1)[-1] == pod:
                return view
        return None

    def print(self, *renderables: Any) -> None:
        for r in renderables:
            self.console.print(r)


def _natural(name: str) -> tuple[str, int]:
    """Sort node2 before node10."""
    stem = name.rstrip("0123456789")
    digits = name[len(stem) :]
    return stem, int(digits) if digits else -1
