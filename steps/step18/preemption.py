"""Preemption: make room for a pod that fits no node by evicting pods of lower priority.

Upstream: pkg/scheduler/framework/preemption/preemption.go (Candidate, Interface, Evaluator,
Preempt, findCandidates, nodesWherePreemptionMightHelp, DryRunPreemption, callExtenders,
SelectCandidate, pickOneNodeForPreemption, prepareCandidate, getLowerPriorityNominatedPods) and
pkg/scheduler/util/utils.go (MoreImportantPod, GetPodStartTime, GetEarliestPodStartTime,
DeletePod, ClearNominatedNodeName) at v1.23.

The Evaluator is the algorithm; a PostFilter plugin (DefaultPreemption) supplies the parts
that may differ between preemption plugins (``Interface``): how many nodes to try, who may
preempt, and which pods to evict on one node.

1. Re-read the preemptor; stop if it may not preempt (``pod_eligible_to_preempt_others``).
2. The candidate nodes: those whose Filter status is Unschedulable (removing pods may help),
   not UnschedulableAndUnresolvable. A dry run walks them from a random offset and finds on
   each the victims that would make the pod fit (``select_victims_on_node``), until it has
   enough candidates (nodes with victims; at least 10 % of the nodes, at least 100).
3. The extenders that support preemption may narrow the candidates and their victims
   (``call_extenders``).
4. Pick one candidate (``pick_one_node_for_preemption``).
5. Evict its victims, and clear the nomination of lower-priority pods nominated to that node.
   The pod is nominated there; it is scheduled in a later cycle, once the victims are gone.

Not implemented: the metrics.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client import V1Pod

from minisched.informer import meta_namespace_key

from . import framework
from .cycle_state import CycleState
from .framework import Code, Handle, NodeInfo, NodeToStatusMap, PostFilterResult, Status
from .plugins.prioritysort import pod_priority

log = logging.getLogger(__name__)

# Upstream: math.MaxInt32, added to every priority summed so that all are positive.
MAX_INT32 = 2**31 - 1

# What a pod without status.startTime counts as: later than any pod that started.
# Differs from upstream: GetPodStartTime returns time.Now() for such a pod, a new instant at
# each call, so two pods that have not started compare by the order of the calls; here they
# are equal, and the sorts and picks that compare them keep their order instead.
NOT_STARTED = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)


@dataclass
class Victims:
    """The pods to evict on one node, and how many of them a PodDisruptionBudget protects
    (upstream: extenderv1.Victims)."""

    pods: list[V1Pod] = field(default_factory=list)
    num_pdb_violations: int = 0


@dataclass
class Candidate:
    """A node the preemptor could run on once its victims are gone (upstream: candidate)."""

    victims: Victims
    name: str


class Interface(Protocol):
    """What a preemption plugin decides (upstream: preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def candidates_to_victims_map(self, candidates: list[Candidate]) -> dict[str, Victims]: ...

    def pod_eligible_to_preempt_others(
        self, pod: V1Pod, nominated_node_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: V1Pod, node_info: NodeInfo, pdbs: list[Any]
    ) -> tuple[list[V1Pod], int, Status]: ...


# --- helpers (util/utils.go) -------------------------------------------------------------------


def get_pod_start_time(pod: V1Pod) -> datetime.datetime:
    """When the pod started; NOT_STARTED for a pod that has not (upstream: GetPodStartTime:
    "assumed pods and bound pods that haven't started don't have a StartTime yet")."""
    start = pod.status and pod.status.start_time
    return start if isinstance(start, datetime.datetime) else NOT_STARTED


def more_important_pod(pod1: V1Pod, pod2: V1Pod) -> bool:
    """Whether pod1 is more important than pod2: higher priority, or the same and started
    earlier (upstream: MoreImportantPod)."""
    p1, p2 = pod_priority(pod1), pod_priority(pod2)
    if p1 != p2:
        return p1 > p2
    return get_pod_start_time(pod1) < get_pod_start_time(pod2)


def importance(pod: V1Pod) -> tuple[int, datetime.datetime]:
    """A sort key that puts the more important pod first, as ``more_important_pod``."""
    return -pod_priority(pod), get_pod_start_time(pod)


def get_earliest_pod_start_time(victims: Victims) -> datetime.datetime | None:
    """The earliest start among the victims of the highest priority (upstream:
    GetEarliestPodStartTime)."""
    if not victims.pods:
        return None
    max_priority = max(pod_priority(p) for p in victims.pods)
    return min(get_pod_start_time(p) for p in victims.pods if pod_priority(p) == max_priority)


def delete_pod(cs: Any, pod: V1Pod) -> None:
    """Delete the pod as its owner would: with its own grace period, so it goes Terminating
    until its kubelet has stopped it (upstream: util.DeletePod, DeleteOptions{})."""
    cs.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace)


