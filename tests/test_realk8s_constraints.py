"""Step 13 beside the real kube-scheduler: where each pod may go (opt-in, as test_bench's).

Upstream counterpart: kube-scheduler's default profile. Step 13 rebuilds, from v1.23.10, the
plugins that decide where a pod may go and which node it prefers: NodeAffinity (nodeSelector,
required and preferred node affinity), TaintToleration and NodeResourcesFit's and
NodeResourcesBalancedAllocation's scores, with v1.23's default score weights (v1beta3's:
TaintToleration 3, NodeAffinity 2, the two resource scores 1). Given the same nodes and pods, a
pod must go to a node the real kube-scheduler could have picked (one of its best-scored nodes),
and where that best node is unique, to the same one.

Each check runs on a fresh real control plane (etcd and kube-apiserver v1.36.2), against one of
two references, each in a variant of its own:

- ``v1.36``: the control plane's own kube-scheduler v1.36.2 (profile ``default-scheduler``).
  Its NodeResourcesBalancedAllocation scores differently (kubernetes#135573, see GI_PER_CPU)
  and skips best-effort pods (kubernetes#129138), so its random stream is restricted to the
  shapes on which BalancedAllocation decides nothing: every node has, and every pod requests,
  GI_PER_CPU Gi of memory per CPU. Only the choices are compared: its scores are not known.
- ``v1.23``: kube-scheduler v1.23.10 itself (``$KUBE_SCHEDULER_V1_23``, by default
  ``~/.cache/realk8s/v1.23/kube-scheduler``, built outside the project), started here with a
  v1beta3 configuration of one default profile, ``kube-scheduler-v1-23``: the version step 13
  ports, so its stream is the full one (nodes and pods of any CPU-to-memory ratio, pods with
  only CPU or only memory requests, best-effort pods), and BalancedAllocation is compared too.
  It logs at ``-v=10``, where it writes each node's weighted score per plugin: step 13's must
  be the same numbers, node for node, and its other plugins must score every node alike.
  The v1.36 API server no longer serves CSIStorageCapacity v1beta1, whose informer v1.23 would
  wait on for ever: it runs with ``--feature-gates=CSIStorageCapacity=false``. Skipped (this
  variant only) when the binary is missing.

Two checks, each against both references:

- the step's scenario (scenarios/step13.py) is played twice, once by step 13 and once by
  kube-scheduler (its pods ask for the reference's schedulerName): the same bindings, and the
  pod that fits nowhere stays pending with both, for the same reasons;
- a seeded stream of random pods (tolerations, nodeSelector, required and preferred node
  affinity with every operator, requests) on random nodes (labels, NoSchedule, PreferNoSchedule
  and NoExecute taints, sizes), each created twice: first as a twin for step 13, whose decision
  and per-node scores are recorded before the twin is deleted, then for kube-scheduler, which
  keeps its pod if it binds it. Both schedulers therefore decide each pod from the same cluster
  state: the pods kube-scheduler bound before it.

kube-scheduler has more default plugins than step 13 (ImageLocality, InterPodAffinity,
PodTopologySpread, NodePorts, the volume plugins, ...). For bare pods (no owner, no Service, no
volumes, no ports, no pod affinity) on nodes that report no images, they pass every node and
score all nodes alike, so they change no choice. The pods here are built that way.

Waiting: both schedulers watch all pods on one watch each, so whatever was written to pods
before a pod is created is seen before that pod is: once step 13's twin is decided, it is
deleted, and only then is kube-scheduler's pod created; once that one is decided, the next twin
is. Nodes come on another watch: before the first pod, a probe pod per node (allowed on that
node only, tolerating everything) is bound by kube-scheduler and deleted, and step 13's node
informer is waited on. kube-scheduler v1.23 is waited on through its ``/healthz`` first. Its
cache handles a pod's deletion on a goroutine of its own, not the one that queues its pods: its
log is read for the deletion of each bound twin (and of the probes) before its pod is created
(tests/realk8s_util.py, KubeSchedulerLog); v1.36 here logs too little for that.

Skipped unless the real control plane is built (``~/.cache/realk8s/bin/kube-apiserver``) and
``$REALK8S_RUN`` names an instance of one's own (with its ``*_PORT`` variables). v1.23's log is
in the test's tmp_path (``kube-scheduler-v1.23.log``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kubernetes import config

import scenarios.step13
from minisched.scenario import Scenario
from scenarios.step13 import unschedulable
from tests.conftest import built_steps
from tests.realk8s_util import (
    BALANCED_ALLOCATION,
    DEFAULT_SCHEDULER,
    TIMEOUT,
    V1_23_BINARY,
    V1_23_SCHEDULER,
    Reference,
    bound,
    informer_probe,
    kube_scheduler_probe,
    play_twins,
    quiet,
    random_nodes,
    random_pod,
    running,
    scheduled_message,
    show_node,
    v1_23_kube_scheduler,
)
from tests.test_bench import real_control_plane  # noqa: F401  (a fixture)
from tests.test_realk8s_resources import (  # noqa: F401  (the fixture)
    WaitingRecorder,
    real_control_plane_with_kube_scheduler,
)

# The random streams: their seeds, and how many pods each creates.
SEED = 1323
PODS = 25
V1_23_SEED = 2310
V1_23_PODS = 40


# --- the references: kube-scheduler v1.36 (the control plane's), v1.23 (started here) ----------


REFERENCES = {
    "v1.36": Reference("v1.36", DEFAULT_SCHEDULER, any_shape=False),
    "v1.23": Reference("v1.23", V1_23_SCHEDULER, any_shape=True),
}


@pytest.fixture
def kube_scheduler(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Reference]:
    """The reference ``request.param`` names, running on a fresh real control plane: v1.36
    is the control plane's own kube-scheduler, v1.23 is started here (skipped without it)."""
    reference = REFERENCES[request.param]
    if reference.version == "v1.36":
        kubeconfig = request.getfixturevalue("real_control_plane_with_kube_scheduler")
        yield replace(reference, kubeconfig=kubeconfig)
        return
    if not os.access(V1_23_BINARY, os.X_OK):
        pytest.skip(f"kube-scheduler v1.23 not built on this machine ({V1_23_BINARY})")
    kubeconfig = request.getfixturevalue("real_control_plane")
    with v1_23_kube_scheduler(kubeconfig, tmp_path) as log:
        yield replace(reference, kubeconfig=kubeconfig, log=log)


