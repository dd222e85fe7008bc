"""Step 14 beside the real kube-scheduler, both given the same configuration file (opt-in, as
test_realk8s_constraints.py).

Upstream counterpart: kube-scheduler's ``--config``. Step 14 reads a KubeSchedulerConfiguration
as v1.23.10 does (decoded, defaulted, validated) and builds each profile's framework from it:
the plugins it enables and disables, at each extension point and at multiPoint, their weights
and their args. Given the same file, step 14 must place a stream of pods as the real
kube-scheduler does wherever kube-scheduler's choice is unique, and score each node as it does.
Three files, each of one profile:

- ``least-allocated``: every default (NodeResourcesFit scores LeastAllocated);
- ``most-allocated``: NodeResourcesFit's args ``scoringStrategy: {type: MostAllocated}``;
- ``no-taint-score``: TaintToleration disabled at Score (``plugins.score.disabled``), so a
  PreferNoSchedule taint no longer steers a pod; it still filters, through multiPoint. A
  disabled Score plugin shows on the random stream of both references, which a disabled
  NodeResourcesBalancedAllocation would not (it decides nothing on v1.36's stream, below).

Each runs on a fresh real control plane (etcd and kube-apiserver v1.36.2), against two
references, each reading the file in a version of its own:

- ``v1.36``: the control plane's own kube-scheduler v1.36.2, given the file as
  ``apiVersion: kubescheduler.config.k8s.io/v1`` through up.sh's ``SCHEDULER_CONFIG`` (up.sh
  fills in clientConnection.kubeconfig). Step 14 reads that same v1 file. Its random stream is
  test_realk8s_constraints.py's restricted one (every node has, and every pod requests,
  GI_PER_CPU Gi of memory per CPU), on which v1.36's NodeResourcesBalancedAllocation, which
  scores differently since v1.36 (kubernetes#135573), decides nothing.
- ``v1.23``: kube-scheduler v1.23.10 itself (``$KUBE_SCHEDULER_V1_23``, by default
  ``~/.cache/realk8s/v1.23/kube-scheduler``), started here with the file as v1beta3, which
  step 14 reads too; the full stream (any shape, best-effort pods). Skipped (this reference
  only) when the binary is missing.

The two files differ from step 14's only in the profile's schedulerName: step 14's profile is
``side-by-side``, the reference's ``kube-scheduler-v1-36`` or ``kube-scheduler-v1-23``. Each
random pod is created twice, as test_realk8s_constraints.py does (``play_twins``): first as
step 14's twin (schedulerName ``side-by-side``), decided, recorded and deleted, then as the
reference's pod, which stays where it binds. The twins differ only in their schedulerName.
Before the reference's pod is created, its log must show its cache let the bound twin go
(``KubeSchedulerLog``: its cache and its queue handle pod events on goroutines of their own).

Both references run at ``-v=10``, where they log each node's weighted score per plugin. The
scores of TaintToleration, NodeAffinity and NodeResourcesFit (and, against v1.23,
NodeResourcesBalancedAllocation) must be the same numbers, node for node, as step 14's; the
reference's other Score plugins must score every node alike. This is what shows the file's
args (MostAllocated's scores) and its disabled plugin (no TaintToleration score on either
side) were applied, beyond the choices. v1.36 does not run a Score plugin whose PreScore says
Skip (NodeAffinity, for a pod without preferred node affinity): such a plugin, absent from all
of its nodes, counts as 0 on each.

Skipped unless the real control plane is built (``~/.cache/realk8s/bin/kube-apiserver``) and
``$REALK8S_RUN`` names an instance of one's own (with its ``*_PORT`` variables). The files and
v1.23's log are in the test's tmp_path.
"""

from __future__ import annotations

import importlib
import json
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import config

from minisched import steps
from tests.conftest import built_steps
from tests.realk8s_util import (
    BALANCED_ALLOCATION,
    SHARED_SCORE_PLUGINS,
    V1_23_BINARY,
    V1_23_SCHEDULER,
    Reference,
    Row,
    play_twins,
    random_nodes,
    random_pod,
    real_control_plane,
    require_real_control_plane,
    running,
    scheduler_log,
    show_node,
    v1_23_kube_scheduler,
)
from tests.test_realk8s_resources import WaitingRecorder

