"""Step 10 on a real control plane, beside the real kube-scheduler (opt-in, as test_bench's).

The default scheduler binds a pod of its own to the only node; step 10's cache counts that pod
(its informer sees every assigned pod, whoever bound it), so its own pod, which no longer fits
there, waits with upstream's message until a node with room arrives. Skipped unless the real
control plane is built (``~/.cache/realk8s/bin/kube-apiserver``) and ``$REALK8S_RUN`` names an
instance of one's own (with its ``*_PORT`` variables).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from minisched import steps
from minisched.runner import new_scheduler
from minisched.scenario import NODE_SELECTOR, Scenario
from tests.conftest import built_steps
from tests.test_bench import REALK8S, realk8s_scripts
from tests.test_permit import join_binding_threads

TIMEOUT = 30.0


class WaitingRecorder:
    """Keeps every recorded event and lets a test wait for one; ``_changed`` guards
    ``events``."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.events: list[tuple[str, dict[str, Any]]] = []

    def record(self, event: str, /, **fields: Any) -> None:
        with self._changed:
            self.events.append((event, fields))
            self._changed.notify_all()

    def wants_detail(self, pod: str) -> bool:
        return True

    def wait_for(self, event: str, pod: str, timeout: float = TIMEOUT) -> dict[str, Any] | None:
        def found() -> dict[str, Any] | None:
            return next((f for e, f in self.events if e == event and f.get("pod") == pod), None)

        with self._changed:
            self._changed.wait_for(lambda: found() is not None, timeout)
            return found()


@pytest.fixture
def real_control_plane_with_kube_scheduler() -> Iterator[str]:
    scripts = realk8s_scripts()
    if not os.access(REALK8S / "bin" / "kube-apiserver", os.X_OK) or scripts is None:
        pytest.skip("real control plane not built on this machine (shared/realk8s)")
    if not os.environ.get("REALK8S_RUN"):
        pytest.skip("opt-in: set REALK8S_RUN and its *_PORT variables to an instance of your own")
    up = subprocess.run(
        [str(scripts / "up.sh"), "--scheduler", "--fresh"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert up.returncode == 0, up.stderr[-2000:]
    yield up.stdout.strip().splitlines()[-1]
    subprocess.run([str(scripts / "down.sh"), "--wipe"], capture_output=True, timeout=60)


def bound(pod: Any) -> bool:
    return bool(pod.spec.node_name)


@pytest.mark.parametrize("step", built_steps(10), ids=lambda n: f"step{n}")
def test_the_cache_counts_the_pods_the_default_scheduler_bound(
    step: int, real_control_plane_with_kube_scheduler: str
) -> None:
    api = config.new_client_from_config(config_file=real_control_plane_with_kube_scheduler)
    core = client.CoreV1Api(api)
    recorder = WaitingRecorder()
    sched = new_scheduler(
        steps.get(step), api, seed=1, recorder=recorder, node_selector=NODE_SELECTOR
    )
    thread = threading.Thread(target=sched.run, name="scheduler", daemon=True)
    with Scenario(api, "realk8s", timeout=TIMEOUT) as s:
        s.create_node("node-a", cpu="2", memory="4Gi")
        # A pod of the default scheduler's, with 1.5 of node-a's 2 CPU.
        theirs = client.V1Pod(
            metadata=client.V1ObjectMeta(name="theirs"),
            spec=client.V1PodSpec(
                containers=[
                    client.V1Container(
                        name="pause",
                        image="registry.k8s.io/pause:3.9",
                        resources=client.V1ResourceRequirements(requests={"cpu": "1500m"}),
                    )
                ]
            ),
        )
        core.create_namespaced_pod(s.namespace, theirs)
        seen = s.wait_for(lambda pods: "theirs" in pods and bound(pods["theirs"]))
        assert seen["theirs"].spec.node_name == "node-a"
        thread.start()
        try:
            s.create_pod("ours", requests={"cpu": "1"})
            key = f"{s.namespace}/ours"
            failed = recorder.wait_for("unschedulable", key)
            assert failed is not None, recorder.events
            assert failed["message"] == "0/1 nodes are available: 1 Insufficient cpu."
            # A node with room: NodeResourcesFit registered Node Add, so the pod moves.
            s.create_node("node-b", cpu="2", memory="4Gi")
            done = s.wait_for(lambda pods: bound(pods["ours"]))
            assert done["ours"].spec.node_name == "node-b"
        finally:
            sched.stop()
            thread.join(10)
            join_binding_threads()
