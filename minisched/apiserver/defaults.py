"""The fields a real kube-apiserver fills into the objects it stores.

Upstream: ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_Pod``, ``SetDefaults_Container``,
``SetDefaults_NodeStatus``), ``pkg/registry/core/pod/strategy.go`` (``PrepareForCreate``: status
reset, ``generation``), ``pkg/apis/core/helper/qos`` (``GetPodQOS``), and the admission plugins
``DefaultTolerationSeconds``, ``Priority`` and ``NamespaceLifecycle``
(``kubernetes.io/metadata.name``). Compared field for field with the recorded bodies in
``tests/fixtures/conformance``.

Every function here modifies the object it is given; callers pass a private copy.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .validation import parse_quantity

JSON = dict[str, Any]

# Key order of the Go structs, so that stored objects print like a real server's
# (JSON comparison ignores key order; humans reading ``kubectl get -o yaml`` do not).
_META_ORDER = (
    "name generateName namespace selfLink uid resourceVersion generation creationTimestamp "
    "deletionTimestamp deletionGracePeriodSeconds labels annotations ownerReferences finalizers "
    "managedFields"
).split()
_POD_SPEC_ORDER = (
    "volumes initContainers containers ephemeralContainers restartPolicy "
    "terminationGracePeriodSeconds activeDeadlineSeconds dnsPolicy nodeSelector "
    "serviceAccountName serviceAccount automountServiceAccountToken nodeName hostNetwork hostPID "
    "hostIPC shareProcessNamespace securityContext imagePullSecrets hostname subdomain affinity "
    "schedulerName tolerations hostAliases priorityClassName priority dnsConfig readinessGates "
    "runtimeClassName enableServiceLinks preemptionPolicy overhead topologySpreadConstraints "
    "setHostnameAsFQDN os hostUsers schedulingGates resourceClaims resources"
).split()
_CONTAINER_ORDER = (
    "name image command args workingDir ports envFrom env resources resizePolicy restartPolicy "
    "volumeMounts volumeDevices livenessProbe readinessProbe startupProbe lifecycle "
    "terminationMessagePath terminationMessagePolicy imagePullPolicy securityContext stdin "
    "stdinOnce tty"
).split()
_POD_STATUS_ORDER = (
    "observedGeneration phase conditions message reason nominatedNodeName hostIP hostIPs podIP "
    "podIPs startTime initContainerStatuses containerStatuses qosClass"
).split()


# Metadata fields that Go leaves out when empty (``omitempty`` maps and slices).
_OMIT_EMPTY = {"labels", "annotations", "finalizers", "ownerReferences", "generateName"}


API_VERSIONS = {"PriorityClass": "scheduling.k8s.io/v1"}  # every other kind is core/v1


def ordered(obj: JSON, order: list[str]) -> JSON:
    """Return ``obj`` with keys in ``order`` first (unknown keys keep their place after them)."""
    out = {k: obj[k] for k in order if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out)
    return out


def order_object(kind: str, obj: JSON, api_version: str | None = None) -> JSON:
    """Top-level layout kind, apiVersion, metadata, then the rest, as the real server writes."""
    out: JSON = {"kind": kind, "apiVersion": api_version or API_VERSIONS.get(kind, "v1")}
    if "metadata" in obj:
        meta = {k: v for k, v in obj["metadata"].items() if k not in _OMIT_EMPTY or v}
        out["metadata"] = ordered(meta, _META_ORDER)
    if kind == "PriorityClass":
        obj = ordered(obj, ["value", "globalDefault", "description", "preemptionPolicy"])
    out.update((k, v) for k, v in obj.items() if k not in out)
    if kind == "Pod":
        spec = out.get("spec")
        if isinstance(spec, dict):
            for key in ("containers", "initContainers"):
                if isinstance(spec.get(key), list):
                    spec[key] = [
                        ordered(c, _CONTAINER_ORDER) if isinstance(c, dict) else c
                        for c in spec[key]
                    ]
            if not spec.get("nodeSelector"):
                spec.pop("nodeSelector", None)
            out["spec"] = ordered(spec, _POD_SPEC_ORDER)
        if isinstance(out.get("status"), dict):
            _null_times(out["status"], ("lastProbeTime", "lastTransitionTime"))
            out["status"] = ordered(out["status"], _POD_STATUS_ORDER)
    elif kind == "Node" and isinstance(out.get("status"), dict):
        _null_times(out["status"], ("lastHeartbeatTime", "lastTransitionTime"))
    return out


def _null_times(status: JSON, keys: tuple[str, ...]) -> None:
    """Condition timestamps are Go ``metav1.Time`` structs: serialized as null when unset."""
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict):
            for key in keys:
                cond.setdefault(key, None)


# --------------------------------------------------------------------------------------------
# Pods
# --------------------------------------------------------------------------------------------

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300


def _image_tag(image: str) -> str:
    """The tag of an image reference, "latest" when it has neither tag nor digest."""
    if "@" in image:
        return ""
    last = image.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


def default_container(container: JSON) -> None:
    container.setdefault("resources", {})
    resources = container["resources"]
    if isinstance(resources, dict) and resources.get("limits") and not resources.get("requests"):
        # Upstream: a container with limits but no requests gets requests equal to the limits.
        resources["requests"] = dict(resources["limits"])
    elif isinstance(resources, dict) and resources.get("limits"):
        for name, value in resources["limits"].items():
            resources["requests"].setdefault(name, value)
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if not container.get("imagePullPolicy"):
        tag = _image_tag(str(container.get("image") or ""))
        container["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def _tolerates(tolerations: list[JSON], key: str) -> bool:
    return any(
        t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
        for t in tolerations
        if isinstance(t, dict)
    )


def default_pod_spec(spec: JSON, creating: bool = False) -> None:
    """``SetDefaults_PodSpec`` plus the admission plugins that run on every create and update."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                default_container(container)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    spec.setdefault("enableServiceLinks", True)
    # Admission plugin DefaultTolerationSeconds.
    tolerations = list(spec.get("tolerations") or [])
    for key in (NOT_READY, UNREACHABLE):
        if not _tolerates(tolerations, key):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = tolerations
    # On create the Priority admission plugin (registry) sets priority and preemptionPolicy
    # from the PriorityClass; on update an omitted value is the old defaulting's.
    if not creating:
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")