# Step 14's profile: the schedulerName of its twins.
OURS = "side-by-side"
V1_36_SCHEDULER = "kube-scheduler-v1-36"
GROUP = "kubescheduler.config.k8s.io"
TAINT_TOLERATION = "TaintToleration"
FIT = "NodeResourcesFit"

# Each file's profile, after its schedulerName.
VARIANTS: dict[str, str] = {
    "least-allocated": "",
    "most-allocated": (
        "  pluginConfig:\n"
        f"  - name: {FIT}\n"
        "    args:\n"
        "      scoringStrategy:\n"
        "        type: MostAllocated\n"
    ),
    "no-taint-score": (
        f"  plugins:\n    score:\n      disabled:\n      - name: {TAINT_TOLERATION}\n"
    ),
}

# The random streams: their seeds, and how many pods each creates (the same for every file).
SEED = 1436
PODS = 25
V1_23_SEED = 2317
V1_23_PODS = 40


def configuration(version: str, scheduler_name: str, variant: str) -> str:
    """The file ``variant`` in ``version`` (v1, v1beta3), its one profile ``scheduler_name``;
    no leader election (up.sh's kube-scheduler runs with ``--leader-elect=false``)."""
    return (
        f"apiVersion: {GROUP}/{version}\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: false\n"
        "profiles:\n"
        f"- schedulerName: {scheduler_name}\n" + VARIANTS[variant]
    )


@contextmanager
def reference_scheduler(version: str, variant: str, tmp_path: Path) -> Iterator[Reference]:
    """kube-scheduler ``version`` running with the file ``variant`` on a fresh real control
    plane, for the duration; skipped (v1.23) when its binary is missing."""
    if version == "v1.36":
        require_real_control_plane()
        file = tmp_path / "kube-scheduler-v1.36.yaml"
        file.write_text(configuration("v1", V1_36_SCHEDULER, variant))
        with real_control_plane(
            scheduler=True, scheduler_config=file, scheduler_args=["--v=10"]
        ) as kubeconfig:
            yield Reference(
                "v1.36",
                V1_36_SCHEDULER,
                any_shape=False,
                kubeconfig=kubeconfig,
                log=scheduler_log(),
            )
        return
    if not os.access(V1_23_BINARY, os.X_OK):
        pytest.skip(f"kube-scheduler v1.23 not built on this machine ({V1_23_BINARY})")

    def v1beta3(kubeconfig: Path) -> str:
        text = configuration("v1beta3", V1_23_SCHEDULER, variant)
        return text + f"clientConnection: {{kubeconfig: {json.dumps(str(kubeconfig))}}}\n"

    with (
        real_control_plane() as kubeconfig,
        v1_23_kube_scheduler(kubeconfig, tmp_path, config=v1beta3) as log,
    ):
        yield Reference("v1.23", V1_23_SCHEDULER, any_shape=True, kubeconfig=kubeconfig, log=log)


def count_skipped_as_zero(row: Row) -> None:
    """v1.36's scores as v1.23 would log them: a shared Score plugin it did not run (its
    PreScore said Skip: absent from every node) scores 0 on each node, where step 14 ran it."""
    theirs = row.their_scores
    if not theirs:
        return
    ran = {p for by_plugin in theirs.values() for p in by_plugin}
    ours = {p for by_plugin in row.ours.scores.values() for p in by_plugin}
    for plugin in (ours & row.shared) - ran:
        for by_plugin in theirs.values():
            by_plugin[plugin] = 0


