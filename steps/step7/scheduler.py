"""The scheduler: informers feed the queue, and ``schedule_one`` runs back to back.

Upstream: pkg/scheduler/scheduler.go (Scheduler, New, Run) and pkg/scheduler/eventhandlers.go
(responsibleForPod) at v1.23; the handlers themselves are in eventhandlers.py.
"""

from __future__ import annotations

import logging
import random
import threading

from kubernetes import client

from minisched.clock import Clock
from minisched.events import EventRecorder
from minisched.informer import Informer
from minisched.recorder import NullRecorder, Recorder

from . import plugins, runtime
from .eventhandlers import add_all_event_handlers
from .schedule_one import schedule_one
from .scheduling_queue import PriorityQueue

log = logging.getLogger(__name__)

# Only pods that ask for this scheduler are ours, so we can share a cluster with the default.
SCHEDULER_NAME = "minisched"

# The scheduler's pod informer skips finished pods (upstream: scheduler.go, NewInformerFactory).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


class Scheduler:
    """Watches pods and nodes, and binds each pending pod to a node."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        rng: random.Random,
        clock: Clock,
        recorder: Recorder | None = None,
        node_selector: str | None = None,
        scheduler_name: str = SCHEDULER_NAME,
    ) -> None:
        self.client = client.CoreV1Api(api_client)
        # Every random choice goes through rng and every timer through clock: a seeded rng and
        # a FakeClock make a run repeatable.
        self.rng = rng
        self.clock = clock
        self.recorder = recorder or NullRecorder()
        self.event_recorder = EventRecorder(api_client)
        self.scheduler_name = scheduler_name
        # The UIDs of the assumed pods: those in their binding cycle (upstream: the cache's
        # assumed pods). The scheduling thread adds, binding threads and the informer remove;
        # each set operation is atomic in CPython, and no caller combines two, so no lock.
        self.assumed_pods: set[str] = set()
        self.framework = runtime.Framework(
            plugins.new_registry(),
            plugins.default_plugins(),
            clock,
            recorder=self.recorder,
        )
        self.scheduling_queue = PriorityQueue(
            self.framework.queue_sort_func(),
            clock,
            self.recorder,
            cluster_event_map=self.framework.cluster_event_map,
        )

        self.pod_informer = Informer(
            self.client.list_pod_for_all_namespaces,
            client.V1Pod,
            field_selector=POD_FIELD_SELECTOR,
        )
        self.node_informer = Informer(
            self.client.list_node,
            client.V1Node,
            label_selector=node_selector,
        )
        # Simplified: upstream reads nodes from a cache snapshot taken at the start of each
        # cycle; here the node informer's store is the cache.
        self.node_lister = self.node_informer.store
        self._stopped = threading.Event()
        add_all_event_handlers(self)

    def run(self) -> None:
        """Start the informers, wait for their first list, then schedule until ``stop()``."""
        self.pod_informer.start()
        self.node_informer.start()
        for informer in (self.pod_informer, self.node_informer):
            while not informer.wait_for_cache_sync(0.1):
                if self._stopped.is_set():
                    return
        log.info("informers synced; scheduling pods with schedulerName %s", self.scheduler_name)
        while not self._stopped.is_set():
            schedule_one(self)

    def stopping(self) -> bool:
        """Whether ``stop()`` was called (binding cycles it cut short end quietly)."""
        return self._stopped.is_set()

    def stop(self) -> None:
        """End ``run()``: close the queue (waking ``pop``) and stop the informers."""
        self._stopped.set()
        self.scheduling_queue.close()
        # Pods waiting on Permit hold binding threads: reject them, so those threads end.
        self.framework.iterate_over_waiting_pods(lambda wp: wp.reject("", "scheduler stopped"))
        self.pod_informer.stop()
        self.node_informer.stop()
        self.event_recorder.stop()

    def responsible_for_pod(self, pod: client.V1Pod) -> bool:
        return pod.spec.scheduler_name == self.scheduler_name