def pod_qos(spec: JSON) -> str:
    """``GetPodQOS``: Guaranteed, Burstable or BestEffort from cpu/memory requests and limits."""
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    containers = [
        c
        for key in ("initContainers", "containers")
        for c in spec.get(key) or []
        if isinstance(c, dict)
    ]
    for c in containers:
        res = c.get("resources") or {}
        for name, value in (res.get("requests") or {}).items():
            if name in ("cpu", "memory"):
                q = parse_quantity(str(value))
                if q != 0:
                    requests[name] = requests.get(name, Decimal(0)) + q
        have = set()
        for name, value in (res.get("limits") or {}).items():
            if name in ("cpu", "memory"):
                q = parse_quantity(str(value))
                if q != 0:
                    have.add(name)
                    limits[name] = limits.get(name, Decimal(0)) + q
        if have != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"


def prepare_pod_for_create(pod: JSON) -> None:
    """``podStrategy.PrepareForCreate``: defaults, a fresh status and generation 1."""
    spec = pod.setdefault("spec", {})
    default_pod_spec(spec, creating=True)
    # GetPodQOS: a QoS class already in the posted status is kept (upstream reads
    # status.qosClass first and computes it only when empty); everything else posted in
    # status is dropped.
    posted_qos = (
        (pod.get("status") or {}).get("qosClass") if isinstance(pod.get("status"), dict) else None
    )
    status: JSON = {"phase": "Pending"}
    if spec.get("schedulingGates"):
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": None,
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        ]
    status["qosClass"] = posted_qos or pod_qos(spec)
    pod["status"] = status
    pod["metadata"]["generation"] = 1


# --------------------------------------------------------------------------------------------
# Nodes, namespaces, events
# --------------------------------------------------------------------------------------------

_NODE_INFO_FIELDS = (
    "machineID systemUUID bootID kernelVersion osImage containerRuntimeVersion kubeletVersion "
    "kubeProxyVersion operatingSystem architecture"
).split()


def default_pod_status(status: JSON) -> None:
    """A pod status as written through /status comes back the way the v1 conversion and Go's
    encoder leave it: ``podIPs`` follows ``podIP`` (podIP is authoritative when both are set
    and differ), and container statuses carry their non-omitempty fields. Conditions keep
    only what was written (no reason is made up)."""
    pod_ip = status.get("podIP")
    pod_ips = status.get("podIPs") or []
    if pod_ip and (not pod_ips or (pod_ips[0] or {}).get("ip") != pod_ip):
        status["podIPs"] = [{"ip": pod_ip}]
    elif pod_ips and not pod_ip and isinstance(pod_ips[0], dict):
        status["podIP"] = pod_ips[0].get("ip", "")
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            if isinstance(cs, dict):
                for field, empty in (
                    ("state", {}),
                    ("lastState", {}),
                    ("ready", False),
                    ("restartCount", 0),
                    ("image", ""),
                    ("imageID", ""),
                ):
                    cs.setdefault(field, empty)


def default_node(node: JSON) -> None:
    node.setdefault("spec", {})
    status = node.setdefault("status", {})
    if status.get("capacity") and not status.get("allocatable"):
        status["allocatable"] = dict(status["capacity"])
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
    info = status.setdefault("nodeInfo", {})
    for key in _NODE_INFO_FIELDS:
        info.setdefault(key, "")


def default_namespace(namespace: JSON) -> None:
    meta = namespace["metadata"]
    labels = meta.setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = meta["name"]
    spec = namespace.setdefault("spec", {})
    if not spec.get("finalizers"):
        spec["finalizers"] = ["kubernetes"]


def default_event(event: JSON) -> None:
    """Events have no defaulting; these are the Go fields serialized even when empty."""
    event.setdefault("involvedObject", {})
    event.setdefault("source", {})
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        event.setdefault(key, None)
    event.setdefault("reportingComponent", "")
    event.setdefault("reportingInstance", "")
