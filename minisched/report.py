"""All terminal output: the bindings table, "why this node", and the queues as they change.

Upstream counterpart: none in the scheduler; it plays the part of kube-scheduler's logs,
``kubectl get pods -o wide`` and the kube-scheduler-simulator's per-plugin result annotations
(``kube-scheduler-simulator.sigs.k8s.io/filter-result``, ``score-result``).

Steps never import rich. They call one small interface, ``Recorder.record(event, **fields)``
(minisched/recorder.py lists the events); minisched/podstate.py folds them into each pod's
state, and this module shows that state as lines and tables.

Every event of interest is one plain line, so tests and CI logs can read it; on a terminal the
three queues are also shown as a live table below those lines (erased when the run ends with
the queues empty, as a finished scenario leaves them). Every event goes through one
lock, in the order it was recorded, to the lines, the live table and any listener
(``subscribe``): a line is never lost under the live table, and a listener sees what the
terminal shows.

Memory stays bounded however long a scheduler runs. The per-node detail ("filter" and "score":
one event per node, and plugin, in every cycle) is kept only for the pods it will be shown for:
the pods a scenario ``follow``\\ s, and the ``window`` pods attempted last (0 by default: the
scheduler alone shows no per-node detail, so it keeps none, and a "filter" or "score" event
for another pod returns at once). Any other pod's view lives only while the pod is in a queue
or a scheduling cycle: once it is bound, failed or deleted, nothing is kept for it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from .podstate import FIFO, GONE, QUEUES, WAITING, PodState, find_pod, natural
from .recorder import PER_NODE

__all__ = [
    "PIPE_WIDTH",
    "Listener",
    "NodeResources",
    "Report",
    "new_console",
]

# The live table's column of the pods between Permit and their binding (not a queue).
WAITING_COLUMN = "waiting on Permit"

# Off a terminal, rich assumes 80 columns: step titles would wrap mid-phrase and table cells
# split, so a run captured to a file or a pipe would not read like the terminal run the
# chapters quote. Off a terminal the console is this wide, unless $COLUMNS says otherwise.
PIPE_WIDTH = 200

# A summary table of more nodes than this folds its rows (a cluster of hundreds of nodes):
# "Why this node" shows the best-scored nodes and counts the rest, with the rejected nodes
# counted per reason; "Nodes" shows the nodes that hold pods.
FOLD_ROWS = 12
SHOWN_PASSED = 5  # the best-scored nodes a folded "Why this node" table shows

# The events after which a pod is in no queue and no cycle (it may come back to a queue).
_DONE = frozenset({"bound", "error", "unschedulable"})

# What a listener is told of every event, in order: the event, its fields, and its plain line
# ("" for the events that print none).
Listener = Callable[[str, dict[str, Any], str], None]


@dataclass(frozen=True)
class NodeResources:
    """A node's requests and allocatable as the scheduler counts them (from step 10): CPU in
    millicores, memory in bytes."""

    name: str
    pods: int
    milli_cpu: int
    memory: int
    allowed_pods: int
    allocatable_milli_cpu: int
    allocatable_memory: int


def new_console() -> Console:
    """The console for a run: the terminal's width on a terminal, else PIPE_WIDTH or $COLUMNS."""
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        console = Console(width=PIPE_WIDTH)
    return console


