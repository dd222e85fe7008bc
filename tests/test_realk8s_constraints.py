"""Step 13 beside the real kube-scheduler: where each pod may go (opt-in, as test_bench's).

Upstream counterpart: kube-scheduler's default profile. Step 13 rebuilds, from v1.23, the
plugins that decide where a pod may go and which node it prefers: NodeAffinity (nodeSelector,
required and preferred node affinity), TaintToleration and NodeResourcesFit's and
NodeResourcesBalancedAllocation's scores, with the default profile's score weights. Given the
same nodes and pods, a pod must go to a node the real kube-scheduler could have picked (one of
its best-scored nodes), and where that best node is unique, to the same one. Two checks, each
on a fresh real control plane (etcd, kube-apiserver and kube-scheduler v1.36.2):

- the step's scenario (scenarios/step13.py) is played twice, once by step 13 and once by
  kube-scheduler (its pods ask for ``schedulerName: default-scheduler``): the same bindings,
  and the pod that fits nowhere stays pending with both, for the same reasons;
- a seeded stream of random pods (tolerations, nodeSelector, required and preferred node
  affinity, requests) on random nodes (labels, taints, sizes), each created twice: first as a
  twin for step 13, whose decision and per-node scores are recorded before the twin is deleted,
  then for kube-scheduler, which keeps its pod if it binds it. Both schedulers therefore decide
  each pod from the same cluster state: the pods kube-scheduler bound before it.

kube-scheduler v1.36 has more default plugins than step 13 (ImageLocality, InterPodAffinity,
PodTopologySpread, NodePorts, the volume plugins, ...). For bare pods (no owner, no Service, no
volumes, no ports, no pod affinity) on nodes that report no images, they pass every node and
score all nodes alike, so they change no choice. The pods here are built that way.

Waiting: both schedulers watch all pods on one watch each, so whatever was written to pods
before a pod is created is seen before that pod is: once step 13's twin is decided, it is
deleted, and only then is kube-scheduler's pod created; once that one is decided, the next twin
is. Nodes come on another watch: before the first pod, a probe pod per node (allowed on that
node only, tolerating everything) is bound by kube-scheduler and deleted, and step 13's node
informer is waited on.

Skipped unless the real control plane is built (``~/.cache/realk8s/bin/kube-apiserver``) and
``$REALK8S_RUN`` names an instance of one's own (with its ``*_PORT`` variables).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client, config

import scenarios.step13
from minisched import steps
from minisched.runner import new_scheduler, version_reached
from minisched.scenario import NODE_SELECTOR, Scenario
from scenarios.step13 import unschedulable
from tests.conftest import built_steps
from tests.test_permit import join_binding_threads
from tests.test_realk8s_resources import (  # noqa: F401  (the fixture)
    WaitingRecorder,
    real_control_plane_with_kube_scheduler,
)

TIMEOUT = 30.0
DEFAULT_SCHEDULER = "default-scheduler"

# The random stream: its seed, and how many pods it creates.
SEED = 1323
PODS = 25

# Nodes: names end in a letter, so the workshop's NodeNumber plugin scores none of them.
NODE_NAMES = [f"node-{c}" for c in "abcdef"]
DISKS = ["ssd", "hdd"]
ZONES = ["a", "b", "c"]
CORES = [4, 8, 12, 16, 24, 32]
# Taints the nodes may carry: (key, value); keys differ, so a node never has two taints with
# the same key and effect (the API server refuses that).
TAINTS = [("dedicated", "ml"), ("spot", "true"), ("gpu", "nvidia"), ("team", "web")]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
# Memory per CPU, the same on every node and in every pod's requests. Nodes and pods of other
# shapes are left out because NodeResourcesBalancedAllocation scores differently since v1.36
# (kubernetes#135573): v1.23 scores the node's balance with the pod, (1 - std) * 100; v1.36
# scores the change the pod makes to it, 50 + (50 + with - without) / 2, so 75 when it makes
# none. That alone can send a pod elsewhere: with pods of other shapes, a pod of 512Mi and no
# CPU could go to node-d (CPU 0.75 used, memory 0.23) or node-f (0.8, 0.13); v1.23 prefers
# node-d (73 against 66), v1.36 scores both 75 and NodeResourcesFit (48 against 46) sends it to
# node-f. With one shape, every node's CPU and memory fractions are equal, with or without the
# pod: BalancedAllocation gives every node 100 in v1.23 and 75 in v1.36, and decides nothing.
# It also leaves out best-effort pods, which v1.36's BalancedAllocation does not score at all
# (kubernetes#129138).
GI_PER_CPU = 4
# Label key -> the values a node may have.
LABEL_VALUES = {"disk": DISKS, "zone": ZONES, "cores": [str(c) for c in CORES]}

TOLERATE_ALL = client.V1Toleration(operator="Exists")


def bound(pod: Any) -> bool:
    return pod is not None and bool(pod.spec.node_name)


def decided(pod: Any) -> bool:
    """Bound, or marked PodScheduled=False: the scheduler has made up its mind."""
    return pod is not None and (bound(pod) or unschedulable(pod))


def scheduled_message(pod: Any) -> str:
    """The message of the pod's PodScheduled condition ("" if it has none)."""
    conditions = (pod.status and pod.status.conditions) or []
    return next((c.message or "" for c in conditions if c.type == "PodScheduled"), "")


