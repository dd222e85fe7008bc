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
from .cache import DURATION_TO_EXPIRE_ASSUMED_POD, Cache
from .eventhandlers import add_all_event_handlers
from .framework import NodeInfo
from .schedule_one import schedule_one
from .scheduling_queue import Nominator, PriorityQueue
from .snapshot import Snapshot

log = logging.getLogger(__name__)

# Only pods that ask for this scheduler are ours, so we can share a cluster with the default.
SCHEDULER_NAME = "minisched"

# The scheduler's pod informer skips finished pods (upstream: scheduler.go, NewInformerFactory).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

# 0: the adaptive percentage of the nodes to find feasible before scoring (upstream:
# apis/config/types.go, DefaultPercentageOfNodesToScore); see num_feasible_nodes_to_find.
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0


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
        percentage_of_nodes_to_score: int = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE,
    ) -> None:
        # Upstream's validation of the KubeSchedulerConfiguration, with its message.
        if not 0 <= percentage_of_nodes_to_score <= 100:
            raise ValueError(
                f"percentageOfNodesToScore: Invalid value: {percentage_of_nodes_to_score}: "
                "not in valid range [0-100]"
            )
        self.client = client.CoreV1Api(api_client)
        # Every random choice goes through rng and every timer through clock: a seeded rng and
        # a FakeClock make a run repeatable.
        self.rng = rng
        self.clock = clock
        self.recorder = recorder or NullRecorder()
        self.event_recorder = EventRecorder(api_client)
        self.scheduler_name = scheduler_name
        # How many nodes a cycle filters before it scores, and where the next cycle starts
        # (upstream: genericScheduler's percentageOfNodesToScore and nextStartNodeIndex). Only
        # the scheduling thread reads and moves the index: no lock.
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        # The informers fill the cache; each scheduling cycle reads the snapshot, refreshed
        # from the cache as the cycle starts (upstream: SchedulerCache, nodeInfoSnapshot).
        self.cache = Cache(DURATION_TO_EXPIRE_ASSUMED_POD, clock)
        self.snapshot = Snapshot()
        # The nominated pods, shared by the queue (which keeps it) and the framework (whose
        # Filter counts them); it reads pods from the informer, built below.
        nominator = Nominator(lambda: self.pod_informer.store)
        self.framework = runtime.Framework(
            plugins.new_registry(),
            plugins.default_plugins(),
            clock,
            recorder=self.recorder,
            client_set=self.client,
            snapshot_shared_lister=self.snapshot,
            event_recorder=lambda: self.event_recorder,
            pod_lister=lambda: self.pod_informer.store,
            pod_nominator=nominator,
            rng=rng,
        )
        self.scheduling_queue = PriorityQueue(
            self.framework.queue_sort_func(),
            clock,
            self.recorder,
            cluster_event_map=self.framework.cluster_event_map,
            pod_nominator=nominator,
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
        self.scheduling_queue.run()
        self.cache.run()
        while not self._stopped.is_set():
            schedule_one(self)

    def stopping(self) -> bool:
        """Whether ``stop()`` was called (binding cycles it cut short end quietly)."""
        return self._stopped.is_set()

    def stop(self) -> None:
        """End ``run()``: close the queue (waking ``pop`` and stopping its loops) and stop the
        informers."""
        self._stopped.set()
        self.scheduling_queue.close()
        self.cache.stop()
        # Pods waiting on Permit hold binding threads: reject them, so those threads end.
        self.framework.iterate_over_waiting_pods(lambda wp: wp.reject("", "scheduler stopped"))
        self.pod_informer.stop()
        self.node_informer.stop()
        self.event_recorder.stop()

    def node_infos(self) -> list[NodeInfo]:
        """Each node as the cache counts it now, in a snapshot of its own (the cycles' is left
        alone): what the runner's last table shows (minisched.steps.CountsRequests)."""
        snapshot = Snapshot()
        self.cache.update_snapshot(snapshot)
        return snapshot.node_infos().list()

    def responsible_for_pod(self, pod: client.V1Pod) -> bool:
        return pod.spec.scheduler_name == self.scheduler_name