# --- 1. the scenario, both ways ---------------------------------------------------------------


@pytest.mark.parametrize("kube_scheduler", list(REFERENCES), indirect=True)
@pytest.mark.parametrize("step", built_steps(13), ids=lambda n: f"step{n}")
def test_the_scenario_binds_as_kube_scheduler_does(step: int, kube_scheduler: Reference) -> None:
    reference = kube_scheduler
    api = config.new_client_from_config(config_file=reference.kubeconfig)
    # kube-scheduler first, on nodes never seen before: the second run re-creates nodes of the
    # same names, which only step 13's informer can be asked about (by resourceVersion).
    with Scenario(
        api,
        "step13",
        timeout=TIMEOUT,
        say=quiet,
        scheduler_name=reference.scheduler_name,
        wait_for_cache=kube_scheduler_probe(api, reference.scheduler_name),
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

    kube = f"kube-scheduler {reference.version}"
    assert ours == theirs, f"step {step}: {ours}\n{kube}: {theirs}"
    assert all(node for name, node in ours.items() if name != "stray"), ours
    messages = (
        f"step {step}: {scheduled_message(our_stray)!r}\n{kube}: {scheduled_message(their_stray)!r}"
    )
    for pod in (our_stray, their_stray):
        assert not bound(pod) and unschedulable(pod), messages
        # v1.36 words the reasons differently ("untolerated taint(s)"; v1.23: "had taint
        # {...}, that the pod didn't tolerate"); both name the selector and the taint.
        message = scheduled_message(pod)
        assert "affinity/selector" in message and "taint" in message, messages
    if reference.version == "v1.23":  # the version step 13 ports: word for word
        assert scheduled_message(our_stray) == scheduled_message(their_stray), messages


@pytest.mark.parametrize(
    ("kube_scheduler", "seed", "pods"),
    [
        pytest.param("v1.36", SEED, PODS, id=f"v1.36-seed{SEED}"),
        pytest.param("v1.23", V1_23_SEED, V1_23_PODS, id=f"v1.23-seed{V1_23_SEED}"),
    ],
    indirect=["kube_scheduler"],
)
@pytest.mark.parametrize("step", built_steps(13), ids=lambda n: f"step{n}")
def test_random_twins_go_where_kube_scheduler_sends_them(
    step: int, kube_scheduler: Reference, seed: int, pods: int
) -> None:
    reference = kube_scheduler
    kube = f"kube-scheduler {reference.version}"
    rng = random.Random(seed)
    nodes = random_nodes(rng, reference.any_shape)
    specs = [random_pod(rng, reference.any_shape) for _ in range(pods)]
    api = config.new_client_from_config(config_file=reference.kubeconfig)
    recorder = WaitingRecorder()
    with running(step, api, recorder) as sched:
        rows = play_twins(step, api, sched, recorder, reference, nodes, specs)
    both_bound = [r for r in rows if r.theirs and r.ours.node]
    one_fit = [r for r in both_bound if not r.ours.scores]
    unique = [r for r in both_bound if r.ours.scores and len(r.ours.best()) == 1]
    tied = [r for r in both_bound if len(r.ours.best()) > 1]
    best_effort = [r for r, s in zip(rows, specs, strict=True) if not s["requests"] and r.theirs]
    # Pods whose scores were compared, and those where BalancedAllocation told nodes apart.
    scored = [r for r in both_bound if r.their_scores]
    balanced = [
        r
        for r in scored
        if len({by_plugin[BALANCED_ALLOCATION] for by_plugin in r.ours.scores.values()}) > 1
    ]
    mismatches = [r for r in rows if r.problem()]
    compared = (
        f"; scores compared for {len(scored)} ({len(balanced)} told apart by BalancedAllocation)"
        if reference.log is not None
        else ""
    )
    print(
        f"\n{kube}, seed {seed}: {len(rows)} twins: {len(both_bound)} bound by both"
        f" ({len(one_fit)} on the only node that fit, {len(unique)} with a unique best of"
        f" several, {len(tied)} tied; {len(best_effort)} best-effort{compared}),"
        f" {sum(1 for r in rows if not r.theirs and not r.ours.node)} pending with both,"
        f" {len(mismatches)} mismatches"
    )
    log = f"\n{kube}'s log: {reference.log}" if reference.log else ""
    assert not mismatches, (
        f"{kube}, seed {seed}: {len(mismatches)} of {len(rows)} pods differ\nnodes:\n"
        + "\n".join(f"  {show_node(name, options)}" for name, options in nodes)
        + "\n"
        + "\n".join(r.show() for r in mismatches)
        + f"\nevery pod, in order ({kube}'s stay where they went):\n"
        + "\n".join(f"  {r.pod}: {r.theirs} / {r.ours.node}  {r.spec}" for r in rows)
        + log
    )
    # The stream must have compared something: a choice among several nodes, and a failure;
    # with every shape, a best-effort pod bound; with v1.23's scores, BalancedAllocation's.
    table = "\n".join(r.show() for r in rows)
    assert unique and any(not r.theirs for r in rows), table
    assert best_effort or not reference.any_shape, table
    assert balanced or reference.log is None, table