def quiet(line: str) -> None:
    """A Scenario's ``say`` that prints nothing."""


# --- waiting until a scheduler has seen the nodes --------------------------------------------


def only_on(node: str) -> client.V1Affinity:
    """Required node affinity to the one node (matchFields metadata.name)."""
    term = client.V1NodeSelectorTerm(
        match_fields=[
            client.V1NodeSelectorRequirement(key="metadata.name", operator="In", values=[node])
        ]
    )
    return client.V1Affinity(
        node_affinity=client.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                node_selector_terms=[term]
            )
        )
    )


def default_scheduler_probe(api: client.ApiClient) -> Callable[..., bool]:
    """A ``Scenario(wait_for_cache=...)`` for kube-scheduler, whose informers this process
    cannot look into: for each node, a pod of kube-scheduler's allowed on that node only,
    tolerating every taint and requesting nothing. Bound, it shows kube-scheduler has the node
    with its status (without one, allocatable pods is 0 and no pod fits); the probes are then
    deleted, on the pod watch, before any pod of the test is created. In a namespace of its
    own, so that the scenario's pods are the only ones in its namespace."""

    def wait(
        kind: str,
        names: Iterable[str],
        present: bool = True,
        versions: Mapping[str, str] | None = None,
    ) -> bool:
        if kind != "node" or not present:
            return True
        names = list(names)
        with Scenario(
            api, "probe", timeout=TIMEOUT, say=quiet, scheduler_name=DEFAULT_SCHEDULER
        ) as p:
            for node in names:
                p.create_pod(f"probe-{node}", tolerations=[TOLERATE_ALL], affinity=only_on(node))
            pods = p.wait_for(lambda pods: all(bound(pods.get(f"probe-{n}")) for n in names))
            return all(bound(pods.get(f"probe-{n}")) for n in names)

    return wait


def informer_probe(sched: Any) -> Callable[..., bool]:
    """A ``Scenario(wait_for_cache=...)`` for the step's scheduler, run in this process: waits
    until its informers hold the named objects at the versions written (as the runner's)."""

    def wait(
        kind: str,
        names: Iterable[str],
        present: bool = True,
        versions: Mapping[str, str] | None = None,
    ) -> bool:
        informer = sched.node_informer if kind == "node" else sched.pod_informer
        wanted = set(names)

        def seen(items: dict[str, Any]) -> bool:
            held = {key.rsplit("/", 1)[-1]: obj for key, obj in items.items()}
            if not present:
                return not (wanted & held.keys())
            return wanted <= held.keys() and all(
                version_reached(held[n].metadata.resource_version, v)
                for n, v in (versions or {}).items()
                if n in wanted
            )

        return bool(informer.store.wait_until(seen, TIMEOUT))

    return wait


