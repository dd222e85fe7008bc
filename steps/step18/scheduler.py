"""The scheduler: informers feed the queue, and ``schedule_one`` runs back to back, each pod
in the framework of the profile its ``schedulerName`` names.

Upstream: pkg/scheduler/scheduler.go (Scheduler, New, Run), pkg/scheduler/profile/profile.go
(NewMap, Map.HandlesSchedulerName) and pkg/scheduler/eventhandlers.go (responsibleForPod) at
v1.23; the handlers themselves are in eventhandlers.py, the configuration in config.py.

The configuration's settings the scheduler applies: the profiles, percentageOfNodesToScore,
podInitialBackoffSeconds and podMaxBackoffSeconds. The others are reported, one line each, by
``unapplied_settings``: nothing in the file is silently ignored.
"""

from __future__ import annotations

import logging
import random
import threading

from kubernetes import client

from minisched.clock import Clock
from minisched.events import EventRecorder
from minisched.informer import Informer
from minisched.leanclient import LeanCoreV1Api
from minisched.recorder import NullRecorder, Recorder

from . import extender, plugins, runtime
from .cache import DURATION_TO_EXPIRE_ASSUMED_POD, Cache
from .config import V1BETA3, KubeSchedulerConfiguration, default_config
from .eventhandlers import add_all_event_handlers
from .framework import ClusterEvent, Extender, NodeInfo
from .schedule_one import BindingsInFlight, schedule_one
from .scheduling_queue import Nominator, PriorityQueue
from .snapshot import Snapshot
from .validation import validate_kube_scheduler_configuration

log = logging.getLogger(__name__)

# Only pods that ask for this scheduler are ours, so we can share a cluster with the default.
SCHEDULER_NAME = "minisched"

# The scheduler's pod informer skips finished pods (upstream: scheduler.go, NewInformerFactory).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