def clear_nominated_node_name(cs: Any, pods: list[V1Pod]) -> list[Exception]:
    """Clear ``status.nominatedNodeName`` of each pod that has one; the errors (upstream:
    ClearNominatedNodeName, which aggregates them)."""
    errs: list[Exception] = []
    for p in pods:
        if not (p.status and p.status.nominated_node_name):
            continue
        try:
            cs.patch_namespaced_pod_status(
                p.metadata.name,
                p.metadata.namespace,
                {"status": {"nominatedNodeName": None}},
                _content_type="application/strategic-merge-patch+json",
            )
        except Exception as err:
            errs.append(err)
    return errs


def _names(pods: list[V1Pod]) -> str:
    return ", ".join(f"{p.metadata.name} (priority {pod_priority(p)})" for p in pods)


# --- the Evaluator ---------------------------------------------------------------------------


class Evaluator:
    """Runs one preemption for one pod (upstream: Evaluator).

    Simplified: no PodDisruptionBudget is read (upstream lists them with a PDB lister): no
    victim ever counts as violating one, so a PDB never protects a pod from preemption here.
    """

    def __init__(
        self, plugin_name: str, handler: Handle, state: CycleState, interface: Interface
    ) -> None:
        self.plugin_name = plugin_name
        self.handler = handler
        self.state = state
        self.interface = interface

    def _say(self, pod: V1Pod, message: str) -> None:
        self.handler.recorder.record("preemption", pod=meta_namespace_key(pod), message=message)

    def preempt(self, pod: V1Pod, m: NodeToStatusMap) -> tuple[PostFilterResult | None, Status]:
        """A result nominating the chosen node, with Success; a result nominating no node,
        with Unschedulable, when no node has candidates; or no result, with Unschedulable
        (preemption must wait) or an error (upstream: Preempt)."""
        key = meta_namespace_key(pod)
        # 0) The latest version of the pod: its nominated node may have changed.
        latest = self.handler.pod_lister().get_by_key(key)
        if latest is None:
            log.error('Getting the updated preemptor pod object pod="%s": not found', key)
            return None, framework.as_status(Exception(f'pods "{pod.metadata.name}" not found'))
        pod = latest

        # 1) Ensure the preemptor is eligible to preempt other pods.
        nnn = (pod.status and pod.status.nominated_node_name) or ""
        eligible, message = self.interface.pod_eligible_to_preempt_others(pod, m.get(nnn))
        if not eligible:
            log.debug('Pod is not eligible for more preemption pod="%s"', key)
            self._say(pod, message)
            return None, Status(Code.UNSCHEDULABLE)

        # 2) Find all preemption candidates.
        candidates, node_to_status_map, status = self.find_candidates(pod, m)
        if not status.is_success():
            return None, status

        # Return a FitError only when there are no candidates that fit the pod.
        if not candidates:
            fit_error = framework.FitError(
                pod,
                len(node_to_status_map),
                framework.Diagnosis(node_to_status_map=node_to_status_map),
            )
            self._say(pod, f"no candidate: {fit_error}")
            # The result names no node: the pod's nomination, if it had one, is cleared.
            result = framework.new_post_filter_result_with_nominated_node("")
            return result, Status(Code.UNSCHEDULABLE, [fit_error.error()])

        # 3) Interact with registered Extenders to filter out some candidates if needed.
        candidates, status = self.call_extenders(pod, candidates)
        if not status.is_success():
            return None, status

        # 4) Find the best candidate.
        best = self.select_candidate(pod, candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE)

        # 5) Perform preparation work before nominating the selected candidate.
        status = self.prepare_candidate(best, pod, self.plugin_name)
        if not status.is_success():
            return None, status
        return framework.new_post_filter_result_with_nominated_node(best.name), Status()

    def find_candidates(
        self, pod: V1Pod, m: NodeToStatusMap
    ) -> tuple[list[Candidate], NodeToStatusMap, Status]:
        """The candidates, each node's status where there is none, and an error status if
        every node checked failed with an error (upstream: findCandidates)."""
        all_nodes = self.handler.snapshot_shared_lister().node_infos().list()
        if not all_nodes:
            return [], {}, Status(Code.ERROR, ["no nodes available"])
        potential_nodes, unschedulable_node_status = nodes_where_preemption_might_help(all_nodes, m)
        if not potential_nodes:
            log.debug(
                'Preemption will not help schedule pod on any node pod="%s"',
                meta_namespace_key(pod),
            )
            # Any nomination the pod had is stale now.
            for err in clear_nominated_node_name(self.handler.client_set(), [pod]):
                log.error("Cannot clear 'NominatedNodeName' field of pod: %s", err)
            return [], unschedulable_node_status, Status()

        # Simplified: no PodDisruptionBudget is read.
        pdbs: list[Any] = []
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential_nodes))
        self._say(
            pod,
            f"dry run over {len(potential_nodes)} potential nodes from "
            f"{potential_nodes[offset].node().metadata.name} (offset {offset}), until "
            f"{num_candidates} candidates are found",
        )
        candidates, node_statuses, errs = self.dry_run_preemption(
            pod, potential_nodes, pdbs, offset, num_candidates
        )
        node_statuses.update(unschedulable_node_status)
        if errs and not candidates:
            return [], node_statuses, framework.as_status(errs[0])
        return candidates, node_statuses, Status()

    def dry_run_preemption(
        self,
        pod: V1Pod,
        potential_nodes: list[NodeInfo],
        pdbs: list[Any],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatusMap, list[Exception]]:
        """Find victims on the potential nodes, from ``offset`` on and wrapping around, each
        on copies of the NodeInfo and the CycleState, until ``num_candidates`` are found with
        at least one that violates no PDB: the candidates, non-violating ones first; the
        status of each node that is not one; the errors (upstream: DryRunPreemption).

        Simplified: one node after the other; upstream checks them in parallel (16
        goroutines), so it may dry-run a few more nodes than it needs before it stops.
        """
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: NodeToStatusMap = {}
        errs: list[Exception] = []
        priority = pod_priority(pod)
        for i in range(len(potential_nodes)):
            original = potential_nodes[(offset + i) % len(potential_nodes)]
            node_info_copy = original.clone()
            state_copy = self.state.clone()
            name = node_info_copy.node().metadata.name
            pods, num_pdb_violations, status = self.interface.select_victims_on_node(
                state_copy, pod, node_info_copy, pdbs
            )
            if status.is_success() and pods:
                victims = Victims(pods, num_pdb_violations)
                c = Candidate(victims, name)
                lists = non_violating if num_pdb_violations == 0 else violating
                if len(lists) < num_candidates:  # upstream's candidateList is that long
                    lists.append(c)
                evicted = {p.metadata.uid for p in pods}
                kept = [
                    p
                    for p in original.pods
                    if pod_priority(p) < priority and p.metadata.uid not in evicted
                ]
                why = f"{name} is a candidate: evict {_names(pods)}"
                if kept:
                    why += f"; {_names(kept)} can stay (reprieved)"
                self._say(pod, why)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status.is_success() and not pods:
                status = framework.as_status(
                    Exception(f'expected at least one victim pod on node "{name}"')
                )
            if status.code == Code.ERROR:
                errs.append(status.as_error() or Exception(status.message()))
            node_statuses[name] = status
            self._say(pod, f"{name} is no candidate: {status.message()}")
        return non_violating + violating, node_statuses, errs

    def call_extenders(
        self, pod: V1Pod, candidates: list[Candidate]
    ) -> tuple[list[Candidate], Status]:
        """The candidates the extenders that support preemption agree to, with the victims
        they chose; an error status if one failed (upstream: callExtenders).

        The extenders interested in the pod are asked one after the other, each given the
        node -> victims map the one before returned, which it may shrink (drop nodes) or
        change (other victims); once the map is empty, no preemption can happen and the
        others are not asked. An extender's error fails the PostFilter, unless the extender
        is ignorable: then it is skipped. So does a node it returns without victims
        ("expected at least one victim pod on node"), except that an ignorable extender's
        such node is dropped. No candidate left: no node is picked, and the pod's
        nomination is left as it is (Unschedulable, no result).

        Differs from upstream: the candidates come back in the order of the map the last
        extender returned (an HTTP extender: its answer's order); upstream builds them by
        walking a Go map, in random order, which decides between candidates tied on every
        criterion of ``pick_one_node_for_preemption``.
        """
        extenders = self.handler.extenders()
        node_lister = self.handler.snapshot_shared_lister().node_infos()
        if not extenders:
            return candidates, Status()

        # Migrate candidate slice to victimsMap to adapt to the Extender interface.
        victims_map = self.interface.candidates_to_victims_map(candidates)
        if not victims_map:
            return candidates, Status()
        key = meta_namespace_key(pod)
        for extender in extenders:
            if not extender.supports_preemption() or not extender.is_interested(pod):
                continue
            name = extender.name()
            start = time.perf_counter()
            try:
                node_name_to_victims = extender.process_preemption(pod, victims_map, node_lister)
            except Exception as err:
                if extender.is_ignorable():
                    log.info(
                        "Skipping extender as it returned error and has ignorable flag set "
                        'extender="%s" err="%s"',
                        name,
                        err,
                    )
                    continue
                self._say(pod, f"extender {name} failed: {err}")
                return [], framework.as_status(err)
            finally:
                self.handler.recorder.record(
                    "extender",
                    pod=key,
                    extender=name,
                    verb="preempt",
                    seconds=time.perf_counter() - start,
                )
            # Check if the returned victims are valid.
            node_name_to_victims = dict(node_name_to_victims or {})
            for node_name, victims in list(node_name_to_victims.items()):
                if victims is None or not victims.pods:
                    if extender.is_ignorable():
                        del node_name_to_victims[node_name]
                        log.info('Ignoring node without victims node="%s"', node_name)
                        continue
                    err = Exception(f'expected at least one victim pod on node "{node_name}"')
                    self._say(pod, f"extender {name} failed: {err}")
                    return [], framework.as_status(err)
            dropped = [n for n in victims_map if n not in node_name_to_victims]
            if dropped:
                self._say(pod, f"extender {name} ruled out {', '.join(dropped)}")
            # Replace victimsMap with new result after preemption. So the rest of extenders
            # can continue use it as parameter.
            victims_map = node_name_to_victims
            # If node list becomes empty, no preemption can happen regardless of other
            # extenders.
            if not victims_map:
                break
        return [Candidate(victims, node) for node, victims in victims_map.items()], Status()

    def select_candidate(self, pod: V1Pod, candidates: list[Candidate]) -> Candidate | None:
        """The best candidate (upstream: SelectCandidate)."""
        if not candidates:
            return None
        if len(candidates) == 1:
            self._say(pod, f"picked {candidates[0].name}: the only candidate")
            return candidates[0]
        victims_map = self.interface.candidates_to_victims_map(candidates)
        node, why = pick_one_node_for_preemption(victims_map)
        victims = victims_map.get(node)
        if victims is not None:
            self._say(pod, f"picked {node}: {why}")
            return Candidate(victims, node)
        # We shouldn't reach here; to not break the whole flow, return the first candidate.
        log.error("no candidate selected; should not reach here")
        return candidates[0]

    def prepare_candidate(self, c: Candidate, pod: V1Pod, plugin_name: str) -> Status:
        """Evict the victims (reject those waiting on Permit, delete the others), and clear
        the nomination of lower-priority pods nominated to the node (upstream:
        prepareCandidate).

        Simplified: the Preempted event has no related object (upstream names the preemptor
        as the event's related object).
        """
        fh = self.handler
        cs = fh.client_set()
        key = meta_namespace_key(pod)
        for victim in c.victims.pods:
            # A victim waiting on Permit is not bound yet: rejecting it is enough.
            waiting_pod = fh.get_waiting_pod(victim.metadata.uid)
            if waiting_pod is not None:
                waiting_pod.reject(plugin_name, "preempted")
            else:
                try:
                    delete_pod(cs, victim)
                except client.ApiException as err:
                    log.error(
                        'Preempting pod pod="%s" preemptor="%s": %s %s',
                        meta_namespace_key(victim),
                        key,
                        err.status,
                        err.reason,
                    )
                    return framework.as_status(err)
            recorder = fh.event_recorder()
            if recorder is not None:
                recorder.eventf(
                    victim,
                    "Normal",
                    "Preempted",
                    "Preempting",
                    f"Preempted by {key} on node {c.name}",
                )
            fh.recorder.record("preempted", pod=meta_namespace_key(victim), by=key, node=c.name)

        # Lower-priority pods nominated to this node may no longer fit there: clear their
        # nomination, so that no room is kept for them; their next attempt looks anew. (The
        # update does not move them by itself: a status-only change leaves a pod where it
        # waits in the queue, upstream's comment here notwithstanding.)
        nominated_pods = get_lower_priority_nominated_pods(fh, pod, c.name)
        for err in clear_nominated_node_name(cs, nominated_pods):
            log.error("Cannot clear 'NominatedNodeName' field: %s", err)
        return Status()


