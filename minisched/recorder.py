"""What a step calls to make its decisions visible: ``Recorder.record(event, **fields)``.

Upstream counterpart: none in the scheduler; it stands where kube-scheduler logs (klog) and
the kube-scheduler-simulator's per-plugin result annotations
(``kube-scheduler-simulator.sigs.k8s.io/filter-result``, ``score-result``) stand.

This is all a step imports of the runtime's output: steps never import rich. What they record
is interpreted once (minisched/podstate.py) and shown twice: as lines and tables on the
terminal (minisched/report.py) and on the live page (minisched/web/state.py). The events a
step may record:

===============  ===========================================================================
``queue``        pod, queue (activeQ/podBackoffQ/unschedulableQ, or FIFO in steps 1-5, or
                 none), event: a queue move. The page also reads ``deadline`` on a move into
                 podBackoffQ (when the backoff ends, on the scheduler's clock) and ``plugins``
                 on a move into unschedulableQ (the plugins that rejected the pod)
``attempt``      pod: a scheduling cycle started for the pod; profile: its profile (step 14 on)
``filter``       pod, node, plugin, reason: a Filter plugin rejected the node
``feasible``     pod, passed, nodes, nominated: how many of the nodes passed Filter (nominated:
                 only the pod's nominated node was tried, and it passed); from step 12 also
                 checked, start, to_find: the nodes Filter examined, from which index, and
                 how many feasible nodes were enough (numFeasibleNodesToFind)
``prescore``     pod, plugin, key, data: what a PreScore plugin wrote to CycleState
``score``        pod, node, plugin, score: a Score plugin's final (normalised, weighted) score
``selected``     pod, node, among (step 1: how many nodes the random pick was among),
                 seconds (step 15 on: how long the cycle took to choose)
``permit``       pod, plugin, wait, timeout: a Permit plugin holds the pod for ``wait`` seconds
``assumed``      pod, node: the scheduler cache counts the pod on the node before it is bound
``forgotten``    pod, node: after a failure, Unreserve ran and the cache forgot the assumed pod
``unschedulable`` pod, message: the cycle failed, with the FitError message
``waiting``      pod, node, plugins, deadline: Permit made the pod wait (until ``deadline``,
                 on the scheduler's clock)
``preemption``   pod, message: a step of the pod's preemption (eligibility, a candidate, the pick)
``nominated``    pod, node: preemption nominated the node for the pod (status.nominatedNodeName)
``preempted``    pod, by, node: the pod was evicted to make room for ``by``
``bound``        pod, node: the binding was accepted by the API server
``error``        pod, message: anything else that went wrong for the pod
``extender``     pod, extender, verb, seconds (error): one call to an extender and how long it
                 took, timed by the scheduler itself (step 15 on)
``guest``        pod, message: a line a WebAssembly guest logged while it served the pod
``say``          line: a line of the scenario's own (``Report.say``)
===============  ===========================================================================
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["PER_NODE", "NullRecorder", "Recorder"]

# The events that carry one node's result: recorded once per node (and plugin) every cycle.
PER_NODE = frozenset({"filter", "score"})


class Recorder(Protocol):
    """What a step calls to make its decisions visible."""

    def record(self, event: str, /, **fields: Any) -> None: ...

    def wants_detail(self, pod: str) -> bool:
        """Whether the per-node events (PER_NODE) of ``pod`` are kept: a step asks once per
        cycle and records one per node only then, as upstream checks klog.V(10).Enabled()
        once before logging every node's score."""
        ...


class NullRecorder:
    """Records nothing: the default when a step runs alone."""

    def record(self, event: str, /, **fields: Any) -> None:
        return None

    def wants_detail(self, pod: str) -> bool:
        return False
