"""A fake kubelet for a scenario's fake nodes: it finishes the graceful deletion of their pods.

Upstream counterpart: the kubelet's status manager (``pkg/kubelet/status/status_manager.go``,
``syncPod`` and ``canBeDeleted``): once a pod has a ``deletionTimestamp`` and its containers
have stopped, the kubelet deletes it for good, with ``GracePeriodSeconds: 0`` and a UID
precondition (``metav1.NewUIDPreconditions(uid)``), so that a pod recreated under the same
name is never touched. KWOK (``sigs.k8s.io/kwok``, ``pkg/kwok/controllers/pod_controller.go``
with its ``pod-delete`` stage), the fake kubelet of clusters whose nodes are fake, deletes the
terminating pods of the nodes it manages the same way, at once.

Why a scenario needs it: a delete with a grace period (the pod's own, 30 s by default; what
preemption does to its victims) of a pod bound to a node does not remove the pod. The API
server only sets ``deletionTimestamp`` and ``deletionGracePeriodSeconds`` (``kubectl get pods``
shows it Terminating) and waits for the node's kubelet to say the containers stopped. With
fake nodes there is no kubelet, so the pod would stay for ever, on the embedded server as on a
real cluster. An unbound pod needs none: the server deletes it at once.

How: an ``Informer`` (list, then watch from the list's resourceVersion; watch again when the
watch ends, list again on 410 Gone) on the pods of one namespace. Every pod that is added or
updated with ``deletionTimestamp`` set and ``spec.nodeName`` among ``nodes()`` is deleted with
grace 0 and its UID as precondition. A 404 (already gone) or a 409 (the UID differs: it was
deleted and a new pod took its name) means there is nothing left to finish. Pods in other
namespaces, or on other nodes (a real cluster's own), are never looked at or touched.

Simplified: the containers stop at once. The kubelet sends SIGTERM, waits up to the grace
period (then SIGKILL), and deletes the pod when they have exited; here the pod goes as soon as
its deletion is seen, so a preemptor never waits for its victims' grace period, and the window
in which a victim still holds its node's resources is a round trip, not seconds.

Not implemented: the rest of a kubelet and of KWOK. Neither runs pods: the phase stays
Pending, with no Ready condition and no pod IP (``kubectl get pods`` shows STATUS Pending for
a bound pod), and the kubelet's patch of the terminal phase (Failed/Succeeded) before the
final delete is skipped. A pod whose deletion began while its node was not yet in ``nodes()``
is finished only at the next relist.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes import client

from .cluster import is_connection_error
from .informer import OUTAGES, DeletedFinalStateUnknown, Informer, ResourceEventHandler

log = logging.getLogger(__name__)

STOP_TIMEOUT = 5.0  # seconds stop() waits for the watch thread to end


class FakeKubelet:
    """Finishes the graceful deletion of pods bound to its nodes, as KWOK's fake kubelet does.

    ``nodes`` is called for each pod seen, so nodes created after ``start()`` count too.
    ``say``, if given, gets one line per pod finished, just before its final delete call, so
    that it prints ahead of what the deletion causes (the scheduler's informer may see the pod
    gone before the call returns).

    The watch and the deletes run on one daemon thread, the informer's; ``_lock`` guards
    ``_finishing``, the UIDs whose final delete was sent and whose DELETED event has not come.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        namespace: str,
        nodes: Callable[[], Iterable[str]],
        say: Callable[[str], None] | None = None,
    ) -> None:
        if not namespace:
            raise ValueError("FakeKubelet needs a namespace: it never looks beyond one")
        self.api_client = api_client
        self.namespace = namespace
        self.nodes = nodes
        self.say = say
        self._lock = threading.Lock()
        self._finishing: set[str] = set()
        self._informer: Informer[client.V1Pod] | None = None
        # A connection pool of its own (same configuration): a watch cut by stop() leaves its
        # connection unusable, and it must not be handed to the scenario's next request.
        self._client = client.ApiClient(api_client.configuration)
        self.core = client.CoreV1Api(self._client)
        self._started = False

    def start(self) -> None:
        """Start watching the namespace's pods on a daemon thread."""
        if self._started:
            raise RuntimeError("a FakeKubelet starts once")
        self._started = True
        informer: Informer[client.V1Pod] = Informer(
            functools.partial(self.core.list_namespaced_pod, self.namespace), client.V1Pod
        )
        # A partial hides the API client from the informer: name the host its outages report.
        informer.host = self.api_client.configuration.host
        informer.name = f"kubelet {self.namespace}"
        informer.add_event_handler(
            ResourceEventHandler(
                on_add=self._sync_pod,
                on_update=lambda _old, new: self._sync_pod(new),
                on_delete=self._forget,
            )
        )
        self._informer = informer
        informer.start()
        if informer._thread is not None:
            informer._thread.name = f"fake-kubelet-{self.namespace}"

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until the first list has been handled (terminating pods found there too)."""
        return self._informer is not None and self._informer.wait_for_cache_sync(timeout)

    def stop(self) -> None:
        """Stop watching: close the watch, and wait (up to ``STOP_TIMEOUT``) for the thread."""
        informer, self._informer = self._informer, None
        if informer is not None:
            informer.stop(STOP_TIMEOUT)
            thread = informer._thread
            if thread is not None and thread.is_alive():
                log.warning("fake kubelet of %s: its thread did not end in time", self.namespace)
        self._client.close()  # its connections, the cut watch's included

    def __enter__(self) -> FakeKubelet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the status manager's part ---------------------------------------------------------

    def _sync_pod(self, pod: client.V1Pod) -> None:
        """If ``pod`` is terminating on one of our nodes, finish it (status manager: syncPod
        deletes once ``canBeDeleted`` holds; here at once, see the module's Simplified)."""
        meta, node = pod.metadata, pod.spec.node_name if pod.spec else None
        if meta.deletion_timestamp is None or not node or meta.namespace != self.namespace:
            return
        if node not in set(self.nodes()):
            return
        with self._lock:
            if meta.uid in self._finishing:
                return  # already sent (a finalizer may keep it a while)
            self._finishing.add(meta.uid)
        if self.say is not None:
            self.say(f"kubelet: {node} finished terminating pod {meta.name}")
        try:
            self.core.delete_namespaced_pod(
                meta.name,
                self.namespace,
                body=client.V1DeleteOptions(
                    grace_period_seconds=0, preconditions=client.V1Preconditions(uid=meta.uid)
                ),
            )
        except client.ApiException as e:
            if e.status in (404, 409):
                return  # gone already, or replaced by a new pod of the same name
            self._retry_later(meta.uid)
            log.warning(
                "fake kubelet: deleting pod %s/%s failed (%s %s); retrying at the next relist",
                self.namespace,
                meta.name,
                e.status,
                e.reason,
            )
        except Exception as e:
            if not is_connection_error(e):
                raise
            self._retry_later(meta.uid)
            # One line for the whole process while the server is away (the informers' own).
            OUTAGES.failed(self.api_client.configuration.host, e)

    def _retry_later(self, uid: str) -> None:
        with self._lock:
            self._finishing.discard(uid)

    def _forget(self, obj: Any) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        with self._lock:
            self._finishing.discard(pod.metadata.uid)