def default_configuration() -> KubeSchedulerConfiguration:
    """The configuration without ``--config``: v1beta3's defaults, with the one profile
    named ``minisched``. Differs from upstream: kube-scheduler names it default-scheduler;
    minisched's own name lets it share a cluster with the default scheduler."""
    config = default_config(V1BETA3)
    config.profiles[0].scheduler_name = SCHEDULER_NAME
    return config


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
        config: KubeSchedulerConfiguration | None = None,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        config = config or default_configuration()
        if percentage_of_nodes_to_score is not None:  # the flag wins over the file
            config.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        # Upstream's validation, with its message (upstream: Options.Validate).
        err = validate_kube_scheduler_configuration(config)
        if err is not None:
            raise ValueError(str(err))
        self.config = config
        # The binding's POST without the generated method's validation (minisched/leanclient.py).
        self.client = LeanCoreV1Api(api_client)
        # Every random choice goes through rng and every timer through clock: a seeded rng and
        # a FakeClock make a run repeatable.
        self.rng = rng
        self.clock = clock
        self.recorder = recorder or NullRecorder()
        self.event_recorder = EventRecorder(api_client)
        # How many nodes a cycle filters before it scores, and where the next cycle starts
        # (upstream: genericScheduler's percentageOfNodesToScore and nextStartNodeIndex). Only
        # the scheduling thread reads and moves the index: no lock.
        self.percentage_of_nodes_to_score = config.percentage_of_nodes_to_score
        self.next_start_node_index = 0
        # The pods being bound: the scheduling thread waits while there are too many.
        self.bindings_in_flight = BindingsInFlight()
        # The informers fill the cache; each scheduling cycle reads the snapshot, refreshed
        # from the cache as the cycle starts (upstream: SchedulerCache, nodeInfoSnapshot).
        self.cache = Cache(DURATION_TO_EXPIRE_ASSUMED_POD, clock)
        self.snapshot = Snapshot()
        # The nominated pods, shared by the queue (which keeps it) and the framework (whose
        # Filter counts them); it reads pods from the informer, built below.
        nominator = Nominator(lambda: self.pod_informer.store)
        # The extenders, the ignorable ones last; the resources they take over become every
        # profile's NodeResourcesFit ignoredResources, so before the frameworks are built
        # (upstream: Configurator.create). Its ValueError has upstream's text.
        self.extenders: list[Extender] = extender.new_extenders(config)
        # One framework per profile, all filling one map of cluster events, for the one queue
        # (upstream: profile.NewMap with the WithClusterEventMap option).
        self.cluster_event_map: dict[ClusterEvent, set[str]] = {}
        self.profiles: dict[str, runtime.Framework] = {}
        registry = plugins.new_registry()
        for profile in config.profiles:
            try:
                self.profiles[profile.scheduler_name] = runtime.Framework(
                    registry,
                    profile,
                    clock,
                    recorder=self.recorder,
                    client_set=self.client,
                    snapshot_shared_lister=self.snapshot,
                    event_recorder=lambda: self.event_recorder,
                    pod_lister=lambda: self.pod_informer.store,
                    pod_nominator=nominator,
                    rng=rng,
                    cluster_event_map=self.cluster_event_map,
                    extenders=self.extenders,
                )
            except ValueError as e:
                raise ValueError(
                    "couldn't create scheduler: initializing profiles: creating profile for "
                    f"scheduler name {profile.scheduler_name}: {e}"
                ) from e
        # Validation made every profile's QueueSort the same: the first one's orders the queue.
        first = self.profiles[config.profiles[0].scheduler_name]
        self.scheduling_queue = PriorityQueue(
            first.queue_sort_func(),
            clock,
            self.recorder,
            cluster_event_map=self.cluster_event_map,
            pod_nominator=nominator,
            pod_initial_backoff_duration=float(config.pod_initial_backoff_seconds),
            pod_max_backoff_duration=float(config.pod_max_backoff_seconds),
            sort_key=first.queue_sort_key(),
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
        # The informers of the custom resources plugins registered events for (upstream: the
        # dynamic informer factory's); add_all_event_handlers makes them.
        self.dynamic_informers: list[Informer] = []
        self._stopped = threading.Event()
        add_all_event_handlers(self)

    def run(self) -> None:
        """Start the informers, wait for their first list, then schedule until ``stop()``."""
        informers = [self.pod_informer, self.node_informer, *self.dynamic_informers]
        for informer in informers:
            informer.start()
        for informer in informers:
            while not informer.wait_for_cache_sync(0.1):
                if self._stopped.is_set():
                    return
        names = ", ".join(self.profiles)
        log.info("informers synced; scheduling pods with schedulerName %s", names)
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
        for fwk in self.profiles.values():
            fwk.iterate_over_waiting_pods(lambda wp: wp.reject("", "scheduler stopped"))
            fwk.close()
        for informer in [self.pod_informer, self.node_informer, *self.dynamic_informers]:
            informer.stop()
        self.event_recorder.stop()

    def node_infos(self) -> list[NodeInfo]:
        """Each node as the cache counts it now, in a snapshot of its own (the cycles' is left
        alone): what the runner's last table shows (minisched.steps.CountsRequests)."""
        snapshot = Snapshot()
        self.cache.update_snapshot(snapshot)
        return snapshot.node_infos().list()

    def responsible_for_pod(self, pod: client.V1Pod) -> bool:
        """Whether a profile has the pod's schedulerName (upstream: responsibleForPod and
        Map.HandlesSchedulerName): the pods of any other scheduler are left alone."""
        return pod.spec.scheduler_name in self.profiles

    def framework_for_pod(self, pod: client.V1Pod) -> runtime.Framework:
        """The framework of the profile the pod names (upstream: frameworkForPod); KeyError
        with upstream's words when none has its name."""
        try:
            return self.profiles[pod.spec.scheduler_name]
        except KeyError:
            raise KeyError(
                f'profile not found for scheduler name "{pod.spec.scheduler_name}"'
            ) from None


def unapplied_settings(config: KubeSchedulerConfiguration) -> list[str]:
    """One line for each setting of the file this scheduler does not apply, when it asks for
    something (a default, or a value that changes nothing here, gets no line)."""
    notes = []
    if config.leader_election.leader_elect:
        notes.append(
            "leaderElection.leaderElect is true: minisched runs without leader election "
            "(run one instance per scheduler name)"
        )
    connection = config.client_connection
    if (connection.qps, connection.burst) != (50.0, 100):
        notes.append(
            f"clientConnection.qps {connection.qps:g} and burst {connection.burst} are not "
            "applied: the Python client has no rate limiter"
        )
    for name, address in (
        ("healthzBindAddress", config.healthz_bind_address),
        ("metricsBindAddress", config.metrics_bind_address),
    ):
        if address:
            notes.append(f"{name} {address} is not served: minisched has no health or metrics port")
    if config.parallelism != 16:
        notes.append(
            f"parallelism {config.parallelism} is not applied: Filter and Score run one node "
            "after the other"
        )
    return notes