def nodes_where_preemption_might_help(
    nodes: list[NodeInfo], m: NodeToStatusMap
) -> tuple[list[NodeInfo], NodeToStatusMap]:
    """The nodes where removing pods may help, and a status for every other node (upstream:
    nodesWherePreemptionMightHelp). A plugin that says UnschedulableAndUnresolvable (a
    cordoned node, say) means no eviction would make the pod fit there."""
    potential_nodes: list[NodeInfo] = []
    node_statuses: NodeToStatusMap = {}
    for node_info in nodes:
        name = node_info.node().metadata.name
        status = m.get(name)
        if status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            node_statuses[name] = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["Preemption is not helpful for scheduling"]
            )
            continue
        potential_nodes.append(node_info)
    return potential_nodes, node_statuses


def pick_one_node_for_preemption(nodes_to_victims: dict[str, Victims]) -> tuple[str, str]:
    """The node to preempt on, and the criterion that chose it (upstream:
    pickOneNodeForPreemption, which returns the node only). Each criterion keeps the nodes
    that are best by it; the first that leaves one node decides:

    1. the fewest PodDisruptionBudget violations;
    2. the lowest priority of the highest-priority victim;
    3. the smallest sum of the victims' priorities (each raised by MaxInt32 + 1, so that
       more victims always weigh more, even at negative priorities);
    4. the fewest victims;
    5. the latest start among each node's earliest-started highest-priority victims: evict
       what has run the shortest;
    6. the first node left.

    Differs from upstream: upstream walks a Go map, so "the first node left" is random; here
    it is the first candidate in dry-run order (from the seeded offset).
    """
    if not nodes_to_victims:
        return "", ""
    nodes = list(nodes_to_victims)

    def highest_priority(n: str) -> int:
        return pod_priority(nodes_to_victims[n].pods[0])

    def sum_priorities(n: str) -> int:
        return sum(pod_priority(p) + MAX_INT32 + 1 for p in nodes_to_victims[n].pods)

    criteria: list[tuple[str, Callable[[str], int]]] = [
        (
            "the fewest PodDisruptionBudget violations",
            lambda n: nodes_to_victims[n].num_pdb_violations,
        ),
        ("the lowest highest-priority victim", highest_priority),
        ("the smallest sum of victim priorities", sum_priorities),
        ("the fewest victims", lambda n: len(nodes_to_victims[n].pods)),
    ]
    for why, score in criteria:
        best = min(score(n) for n in nodes)
        nodes = [n for n in nodes if score(n) == best]
        if len(nodes) == 1:
            return nodes[0], why

    node_to_return = nodes[0]
    latest_start_time = get_earliest_pod_start_time(nodes_to_victims[node_to_return])
    if latest_start_time is None:
        # Not expected: a candidate always has victims.
        return node_to_return, f"the first of {len(nodes)} tied candidates"
    why = f"the first of {len(nodes)} candidates tied on every criterion"
    for node in nodes[1:]:
        earliest = get_earliest_pod_start_time(nodes_to_victims[node])
        if earliest is None:
            continue
        if earliest > latest_start_time:
            latest_start_time, node_to_return = earliest, node
    if any(get_earliest_pod_start_time(nodes_to_victims[n]) != latest_start_time for n in nodes):
        why = "the latest-started highest-priority victims"
    return node_to_return, why


def get_lower_priority_nominated_pods(fh: Handle, pod: V1Pod, node_name: str) -> list[V1Pod]:
    """The pods nominated to the node with a lower priority than ``pod`` (upstream:
    getLowerPriorityNominatedPods)."""
    priority = pod_priority(pod)
    return [p for p in fh.nominated_pods_for_node(node_name) if pod_priority(p) < priority]