class Report:
    """Collects what the scheduler records and renders it with rich.

    ``_lock`` guards every field below and the output itself: the scheduling thread, binding
    threads, informers and the scenario record concurrently, and each event's state change,
    its line, the live table's redraw and the listeners' calls happen under it, in one order.
    (Printed from several threads without it, a line and a redraw of the live table could
    interleave, and the redraw would erase the line.) It is reentrant: the live table reads
    the state while the lock is held.
    """

    def __init__(
        self, console: Console | None = None, *, live: bool | None = None, window: int = 0
    ) -> None:
        self.console = console or new_console()
        # Asked once: rich's Console.is_terminal reads a few environment variables every time,
        # and _publish needs the answer for every line (2.5 us here; more in a busy process).
        self._is_terminal = self.console.is_terminal
        self.live_view = self._is_terminal if live is None else live
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # notified after every event
        self.pods: dict[str, PodState] = {}
        self._window = window
        self._followed: set[str] = set()
        self._recent: OrderedDict[str, None] = OrderedDict()  # the window, oldest first
        # followed | recent: the pods whose per-node detail is kept. Read without the lock by
        # record's cheap path (one set lookup is atomic); a pod is added before its attempt.
        self._detailed: set[str] = set()
        self._listeners: list[Listener] = []
        self._fifo_seen = False  # the live table's columns: see queue_table
        self._held: list[tuple[str, dict[str, Any], str]] | None = None  # see announce()
        self._muted = False
        self._live: Live | None = None
        self._log_streams: list[tuple[logging.StreamHandler[Any], Any]] = []

    # --- Recorder ---------------------------------------------------------------------------

    def record(self, event: str, /, **fields: Any) -> None:
        pod = str(fields.get("pod", ""))
        if event in PER_NODE and not self.wants_detail(pod):
            # A node's result for a pod nobody will be shown: the cheap path.
            return
        with self._lock:
            line = self._apply(pod, event, fields)
            if self._held is not None:
                self._held.append((event, fields, line))
            else:
                self._publish(event, fields, line)
            self._changed.notify_all()

    def wants_detail(self, pod: str) -> bool:
        """A followed or recent pod's; every pod's while a listener (the web page) sees every
        event, as it keeps what it shows within bounds of its own."""
        return pod in self._detailed or bool(self._listeners)

    def say(self, line: str) -> None:
        """Print a line of the scenario's own, in order with the scheduler's."""
        self.record("say", line=line)

    @contextmanager
    def announce(self, line: str) -> Iterator[None]:
        """Say ``line`` once the block has run, ahead of every line recorded meanwhile.

        The block is the action the line reports, e.g. creating a node: the scheduler's informer
        sees the node, and moves pods, before the create call returns. Those lines are held and
        printed after the action's own line, so the cause comes first. If the block raises, the
        held lines are printed without it.
        """
        with self._lock:
            if self._held is not None:
                raise RuntimeError("announce() does not nest")
            self._held = []
        said = False
        try:
            yield
            said = True
        finally:
            with self._lock:
                held, self._held = self._held, None
                if said:
                    self._publish("say", {"line": line}, line)
                for event, fields, held_line in held:
                    self._publish(event, fields, held_line)

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` (called with the lock held) holds after some event."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout)

    def follow(self, pod: str) -> None:
        """Keep every detail of ``pod`` (``namespace/name``): it will be shown, as a scenario's
        pods are in the summary tables. Call it before the pod is created."""
        with self._lock:
            self._followed.add(pod)
            self._detailed.add(pod)

    def mute(self) -> None:
        """The story is over: lines recorded from now on (say, the scenario's cleanup deleting
        its pods) are not printed. The state, the live table and the listeners still follow."""
        with self._lock:
            self._muted = True

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(event, fields, line)`` for every event from now on, in the order the
        lines print, under the report's lock (so it must not block)."""
        with self._lock:
            self._listeners.append(listener)

    def _publish(self, event: str, fields: dict[str, Any], line: str) -> None:
        """Hand one event to every subscriber: the lines, the live table, the listeners."""
        if line and not self._muted:
            if self._live is None and not self._is_terminal:
                # Off a terminal the line is written as it is: the text and a newline is all
                # rich would write (no markup, no wrapping, no colour), and it takes rich about
                # 100 us a line to find that out, three times per pod the scheduler binds.
                self.console.file.write(line + "\n")
                self.console.file.flush()
            else:
                # soft_wrap: a line is never broken by rich; a terminal folds a long one itself.
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)
        if self._live is not None:
            self._live.update(self.queue_table(), refresh=True)
        for listener in self._listeners:
            listener(event, fields, line)

    def _apply(self, pod: str, event: str, f: dict[str, Any]) -> str:
        """Update one pod's view; return the plain line to print, or ""."""
        if event == "say":
            return str(f["line"])
        if not pod:
            return ""
        if event == "attempt":
            self._remember_attempt(pod)
        view = self.pods.get(pod)
        if view is None:
            view = self.pods[pod] = PodState()
        view.apply(event, f)  # the one interpretation of the event (minisched/podstate.py)
        line = self._line(view, pod, event, f)
        # A pod that will not be shown needs a view only while it is in a queue or a cycle.
        if pod not in self._detailed and (event in _DONE or view.where == GONE):
            del self.pods[pod]
        return line

    def _remember_attempt(self, pod: str) -> None:
        """Move ``pod`` to the newest end of the window; forget the detail of the oldest."""
        if self._window <= 0:
            return
        self._recent[pod] = None
        self._recent.move_to_end(pod)
        self._detailed.add(pod)
        while len(self._recent) > self._window:
            old, _ = self._recent.popitem(last=False)
            if old in self._followed:
                continue
            self._detailed.discard(old)
            view = self.pods.get(old)
            if view is not None and not view.queued:
                del self.pods[old]
            elif view is not None:
                view.filters.clear()
                view.scores.clear()

    def _line(self, view: PodState, pod: str, event: str, f: dict[str, Any]) -> str:
        """The event's plain line, or "" (``view`` has folded it in already)."""
        if event == "queue":
            self._fifo_seen = self._fifo_seen or f["queue"] == FIFO  # though bound when shown
            return f"queue    {pod}: -> {f['queue']} ({f.get('event', '')})"
        if event == "feasible" and "to_find" in f:
            return (
                f"filter   {pod}: checked {f['checked']} of {f['nodes']} nodes from index "
                f"{f['start']}, found {f['passed']} feasible "
                f"(numFeasibleNodesToFind {f['to_find']})"
            )
        if event == "prescore":
            return f"prescore {pod}: {f['plugin']} wrote {f['key']} = {f['data']!r} to CycleState"
        if event == "unschedulable":
            return f"pending  {pod}: {f['message']}{_profile(view)}"
        if event == "assumed":
            took = view.algorithm_seconds
            chosen = f" (chosen in {took * 1000:.1f} ms)" if took is not None else ""
            return f"assumed  {pod} -> {f['node']}{chosen}"
        if event == "forgotten":
            return f"forgot   {pod} on {f['node']}: Unreserve ran, the cache no longer counts it"
        if event == "waiting":
            # Each plugin, with how long it holds the pod and its timeout when it said so.
            plugins = ", ".join(
                f"{p} (wait {_seconds(view.permit[p][0])}, timeout {_seconds(view.permit[p][1])})"
                if p in view.permit
                else p
                for p in f.get("plugins", ())
            )
            return f"waiting  {pod}: on {f['node']}, Permit by {plugins}"
        if event == "preemption":
            return f"preempt  {pod}: {f['message']}"
        if event == "nominated":
            return f"nominate {pod} -> {f['node']} (status.nominatedNodeName)"
        if event == "preempted":
            return f"preempted {pod} on {f['node']}, for {f['by']}: deleted, gracefully"
        if event == "bound":
            return f"bound    {pod} -> {f['node']}{_profile(view)}"
        if event == "extender":
            # The scheduler's own timing of the call: what the webhook costs each pod.
            took = f"{float(f['seconds']) * 1000:.1f} ms"
            failed = f", failed: {f['error']}" if f.get("error") else ""
            return f"extender {pod}: {f['verb']} took {took} ({f['extender']}){failed}"
        if event == "guest":
            # What a WebAssembly guest logged while it served this pod (step 17).
            return f"guest    {pod}: {f['message']}"
        if event == "error":
            return f"error    {pod}: {f['message']}"
        return ""

    # --- live queue view ---------------------------------------------------------------------

    def __enter__(self) -> Report:
        if self.live_view:
            with self._lock:
                # Not rich's stdout/stderr redirection: it prints what other threads write
                # without this report's lock. The run's own lines all come through record(),
                # and its log lines (-v) through _LogStream.
                self._live = Live(
                    self.queue_table(),
                    console=self.console,
                    auto_refresh=False,
                    redirect_stdout=False,
                    redirect_stderr=False,
                )
                self._live.__enter__()
                self._log_streams = _redirect_terminal_logs(_LogStream(self))
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._live is not None:
                for handler, stream in self._log_streams:
                    handler.setStream(stream)
                self._log_streams = []
                # The run is over. Its queues are normally empty (the scenario's cleanup deleted
                # its pods, and the lines above say where each went): an empty table would say
                # nothing, so rich erases it (transient). Pods still queued (a run cut short)
                # leave the last table, which says where they wait.
                self._live.transient = not any(v.queued for v in self.pods.values())
                self._live.update(self.queue_table(), refresh=True)
                self._live.__exit__(None, None, None)
                self._live = None

    def _print_log_line(self, line: str) -> None:
        """A log line, printed above the live table like the report's own lines."""
        with self._lock:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
            if self._live is not None:
                self._live.update(self.queue_table(), refresh=True)

    def queue_table(self) -> Table:
        table = Table(title="Scheduling queue")
        with self._lock:
            # A step that queues pods in a FIFO has none of the three queues: show what it has.
            fifo = any(v.where == FIFO for v in self.pods.values())
            names = (FIFO, WAITING) if fifo or self._fifo_seen else (*QUEUES, WAITING)
            self._fifo_seen = self._fifo_seen or fifo
            columns = [
                sorted(p.rsplit("/", 1)[-1] for p, v in self.pods.items() if v.where == q)
                for q in names
            ]
        for name in names:
            table.add_column(WAITING_COLUMN if name == WAITING else name)
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
        """One line on the decision: how the node was chosen, or why the pod is pending."""
        with self._lock:
            view = self._find(pod)
            if view is None:
                return ""
            if not node:
                return view.message
            if node in view.scores:
                totals = {n: sum(s.values()) for n, s in view.scores.items()}
                per_plugin = ", ".join(f"{p} {s}" for p, s in sorted(view.scores[node].items()))
                why = f"score {totals[node]} ({per_plugin})"
                tied = sum(1 for t in totals.values() if t == totals[node])
                if tied > 1 and totals[node] == max(totals.values()):
                    why += f"; {tied} nodes tied, picked at random"
                return why
            if view.nominated_first and view.passed == 1:
                return "its nominated node, tried first, passed Filter"
            if view.passed == 1:
                return f"1 of {view.nodes} nodes passed Filter"
            if view.passed > 1:
                return f"random among the {view.passed} of {view.nodes} nodes that passed Filter"
            if view.among:
                return f"random pick among {view.among} nodes"
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
            view = self._find(pod) or PodState()
            # The selected node too: it has no scores when it was the only one to pass.
            passed = set(view.scores) | ({view.selected} if view.selected else set())
            if len(set(view.filters) | passed) > FOLD_ROWS:
                self._folded_rows(table, view, passed)
                return table
            nodes = sorted(set(view.filters) | passed, key=natural)
            for node in nodes:
                if node in view.filters:
                    plugin, reason = view.filters[node]
                    table.add_row(node, f"{plugin}: {reason}", "")
                else:
                    table.add_row(node, "passed", self._scores_cell(view, node))
        return table

    @staticmethod
    def _scores_cell(view: PodState, node: str) -> str:
        per_plugin = sorted(view.scores.get(node, {}).items())
        scores = ", ".join(f"{p} {s}" for p, s in per_plugin)
        return scores + (" <- selected" if node == view.selected else "")

    def _folded_rows(self, table: Table, view: PodState, passed: set[str]) -> None:
        """A table of many nodes: the selected node and the best-scored ones, the other nodes
        that passed in one row, and the rejected nodes in one row per reason."""
        totals = {n: sum(view.scores.get(n, {}).values()) for n in passed}
        best = sorted(passed, key=lambda n: (n != view.selected, -totals[n], natural(n)))
        shown = sorted(best[:SHOWN_PASSED], key=natural)
        for node in shown:
            table.add_row(node, "passed", self._scores_cell(view, node))
        rest = [totals[n] for n in best[SHOWN_PASSED:]]
        if rest:
            low, high = min(rest), max(rest)
            scores = f"total {low}" if low == high else f"total {low}..{high}"
            table.add_row(f"{len(rest)} more nodes", "passed", scores)
        reasons: dict[tuple[str, str], list[str]] = {}
        for node, why in view.filters.items():
            reasons.setdefault(why, []).append(node)
        for (plugin, reason), nodes in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            name = nodes[0] if len(nodes) == 1 else f"{len(nodes)} nodes"
            table.add_row(name, f"{plugin}: {reason}", "")

    def nodes_table(self, nodes: list[NodeResources]) -> Table:
        """Per node: requested / allocatable, as NodeResourcesFit compares them."""
        title = "Nodes: requested / allocatable"
        table = Table(title=title, title_justify="left", min_width=len(title))
        table.add_column("node")
        table.add_column("cpu")
        table.add_column("memory")
        table.add_column("pods")
        shown = sorted(nodes, key=lambda n: natural(n.name))
        if len(shown) > FOLD_ROWS:
            shown = [n for n in shown if n.pods]  # many nodes: those that hold pods
        for n in shown:
            table.add_row(
                n.name,
                f"{_cpu(n.milli_cpu)} / {_cpu(n.allocatable_milli_cpu)}",
                f"{_bytes(n.memory)} / {_bytes(n.allocatable_memory)}",
                f"{n.pods} / {n.allowed_pods}",
            )
        if len(shown) < len(nodes):
            table.add_row(f"{len(nodes) - len(shown)} more nodes", "", "", "0 pods")
        return table

    def held(self) -> dict[str, int]:
        """What the report holds: pod views, and per-node results (filters and scores)."""
        with self._lock:
            return {
                "pods": len(self.pods),
                "node_results": sum(len(v.filters) + len(v.scores) for v in self.pods.values()),
                "window": len(self._recent),
            }

    def _find(self, pod: str) -> PodState | None:
        """The view for ``pod``, given as ``namespace/name`` or just ``name``."""
        return find_pod(self.pods, pod)

    def print(self, *renderables: Any) -> None:
        with self._lock:
            for r in renderables:
                self.console.print(r)


class _LogStream:
    """What logging's handlers write to while the live view is on: each complete line is
    printed through the report, so it cannot land in the middle of a redraw of the table.
    ``_partial`` (the text after the last newline) is guarded by the report's lock."""

    def __init__(self, report: Report) -> None:
        self._report = report
        self._partial = ""

    def write(self, text: str) -> int:
        with self._report._lock:
            *lines, self._partial = (self._partial + text).split("\n")
            for line in lines:
                self._report._print_log_line(line)
        return len(text)

    def flush(self) -> None:
        return None


def _redirect_terminal_logs(stream: _LogStream) -> list[tuple[logging.StreamHandler[Any], Any]]:
    """Point the root logger's handlers that write to a terminal at ``stream``; return each
    handler with the stream it had, to put back."""
    replaced = []
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler and _is_terminal(handler.stream):
            replaced.append((handler, handler.setStream(stream)))
    return replaced


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def _profile(view: PodState) -> str:
    """`` (profile NAME)`` for a decision of a profile's (step 14 on), else ""."""
    return f" (profile {view.profile})" if view.profile else ""


def _seconds(value: float) -> str:
    """8.0 -> "8s", 0.5 -> "0.5s" (Go's time.Duration style, as the steps' messages)."""
    return f"{value:g}s"


def _cpu(milli_cpu: int) -> str:
    """Millicores as a quantity: 2000 -> "2", 1500 -> "1500m"."""
    return str(milli_cpu // 1000) if milli_cpu % 1000 == 0 else f"{milli_cpu}m"


def _bytes(value: int) -> str:
    """Bytes as the largest binary unit that divides them: 2**30 -> "1Gi"."""
    for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)