def tells_apart(row: Row, plugin: str) -> bool:
    """Whether the step's ``plugin`` scored the row's nodes differently."""
    return len({by_plugin.get(plugin) for by_plugin in row.ours.scores.values()}) > 1


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize(
    ("version", "seed", "pods"),
    [
        pytest.param("v1.36", SEED, PODS, id=f"v1.36-seed{SEED}"),
        pytest.param("v1.23", V1_23_SEED, V1_23_PODS, id=f"v1.23-seed{V1_23_SEED}"),
    ],
)
@pytest.mark.parametrize("step", built_steps(14), ids=lambda n: f"step{n}")
def test_twins_go_where_kube_scheduler_sends_them_given_the_same_file(
    step: int, version: str, seed: int, pods: int, variant: str, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    with reference_scheduler(version, variant, tmp_path) as reference:
        kube = f"kube-scheduler {reference.version}"
        # Step 14 reads the reference's file, its profile named for its own twins.
        ours_file = tmp_path / f"step{step}.yaml"
        ours_file.write_text(
            configuration("v1" if version == "v1.36" else "v1beta3", OURS, variant)
        )
        module = importlib.import_module(f"{steps.get(step).package}.config")
        cfg = module.load_config_from_file(str(ours_file))
        nodes = random_nodes(rng, reference.any_shape)
        specs = [random_pod(rng, reference.any_shape) for _ in range(pods)]
        # v1.36's BalancedAllocation scores otherwise (kubernetes#135573): on its stream it
        # must score every node alike, as kube-scheduler's other plugins.
        shared = SHARED_SCORE_PLUGINS - ({BALANCED_ALLOCATION} if version == "v1.36" else set())
        api = config.new_client_from_config(config_file=reference.kubeconfig)
        recorder = WaitingRecorder()
        with running(step, api, recorder, config=cfg) as sched:
            assert list(sched.profiles) == [OURS]
            rows = play_twins(
                step,
                api,
                sched,
                recorder,
                reference,
                nodes,
                specs,
                scheduler_name=OURS,
                shared=frozenset(shared),
            )
    if version == "v1.36":
        for row in rows:
            count_skipped_as_zero(row)

    both_bound = [r for r in rows if r.theirs and r.ours.node]
    one_fit = [r for r in both_bound if not r.ours.scores]
    unique = [r for r in both_bound if r.ours.scores and len(r.ours.best()) == 1]
    tied = [r for r in both_bound if len(r.ours.best()) > 1]
    scored = [r for r in both_bound if r.their_scores]
    fit_apart = [r for r in scored if tells_apart(r, FIT)]
    mismatches = [r for r in rows if r.problem()]
    print(
        f"\n{variant}, {kube}, seed {seed}: {len(rows)} twins: {len(both_bound)} bound by both"
        f" ({len(one_fit)} on the only node that fit, {len(unique)} with a unique best of"
        f" several, {len(tied)} tied; scores compared for {len(scored)}, {len(fit_apart)} told"
        f" apart by {FIT}), {sum(1 for r in rows if not r.theirs and not r.ours.node)} pending"
        f" with both, {len(mismatches)} mismatches"
    )
    assert not mismatches, (
        f"{variant}, {kube}, seed {seed}: {len(mismatches)} of {len(rows)} pods differ\n"
        f"step {step}'s file:\n{ours_file.read_text()}nodes:\n"
        + "\n".join(f"  {show_node(name, options)}" for name, options in nodes)
        + "\n"
        + "\n".join(r.show() for r in mismatches)
        + f"\nevery pod, in order ({kube}'s stay where they went):\n"
        + "\n".join(f"  {r.pod}: {r.theirs} / {r.ours.node}  {r.spec}" for r in rows)
    )
    # The stream must have compared something: a choice among several nodes, and the scores
    # of the plugin the file configures (Fit's strategy; TaintToleration's absence).
    table = "\n".join(r.show() for r in rows)
    assert unique and fit_apart, table
    ran = {p for r in rows for by_plugin in r.ours.scores.values() for p in by_plugin}
    logged = {p for r in scored for by_plugin in (r.their_scores or {}).values() for p in by_plugin}
    if variant == "no-taint-score":
        assert TAINT_TOLERATION not in ran | logged, table
    else:
        assert TAINT_TOLERATION in ran & logged, table