@contextmanager
def running(step: int, api: client.ApiClient, recorder: WaitingRecorder) -> Iterator[Any]:
    """Step ``step``'s scheduler, running in a thread for the duration."""
    sched = new_scheduler(
        steps.get(step), api, seed=1, recorder=recorder, node_selector=NODE_SELECTOR
    )
    thread = threading.Thread(target=sched.run, name="scheduler", daemon=True)
    thread.start()
    try:
        yield sched
    finally:
        sched.stop()
        thread.join(10)
        join_binding_threads()


# --- 1. the scenario, both ways ---------------------------------------------------------------


@pytest.mark.parametrize("step", built_steps(13), ids=lambda n: f"step{n}")
def test_the_scenario_binds_as_kube_scheduler_does(
    step: int,
    real_control_plane_with_kube_scheduler: str,  # noqa: F811
) -> None:
    api = config.new_client_from_config(config_file=real_control_plane_with_kube_scheduler)
    # kube-scheduler first, on nodes never seen before: the second run re-creates nodes of the
    # same names, which only step 13's informer can be asked about (by resourceVersion).
    with Scenario(
        api,
        "step13",
        timeout=TIMEOUT,
        say=quiet,
        scheduler_name=DEFAULT_SCHEDULER,
        wait_for_cache=default_scheduler_probe(api),
    ) as s:
        theirs = scenarios.step13.run(s)
        their_stray = s.core.read_namespaced_pod("stray", s.namespace)
    recorder = WaitingRecorder()
    with running(step, api, recorder) as sched:
        with Scenario(
            api, "step13", timeout=TIMEOUT, say=quiet, wait_for_cache=informer_probe(sched)
        ) as s:
            ours = scenarios.step13.run(s)
            our_stray = s.core.read_namespaced_pod("stray", s.namespace)

    assert ours == theirs, f"step {step}: {ours}\nkube-scheduler: {theirs}"
    assert all(node for name, node in ours.items() if name != "stray"), ours
    messages = (
        f"step {step}: {scheduled_message(our_stray)!r}\n"
        f"kube-scheduler: {scheduled_message(their_stray)!r}"
    )
    for pod in (our_stray, their_stray):
        assert not bound(pod) and unschedulable(pod), messages
        # v1.36 words the reasons differently ("untolerated taint(s)"; v1.23: "had taint
        # {...}, that the pod didn't tolerate"); both name the selector and the taint.
        message = scheduled_message(pod)
        assert "affinity/selector" in message and "taint" in message, messages


# --- 2. a seeded stream of twins --------------------------------------------------------------


