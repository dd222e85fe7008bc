"""A fake kubelet for a scenario's fake nodes: it finishes the graceful deletion of their pods.

Upstream counterpart: the kubelet's status manager (``pkg/kubelet/status/status_manager.go``,
``syncPod``): once a pod has a ``deletionTimestamp`` and its containers have stopped, the
kubelet deletes it for good, with ``GracePeriodSeconds: 0`` and a UID precondition
(``metav1.NewPreconditionDeleteOptions(uid)``), so that a pod recreated under the same name is
never touched. KWOK (``sigs.k8s.io/kwok``, ``pkg/kwok/controllers/pod_controller.go``), the
fake kubelet of clusters with fake nodes, does the same for pods on the nodes it manages, at once.

Without it, a graceful delete of a bound pod (``deletionGracePeriodSeconds`` > 0, what
preemption does to its victims) never finishes: the API server only marks the pod, and waits
for the pod's kubelet to say its containers stopped. That holds on the embedded server and on a
real cluster whose nodes are fake.

Work in progress: the API is settled, the body follows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kubernetes import client

log = logging.getLogger(__name__)


class FakeKubelet:
    """Finishes the graceful deletion of pods bound to its nodes, as KWOK's fake kubelet does."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        namespace: str,
        nodes: Callable[[], Iterable[str]],
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.nodes = nodes
        self.say = say

    def start(self) -> None:
        """Start watching the namespace's pods (a daemon thread)."""

    def stop(self) -> None:
        """Stop watching, close the watch, and wait for the thread to end."""

    def __enter__(self) -> FakeKubelet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
