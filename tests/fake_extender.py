"""Upstream's fake extenders, for the tests of the steps that call extenders (step 15 on).

Ported from kubernetes v1.23.4's pkg/scheduler/testing/fake_extender.go (read at
QuarfotPrice/sched.dev@448ef7a3cea647dce342c869b72c2c3483cf1c1f, v1.23.4's pkg/scheduler
under another module path): FakeExtender, its predicates (FitPredicate) and prioritizers
(PriorityFunc), and Node2PrioritizerPlugin; and from pkg/scheduler/factory_test.go the small
fakeExtender that TestSchedulerBinding uses (here BindingExtender).

A predicate returns a step's framework Status, so the fakes are built for one step's framework
module (``fw``); a prioritizer returns (node, score) pairs, and raises for an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from kubernetes import client

from tests.conftest import step_module

# Upstream: FitPredicate, func(pod, node) *Status; here also given the framework module.
FitPredicate = Callable[[ModuleType, client.V1Pod, client.V1Node], Any]
# Upstream: PriorityFunc, func(pod, nodes) (*NodeScoreList, error).
PriorityFunc = Callable[[client.V1Pod, list[client.V1Node]], list[tuple[str, int]]]


# --- predicates --------------------------------------------------------------------------------


def error_predicate_extender(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
    """Always an Error status (upstream: ErrorPredicateExtender)."""
    return fw.Status(fw.Code.ERROR, ["some error"])


def false_predicate_extender(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
    """Always Unschedulable (upstream: FalsePredicateExtender)."""
    return fw.Status(
        fw.Code.UNSCHEDULABLE, [f'pod is unschedulable on the node "{node.metadata.name}"']
    )


def false_and_unresolve_predicate_extender(
    fw: ModuleType, pod: client.V1Pod, node: client.V1Node
) -> Any:
    """Always UnschedulableAndUnresolvable (upstream: FalseAndUnresolvePredicateExtender)."""
    return fw.Status(
        fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [f'pod is unschedulable and unresolvable on the node "{node.metadata.name}"'],
    )


def true_predicate_extender(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
    """Always Success (upstream: TruePredicateExtender)."""
    return fw.Status()


def node1_predicate_extender(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
    """Success on node1 only (upstream: Node1PredicateExtender)."""
    if node.metadata.name == "node1":
        return fw.Status()
    return fw.Status(fw.Code.UNSCHEDULABLE, [f'node "{node.metadata.name}" is not allowed'])


def node2_predicate_extender(fw: ModuleType, pod: client.V1Pod, node: client.V1Node) -> Any:
    """Success on node2 only (upstream: Node2PredicateExtender)."""
    if node.metadata.name == "node2":
        return fw.Status()
    return fw.Status(fw.Code.UNSCHEDULABLE, [f'node "{node.metadata.name}" is not allowed'])


# --- prioritizers ------------------------------------------------------------------------------


def error_prioritizer_extender(pod: client.V1Pod, nodes: list[client.V1Node]) -> list[Any]:
    """Always an error (upstream: ErrorPrioritizerExtender)."""
    raise Exception("some error")


def node1_prioritizer_extender(
    pod: client.V1Pod, nodes: list[client.V1Node]
) -> list[tuple[str, int]]:
    """10 for node1, 1 for the others (upstream: Node1PrioritizerExtender)."""
    return [(n.metadata.name, 10 if n.metadata.name == "node1" else 1) for n in nodes]


def node2_prioritizer_extender(
    pod: client.V1Pod, nodes: list[client.V1Node]
) -> list[tuple[str, int]]:
    """10 for node2, 1 for the others (upstream: Node2PrioritizerExtender)."""
    return [(n.metadata.name, 10 if n.metadata.name == "node2" else 1) for n in nodes]


@dataclass
class PriorityConfig:
    """A prioritizer and its weight inside the fake extender (upstream: PriorityConfig)."""

    function: PriorityFunc
    weight: int


class Node2PrioritizerPlugin:
    """A Score plugin: 100 for node2, 10 for the others (upstream: node2PrioritizerPlugin)."""

    NAME = "Node2Prioritizer"

    def __init__(self, fw: ModuleType) -> None:
        self.fw = fw

    def name(self) -> str:
        return self.NAME

    def score(self, state: Any, pod: client.V1Pod, node_name: str) -> tuple[int, Any]:
        return (100 if node_name == "node2" else 10), self.fw.Status()

    def score_extensions(self) -> None:
        return None


# --- FakeExtender ------------------------------------------------------------------------------


@dataclass
class FakeExtender:
    """An extender that runs its predicates and prioritizers in process (upstream:
    FakeExtender). It binds (IsBinder) and supports preemption, always."""

    fw: ModuleType
    predicates: list[FitPredicate] = field(default_factory=list)
    prioritizers: list[PriorityConfig] = field(default_factory=list)
    weight: int = 0
    node_cache_capable: bool = False
    filtered_nodes: list[client.V1Node] = field(default_factory=list)
    un_interested: bool = False
    ignorable: bool = False
    # Cached node information for the fake extender (upstream: CachedNodeNameToInfo).
    cached_node_name_to_info: dict[str, Any] = field(default_factory=dict)
    # Not upstream's: what the scheduler asked of it, for the tests to read.
    calls: list[str] = field(default_factory=list)
    bindings: list[client.V1Binding] = field(default_factory=list)

    def name(self) -> str:
        return "FakeExtender"

    def is_ignorable(self) -> bool:
        return self.ignorable

    def supports_preemption(self) -> bool:
        # Assume preempt verb is always defined.
        return True

    def process_preemption(
        self, pod: client.V1Pod, node_name_to_victims: dict[str, Any], node_infos: Any
    ) -> dict[str, Any]:
        """Upstream: ProcessPreemption. Keeps the nodes where the pod still fits by the
        extender's predicates, each with its victims and those the extender adds."""
        self.calls.append("preempt")
        # We don't want to change the original map (its Victims are shared, as upstream's).
        copy = dict(node_name_to_victims)
        for node_name, victims in list(copy.items()):
            # For test purpose, we just use node from parameters directly.
            node_info = node_infos.get(node_name)
            extender_victim_pods, extender_pdb_violations, fits = (
                self._select_victims_on_node_by_extender(pod, node_info.node())
            )
            # If it's unfit after extender's preemption, this node is unresolvable by
            # preemption overall: remove it from the potential preemption nodes.
            if not fits:
                del copy[node_name]
            else:
                # Append new victims to original victims.
                copy[node_name].pods = victims.pods + extender_victim_pods
                copy[node_name].num_pdb_violations = (
                    victims.num_pdb_violations + extender_pdb_violations
                )
        return copy

    def _select_victims_on_node_by_extender(
        self, pod: client.V1Pod, node: client.V1Node
    ) -> tuple[list[client.V1Pod], int, bool]:
        """More victims (if any), their PDB violations, and whether the pod fits after the
        extender's preemption (upstream: selectVictimsOnNodeByExtender). Raises an error the
        predicates return."""
        fw = self.fw
        # An extender that supports preemption but has no cached node info runs its filter
        # to make sure the scheduler's decision still stands.
        if not self.node_cache_capable:
            status = self._run_predicate(pod, node)
            if status.is_success():
                return [], 0, True
            if status.is_unschedulable():
                return [], 0, False
            raise status.as_error()

        # Otherwise the extender has cached node info: remove every lower-priority pod,
        # check the pod fits, then reprieve the victims one by one, most important first.
        prioritysort = step_module(step_of(fw), "plugins.prioritysort")
        preemption = step_module(step_of(fw), "preemption")
        node_info_copy = self.cached_node_name_to_info[node.metadata.name].clone()
        potential_victims = []
        pod_priority = prioritysort.pod_priority(pod)
        for p in list(node_info_copy.pods):
            if prioritysort.pod_priority(p) < pod_priority:
                potential_victims.append(p)
                node_info_copy.remove_pod(p)
        potential_victims.sort(key=preemption.importance)

        status = self._run_predicate(pod, node_info_copy.node())
        if status.is_unschedulable():
            return [], 0, False
        if not status.is_success():
            raise status.as_error()

        victims = []
        # TODO(harry): handle PDBs in the future (upstream's words).
        num_violating_victim = 0
        for p in potential_victims:
            node_info_copy.add_pod(p)
            if not self._run_predicate(pod, node_info_copy.node()).is_success():
                node_info_copy.remove_pod(p)
                victims.append(p)
        return victims, num_violating_victim, True

    def _run_predicate(self, pod: client.V1Pod, node: client.V1Node) -> Any:
        """The first predicate's failure, else Success (upstream: runPredicate)."""
        for predicate in self.predicates:
            status = predicate(self.fw, pod, node)
            if not status.is_success():
                return status
        return self.fw.Status()

    def filter(
        self, pod: client.V1Pod, nodes: list[client.V1Node]
    ) -> tuple[list[client.V1Node], dict[str, str], dict[str, str]]:
        """Upstream: Filter. Raises the error a predicate returns."""
        self.calls.append("filter")
        fw = self.fw
        filtered = []
        failed_nodes_map: dict[str, str] = {}
        failed_and_unresolvable_map: dict[str, str] = {}
        for node in nodes:
            status = self._run_predicate(pod, node)
            name = node.metadata.name
            if status.is_success():
                filtered.append(node)
            elif status.code == fw.Code.UNSCHEDULABLE:
                failed_nodes_map[name] = f'FakeExtender: node "{name}" failed'
            elif status.code == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                failed_and_unresolvable_map[name] = (
                    f'FakeExtender: node "{name}" failed and unresolvable'
                )
            else:
                raise status.as_error()
        self.filtered_nodes = filtered
        return filtered, failed_nodes_map, failed_and_unresolvable_map

    def prioritize(
        self, pod: client.V1Pod, nodes: list[client.V1Node]
    ) -> tuple[list[tuple[str, int]], int]:
        """Upstream: Prioritize. Each prioritizer's scores times its weight, summed per node;
        a prioritizer of weight 0 is skipped; an error is raised."""
        self.calls.append("prioritize")
        combined_scores: dict[str, int] = {}
        for prioritizer in self.prioritizers:
            if prioritizer.weight == 0:
                continue
            for host, score in prioritizer.function(pod, nodes):
                combined_scores[host] = combined_scores.get(host, 0) + score * prioritizer.weight
        return list(combined_scores.items()), self.weight

    def bind(self, binding: client.V1Binding) -> None:
        """Upstream: Bind. Refuses a node its last filter did not keep (if it filtered)."""
        self.calls.append("bind")
        self.bindings.append(binding)
        if self.filtered_nodes:
            names = [n.metadata.name for n in self.filtered_nodes]
            self.filtered_nodes = []
            if binding.target.name in names:
                return
            raise Exception(f"Node {binding.target.name} not in filtered nodes {names}")

    def is_binder(self) -> bool:
        return True

    def is_interested(self, pod: client.V1Pod) -> bool:
        return not self.un_interested