def random_nodes(rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    """Nodes with random labels (some missing, for Exists/DoesNotExist), taints and sizes."""
    nodes = []
    for name in NODE_NAMES:
        labels = {"zone": rng.choice(ZONES)}
        if rng.random() < 0.8:
            labels["disk"] = rng.choice(DISKS)
        if rng.random() < 0.8:
            labels["cores"] = str(rng.choice(CORES))
        taints = None
        if rng.random() < 0.6:
            taints = [
                client.V1Taint(key=key, value=value, effect=rng.choice(EFFECTS))
                for key, value in rng.sample(TAINTS, rng.randint(1, 2))
            ]
        cpu = rng.choice([2, 4, 8, 16])
        options = {
            "cpu": str(cpu),
            "memory": f"{cpu * GI_PER_CPU}Gi",
            "labels": labels,
            "taints": taints,
        }
        nodes.append((name, options))
    return nodes


def random_toleration(rng: random.Random) -> client.V1Toleration:
    """One toleration of one of TAINTS's keys, Equal or Exists, with or without an effect; at
    times with a value no node has; rarely the one that tolerates everything."""
    if rng.random() < 0.05:
        return TOLERATE_ALL
    key, value = rng.choice(TAINTS)
    effect = rng.choice([None, *EFFECTS])
    if rng.random() < 0.5:
        return client.V1Toleration(key=key, operator="Exists", effect=effect)
    if rng.random() < 0.25:
        value = "other"
    return client.V1Toleration(key=key, operator="Equal", value=value, effect=effect)


def random_expression(rng: random.Random) -> client.V1NodeSelectorRequirement:
    operator = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    if operator in ("Gt", "Lt"):
        limit = str(rng.choice(CORES[:-1]))
        return client.V1NodeSelectorRequirement(key="cores", operator=operator, values=[limit])
    if operator in ("Exists", "DoesNotExist"):
        # Every node has a zone: a zone DoesNotExist would rule out all of them.
        key = rng.choice(["disk", "cores"])
        return client.V1NodeSelectorRequirement(key=key, operator=operator)
    key = rng.choice(list(LABEL_VALUES))
    values = rng.sample(LABEL_VALUES[key], rng.randint(1, 2))
    return client.V1NodeSelectorRequirement(key=key, operator=operator, values=values)


def random_term(rng: random.Random) -> client.V1NodeSelectorTerm:
    """One to two expressions, ANDed."""
    return client.V1NodeSelectorTerm(
        match_expressions=[random_expression(rng) for _ in range(rng.randint(1, 2))]
    )


def random_affinity(rng: random.Random) -> client.V1Affinity | None:
    """Required node affinity (one term, or two ORed), preferred terms with weights, both or
    neither."""
    na = client.V1NodeAffinity()
    if rng.random() < 0.45:
        na.required_during_scheduling_ignored_during_execution = client.V1NodeSelector(
            node_selector_terms=[random_term(rng) for _ in range(rng.choice([1, 1, 2]))]
        )
    if rng.random() < 0.5:
        na.preferred_during_scheduling_ignored_during_execution = [
            client.V1PreferredSchedulingTerm(
                weight=rng.randint(1, 100), preference=random_term(rng)
            )
            for _ in range(rng.randint(1, 3))
        ]
    if (
        na.required_during_scheduling_ignored_during_execution is None
        and na.preferred_during_scheduling_ignored_during_execution is None
    ):
        return None
    return client.V1Affinity(node_affinity=na)


def random_requests(rng: random.Random) -> dict[str, str]:
    """CPU and memory, always both and always GI_PER_CPU Gi of memory per CPU (see there):
    a quarter CPU and 1Gi, up to 3 CPU and 12Gi."""
    quarters = rng.choice([1, 2, 4, 6, 8, 12])
    return {"cpu": f"{250 * quarters}m", "memory": f"{quarters * GI_PER_CPU // 4}Gi"}


def random_pod(rng: random.Random) -> dict[str, Any]:
    """``Scenario.create_pod``'s keywords for one random pod."""
    spec: dict[str, Any] = {"requests": random_requests(rng)}
    if rng.random() < 0.6:
        spec["tolerations"] = [random_toleration(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.25:
        key = rng.choice(["disk", "zone"])
        spec["node_selector"] = {key: rng.choice(LABEL_VALUES[key])}
    affinity = random_affinity(rng)
    if affinity is not None:
        spec["affinity"] = affinity
    return spec


# --- summaries for the table -------------------------------------------------------------------


def show_toleration(t: client.V1Toleration) -> str:
    if not t.key:
        return "*Exists"
    text = f"{t.key}={t.value}" if t.operator == "Equal" else f"{t.key} Exists"
    return text + (f":{t.effect}" if t.effect else "")


def show_term(term: client.V1NodeSelectorTerm) -> str:
    return " & ".join(
        f"{e.key} {e.operator} {','.join(e.values)}" if e.values else f"{e.key} {e.operator}"
        for e in term.match_expressions
    )


def show_pod(spec: dict[str, Any]) -> str:
    parts = [" ".join(f"{k}={v}" for k, v in spec["requests"].items())]
    if spec.get("tolerations"):
        parts.append("tol[" + ", ".join(show_toleration(t) for t in spec["tolerations"]) + "]")
    if spec.get("node_selector"):
        parts.append("sel{" + ",".join(f"{k}={v}" for k, v in spec["node_selector"].items()) + "}")
    na = spec["affinity"].node_affinity if spec.get("affinity") else None
    if na and na.required_during_scheduling_ignored_during_execution:
        terms = na.required_during_scheduling_ignored_during_execution.node_selector_terms
        parts.append("req[" + " | ".join(f"({show_term(t)})" for t in terms) + "]")
    if na and na.preferred_during_scheduling_ignored_during_execution:
        prefs = na.preferred_during_scheduling_ignored_during_execution
        parts.append(
            "pref[" + ", ".join(f"{p.weight}:({show_term(p.preference)})" for p in prefs) + "]"
        )
    return " ".join(parts)


def show_node(name: str, options: dict[str, Any]) -> str:
    labels = ",".join(f"{k}={v}" for k, v in sorted(options["labels"].items()))
    taints = ",".join(f"{t.key}={t.value}:{t.effect}" for t in options["taints"] or [])
    return f"{name}: {options['cpu']} CPU {options['memory']} {{{labels}}} [{taints}]"


# --- what step 13 decided -----------------------------------------------------------------------


@dataclass
class Decision:
    """Step 13's last attempt for one pod: where it went (None: unschedulable) and each
    scored node's weighted score per plugin."""

    node: str | None = None
    scores: dict[str, dict[str, int]] = field(default_factory=dict)

    def totals(self) -> dict[str, int]:
        return {node: sum(by_plugin.values()) for node, by_plugin in self.scores.items()}

    def best(self) -> list[str]:
        """The best-scored nodes. A pod that fits one node only is not scored (upstream:
        "only one node is feasible, skip scoring"): that node is the best."""
        if not self.scores and self.node is not None:
            return [self.node]
        totals = self.totals()
        top = max(totals.values(), default=0)
        return sorted(node for node, total in totals.items() if total == top)

    def show(self) -> str:
        totals = sorted(self.totals().items(), key=lambda item: (-item[1], item[0]))
        return " ".join(f"{node}={total}" for node, total in totals)

    def show_plugins(self) -> str:
        return "; ".join(
            f"{node}: " + " ".join(f"{p}={s}" for p, s in sorted(by_plugin.items()))
            for node, by_plugin in sorted(self.scores.items())
        )


def decision(events: list[tuple[str, dict[str, Any]]], key: str) -> Decision:
    """The scores of the pod's last attempt (each attempt starts afresh) and its selected
    node, from the recorder's events."""
    found = Decision()
    for event, fields in events:
        if fields.get("pod") != key:
            continue
        if event == "attempt":
            found = Decision()
        elif event == "score":
            found.scores.setdefault(fields["node"], {})[fields["plugin"]] = fields["score"]
        elif event == "selected":
            found.node = fields["node"]
    return found


@dataclass
class Row:
    pod: str
    spec: str
    theirs: str | None
    ours: Decision
    their_message: str = ""
    our_message: str = ""

    def problem(self) -> str | None:
        """What is wrong with this pair of decisions, or None."""
        if (self.theirs is None) != (self.ours.node is None):
            return "one bound, the other did not"
        if self.theirs is None:
            return None
        best = self.ours.best()
        if self.ours.node not in best:
            return "step 13 did not pick one of its best nodes"
        if self.theirs not in best:
            return "kube-scheduler's node is not among step 13's best"
        if len(best) == 1 and self.theirs != self.ours.node:
            return "step 13's best is unique and differs"
        return None

    def show(self) -> str:
        theirs = self.theirs or f"pending ({self.their_message})"
        ours = self.ours.node or f"pending ({self.our_message})"
        return (
            f"{self.pod}: {self.problem()}\n"
            f"    spec:           {self.spec}\n"
            f"    kube-scheduler: {theirs}\n"
            f"    step 13:        {ours}\n"
            f"    step 13 totals: {self.ours.show()}\n"
            f"    per plugin:     {self.ours.show_plugins()}"
        )


@pytest.mark.parametrize("seed", [SEED], ids=lambda n: f"seed{n}")
@pytest.mark.parametrize("step", built_steps(13), ids=lambda n: f"step{n}")
def test_random_twins_go_where_kube_scheduler_sends_them(
    step: int,
    seed: int,
    real_control_plane_with_kube_scheduler: str,  # noqa: F811
) -> None:
    rng = random.Random(seed)
    nodes = random_nodes(rng)
    specs = [random_pod(rng) for _ in range(PODS)]
    api = config.new_client_from_config(config_file=real_control_plane_with_kube_scheduler)
    recorder = WaitingRecorder()
    rows: list[Row] = []
    with (
        running(step, api, recorder) as sched,
        Scenario(
            api, "twins", timeout=TIMEOUT, say=quiet, wait_for_cache=informer_probe(sched)
        ) as ours,
    ):
        # kube-scheduler's pods, in the same namespace.
        theirs = Scenario(
            api, "twins", timeout=TIMEOUT, say=quiet, scheduler_name=DEFAULT_SCHEDULER
        )
        theirs.namespace = ours.namespace
        ours.create_nodes(nodes, "scenario: created the random nodes")
        names = [name for name, _ in nodes]
        ours.scheduler_has_seen("node", names)
        step_has_seen = informer_probe(sched)
        assert default_scheduler_probe(api)("node", names), "kube-scheduler never saw the nodes"

        for i, spec in enumerate(specs):
            our_pod, their_pod = f"p{i:02d}-ms", f"p{i:02d}-ks"
            # Step 13's twin first, on the cluster as it is; decided, it is deleted.
            ours.create_pod(our_pod, **spec)
            pods = ours.wait_for(lambda pods, name=our_pod: decided(pods.get(name)))
            our = pods.get(our_pod)
            assert decided(our), f"step {step} did not decide {our_pod}"
            ours_decided = decision(list(recorder.events), f"{ours.namespace}/{our_pod}")
            assert ours_decided.node == our.spec.node_name, (
                f"{our_pod} bound to {our.spec.node_name}, selected {ours_decided.node}"
            )
            ours.delete_pod(our_pod)
            # Then kube-scheduler's pod: its pod watch brings the twin's deletion first, so it
            # decides from the same state. Bound, it stays, for both schedulers' next pods.
            theirs.create_pod(their_pod, **spec)
            pods = ours.wait_for(lambda pods, name=their_pod: decided(pods.get(name)))
            their = pods.get(their_pod)
            assert decided(their), f"kube-scheduler did not decide {their_pod}"
            rows.append(
                Row(
                    pod=f"p{i:02d}",
                    spec=show_pod(spec),
                    theirs=their.spec.node_name,
                    ours=ours_decided,
                    their_message=scheduled_message(their),
                    our_message=scheduled_message(our),
                )
            )
            if their.spec.node_name:
                # Step 13 counts it before its next twin: one watch brings both in order;
                # waiting here says so.
                version = their.metadata.resource_version
                assert step_has_seen("pod", [their_pod], versions={their_pod: version})
            else:
                theirs.delete_pod(their_pod)  # no room taken: it only keeps kube-scheduler busy

    both_bound = [r for r in rows if r.theirs and r.ours.node]
    one_fit = [r for r in both_bound if not r.ours.scores]
    unique = [r for r in both_bound if r.ours.scores and len(r.ours.best()) == 1]
    tied = [r for r in both_bound if len(r.ours.best()) > 1]
    mismatches = [r for r in rows if r.problem()]
    print(
        f"\nseed {seed}: {len(rows)} twins: {len(both_bound)} bound by both ({len(one_fit)} on the"
        f" only node that fit, {len(unique)} with a unique best of several, {len(tied)} tied),"
        f" {sum(1 for r in rows if not r.theirs and not r.ours.node)} pending with both,"
        f" {len(mismatches)} mismatches"
    )
    assert not mismatches, (
        f"seed {seed}: {len(mismatches)} of {len(rows)} pods differ\nnodes:\n"
        + "\n".join(f"  {show_node(name, options)}" for name, options in nodes)
        + "\n"
        + "\n".join(r.show() for r in mismatches)
        + "\nevery pod, in order (kube-scheduler's stay where they went):\n"
        + "\n".join(f"  {r.pod}: {r.theirs} / {r.ours.node}  {r.spec}" for r in rows)
    )
    # The stream must have compared something: a choice among several nodes, and a failure.
    assert unique and any(not r.theirs for r in rows), "\n".join(r.show() for r in rows)
