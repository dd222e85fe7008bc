"""The PodGroup: a group of pods scheduled all or nothing, a custom resource of
kubernetes-sigs/scheduler-plugins.

Upstream (scheduler-plugins v0.23.10): apis/scheduling/v1alpha1/types.go (PodGroup,
PodGroupSpec, PodGroupStatus, the phases, PodGroupLabel), pkg/util/podgroup.go (the helpers
below) and the generated clientset, informer and lister. The CustomResourceDefinition that
makes the API server serve it is ``manifests/podgroup-crd.yaml``.

A pod joins a group with the label ``pod-group.scheduling.sigs.k8s.io: <group name>``, in
the group's namespace. The models read the API's JSON (camelCase) names; fields left out
have Go's zero values, as the typed client's objects do.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubernetes.client import V1ObjectMeta, V1Pod
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

GROUP_NAME = "scheduling.sigs.k8s.io"
VERSION = "v1alpha1"
PLURAL = "podgroups"
# The label that names a pod's group (upstream: PodGroupLabel).
POD_GROUP_LABEL = "pod-group." + GROUP_NAME

# The phases (upstream: PodGroupPhase). The scheduler writes Scheduling and Scheduled; the
# others are the PodGroup controller's, which is not part of the scheduler.
POD_GROUP_PENDING = "Pending"
POD_GROUP_RUNNING = "Running"
POD_GROUP_PRE_SCHEDULING = "PreScheduling"
POD_GROUP_SCHEDULING = "Scheduling"
POD_GROUP_SCHEDULED = "Scheduled"
POD_GROUP_UNKNOWN = "Unknown"
POD_GROUP_FINISHED = "Finished"
POD_GROUP_FAILED = "Failed"

# How long a group's pods wait at Permit when neither the group nor the args say (upstream:
# DefaultWaitTime), in seconds.
DEFAULT_WAIT_TIME = 60.0


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class PodGroupSpec(_Model):
    # The fewest pods that may run: fewer than this, and none is scheduled.
    min_member: int = 0
    # What the minMember pods need in all, checked against the cluster's free resources.
    min_resources: dict[str, Any] | None = None
    # How long the group's pods wait at Permit for the rest (else the plugin's args say).
    schedule_timeout_seconds: int | None = None


class PodGroupStatus(_Model):
    phase: str = ""
    occupied_by: str = ""
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: datetime | None = None


class PodGroup(_Model):
    api_version: str = f"{GROUP_NAME}/{VERSION}"
    kind: str = "PodGroup"
    metadata: V1ObjectMeta = Field(default_factory=V1ObjectMeta)
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)


def get_pod_group_label(pod: V1Pod) -> str:
    """The name of the pod's group, or "" (upstream: GetPodGroupLabel)."""
    return (pod.metadata.labels or {}).get(POD_GROUP_LABEL, "")


def get_pod_group_full_name(pod: V1Pod) -> str:
    """``namespace/group``, or "" for a pod in no group (upstream: GetPodGroupFullName)."""
    name = get_pod_group_label(pod)
    return f"{pod.metadata.namespace}/{name}" if name else ""


def get_wait_time_duration(pg: PodGroup | None, schedule_timeout: float | None) -> float:
    """How long the group's pods wait at Permit, in seconds: the group's
    scheduleTimeoutSeconds, else the given timeout if not 0, else DEFAULT_WAIT_TIME (upstream:
    GetWaitTimeDuration)."""
    if pg is not None and pg.spec.schedule_timeout_seconds is not None:
        return float(pg.spec.schedule_timeout_seconds)
    if schedule_timeout:
        return schedule_timeout
    return DEFAULT_WAIT_TIME


def status_merge_patch(old: PodGroup, new: PodGroup) -> dict[str, Any]:
    """The JSON merge patch that turns ``old``'s status into ``new``'s: the fields that
    changed, as JSON (upstream: CreateMergePatch, a two-way merge patch of the objects; only
    the status differs where PostBind calls it)."""
    before = old.status.model_dump(mode="json", by_alias=True)
    after = new.status.model_dump(mode="json", by_alias=True)
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    return {"status": changed} if changed else {}