def step_of(fw: ModuleType) -> int:
    """The step number of a step's framework module (``steps.stepN.framework``)."""
    return int(fw.__name__.split(".")[1].removeprefix("step"))


# --- factory_test.go's fakeExtender ----------------------------------------------------------


@dataclass
class BindingExtender:
    """An extender that only binds, and only when it is a binder; interested in one pod, by
    name (upstream: fakeExtender of pkg/scheduler/factory_test.go)."""

    is_binder_: bool
    interested_pod_name: str
    ignorable: bool = False
    got_bind: bool = False

    def name(self) -> str:
        return "fakeExtender"

    def is_ignorable(self) -> bool:
        return self.ignorable

    def process_preemption(
        self, pod: client.V1Pod, node_name_to_victims: dict[str, Any], node_infos: Any
    ) -> dict[str, Any]:
        return {}

    def supports_preemption(self) -> bool:
        return False

    def filter(
        self, pod: client.V1Pod, nodes: list[client.V1Node]
    ) -> tuple[list[client.V1Node], dict[str, str], dict[str, str]]:
        return [], {}, {}

    def prioritize(
        self, pod: client.V1Pod, nodes: list[client.V1Node]
    ) -> tuple[list[tuple[str, int]], int]:
        return [], 0

    def bind(self, binding: client.V1Binding) -> None:
        if self.is_binder_:
            self.got_bind = True
            return
        raise Exception("not a binder")

    def is_binder(self) -> bool:
        return self.is_binder_

    def is_interested(self, pod: client.V1Pod) -> bool:
        return pod is not None and pod.metadata.name == self.interested_pod_name
