"""What each verb does to each resource: the REST storage strategies.

Upstream: ``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`` (create,
update, delete, deletecollection and graceful deletion), ``pkg/registry/core/pod/strategy.go``
and ``pkg/registry/core/pod/storage/storage.go`` (``BindingREST``: ``assignPod``), the node,
namespace and event strategies, and ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers``
(``create.go``, ``update.go``, ``patch.go``, ``delete.go``) for the order of the checks, which
decides which error a bad request gets.

CustomResourceDefinitions and the resources they define follow ``apiextensions-apiserver``
(``crd.py`` has the pure parts: defaults, validation, schemas; the verbs and the controllers'
steps are here).

Everything here runs on the event loop thread (see ``store.py``); a request's checks and its
commit happen without an ``await`` in between, so no other request can interleave.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import crd, defaults, errors, patch, validation
from .errors import ApiError, FieldError
from .selectors import Selector
from .store import Store, clone

JSON = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    """What the API serves for one resource (also the source of the discovery document)."""

    name: str  # plural, as in the URL
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    storage_version_hash: str = ""
    name_rule: str = "subdomain"  # DNS-1123 "label" or "subdomain", or a "path" segment
    has_status: bool = False
    return_deleted_object: bool = False  # DELETE answers the object, not a Status
    # Watches of events are served from storage upstream, not from the watch cache: a too-old
    # version then has a different message.
    watch_from_storage: bool = False
    group: str = ""  # "" is the core group, served under /api/v1
    version: str = "v1"
    store_name: str = ""  # the store's name for these objects, when not ``name``
    # Served only so that a real kube-scheduler's informers can list and watch them: no
    # defaulting or validation (nothing here creates them, except events.k8s.io Events).
    stub: bool = False
    # A custom resource: the served version of a CRD (names, schema, subresources, columns).
    custom: crd.CustomKind | None = field(default=None, compare=False)

    @property
    def store_key(self) -> str:
        return self.store_name or self.name

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

PODS = Resource(
    "pods",
    "pod",
    "Pod",
    True,
    _ALL_VERBS,
    ("po",),
    ("all",),
    "xPOwRZ+Yhw8=",
    has_status=True,
    return_deleted_object=True,
)
NODES = Resource(
    "nodes", "node", "Node", False, _ALL_VERBS, ("no",), (), "XwShjMxG9Fs=", has_status=True
)
NAMESPACES = Resource(
    "namespaces",
    "namespace",
    "Namespace",
    False,
    ("create", "delete", "get", "list", "patch", "update", "watch"),
    ("ns",),
    (),
    "Q3oi5N2YM8M=",
    name_rule="label",
    has_status=True,
    return_deleted_object=True,
)
EVENTS = Resource(
    "events",
    "event",
    "Event",
    True,
    _ALL_VERBS,
    ("ev",),
    (),
    "r2yiGXH7wu8=",
    name_rule="path",
    watch_from_storage=True,
)
RESOURCES: dict[str, Resource] = {r.name: r for r in (PODS, NODES, NAMESPACES, EVENTS)}
PRIORITY_CLASSES = Resource(
    "priorityclasses",
    "priorityclass",
    "PriorityClass",
    False,
    _ALL_VERBS,
    ("pc",),
    (),
    "1QwjyaZjj3Y=",
    group="scheduling.k8s.io",
)
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "customresourcedefinitions",
    "customresourcedefinition",
    "CustomResourceDefinition",
    False,
    _ALL_VERBS,
    ("crd", "crds"),
    ("api-extensions",),
    "jfWCUB31mvA=",
    has_status=True,
    group=crd.GROUP,
)
_READ = ("get", "list", "watch")


def _stub(name: str, kind: str, namespaced: bool, group: str = "", short: tuple = ()) -> Resource:
    return Resource(name, kind.lower(), kind, namespaced, _READ, short, group=group, stub=True)


# Not implemented: these are served only as empty, read-only collections (list and watch
# work), because a real kube-scheduler's informers list and watch them and do not start
# scheduling until every list succeeded. Nothing here creates, stores or checks them.
STUB_CORE = (
    _stub("persistentvolumeclaims", "PersistentVolumeClaim", True, short=("pvc",)),
    _stub("persistentvolumes", "PersistentVolume", False, short=("pv",)),
    _stub("replicationcontrollers", "ReplicationController", True, short=("rc",)),
    _stub("services", "Service", True, short=("svc",)),
)
RESOURCES.update((r.name, r) for r in STUB_CORE)
# events.k8s.io/v1 Events (what kube-scheduler posts). Simplified: stored apart from core/v1
# Events, as posted (upstream stores both in one place, converted, and validates them).
EVENTS_V1 = Resource(
    "events",
    "event",
    "Event",
    True,
    _ALL_VERBS,
    ("ev",),
    group="events.k8s.io",
    store_name="events.events.k8s.io",
    stub=True,
)


def _by_name(*resources: Resource) -> dict[str, Resource]:
    """One API version's resources, keyed by their plural name."""
    return {r.name: r for r in resources}


# The API groups served under /apis: group -> version -> plural -> Resource.
GROUPS: dict[str, dict[str, dict[str, Resource]]] = {
    "scheduling.k8s.io": {"v1": {PRIORITY_CLASSES.name: PRIORITY_CLASSES}},
    crd.GROUP: {"v1": {CUSTOM_RESOURCE_DEFINITIONS.name: CUSTOM_RESOURCE_DEFINITIONS}},
    "apps": {
        "v1": _by_name(
            _stub("replicasets", "ReplicaSet", True, "apps", ("rs",)),
            _stub("statefulsets", "StatefulSet", True, "apps", ("sts",)),
        )
    },
    "events.k8s.io": {"v1": {"events": EVENTS_V1}},
    "policy": {
        "v1": _by_name(
            _stub("poddisruptionbudgets", "PodDisruptionBudget", True, "policy", ("pdb",)),
        )
    },
    "storage.k8s.io": {
        "v1": _by_name(
            _stub("csidrivers", "CSIDriver", False, "storage.k8s.io"),
            _stub("csinodes", "CSINode", False, "storage.k8s.io"),
            _stub("csistoragecapacities", "CSIStorageCapacity", True, "storage.k8s.io"),
            _stub("storageclasses", "StorageClass", False, "storage.k8s.io", ("sc",)),
            _stub("volumeattachments", "VolumeAttachment", False, "storage.k8s.io"),
        )
    },
    "resource.k8s.io": {
        "v1": _by_name(
            _stub("deviceclasses", "DeviceClass", False, "resource.k8s.io"),
            _stub("resourceclaims", "ResourceClaim", True, "resource.k8s.io"),
            _stub("resourceslices", "ResourceSlice", False, "resource.k8s.io"),
        )
    },
}

# Upstream: pkg/apis/scheduling (SystemPriorityClasses), created by the apiserver at start.
SYSTEM_PRIORITY_CLASSES = (
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
)
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000

# Kinds of core/v1 that a body may name: a known kind in the wrong place is a conversion error.
_KNOWN_V1_KINDS = {
    "Pod",
    "Node",
    "Namespace",
    "Event",
    "Binding",
    "Service",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "ServiceAccount",
    "ReplicationController",
    "Status",
    "DeleteOptions",
    "List",
}

PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
# What the namespace controller (pkg/controller/namespace/deletion) writes once the contents
# are gone: (type, reason, message), each with status "False".
_NAMESPACE_DELETION_CONDITIONS = (
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
)
BOOTSTRAP_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # upstream's utilrand alphanums


def rfc3339(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def decode(
    expected: str, body: Any, api_version_wanted: str = "v1", check_types: bool = True
) -> JSON:
    """Check a request body's kind, apiVersion and JSON types like the Go decoder does."""
    if not isinstance(body, dict):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {expected}): couldn't get "
            "version/kind; json parse error: json: cannot unmarshal "
            f"{'array' if isinstance(body, list) else 'value'} into Go value of type struct"
        )
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if kind is None and api_version is None:
        body = {"kind": expected, "apiVersion": api_version_wanted, **body}
    elif not isinstance(kind, str) or not kind:
        raise errors.bad_request(f"Object 'Kind' is missing in '{_short(body)}'")
    elif api_version != api_version_wanted and not (
        expected == "DeleteOptions" and api_version in (None, "meta.k8s.io/v1", "v1")
    ):
        raise errors.bad_request(
            f'{kind} in version "{api_version}" cannot be handled as a {expected}: no kind '
            f'"{kind}" is registered for version "{api_version}" in scheme '
            '"pkg/api/legacyscheme/scheme.go:30"'
        )
    elif kind != expected and expected == "DeleteOptions":
        # DeleteOptions are decoded with the meta group's own scheme, which knows no Pod.
        raise errors.bad_request(
            f'no kind "{kind}" is registered for version "{api_version}" in scheme '
            '"pkg/apis/meta/internalversion/scheme/register.go:27"'
        )
    elif kind != expected:
        if kind in _KNOWN_V1_KINDS:
            raise errors.bad_request(
                f'{kind} in version "v1" cannot be handled as a {expected}: converting '
                f"(v1.{kind}) to (core.{expected}): unknown conversion"
            )
        raise errors.bad_request(
            f'no kind "{kind}" is registered for version "v1" in scheme '
            '"pkg/api/legacyscheme/scheme.go:30"'
        )
    try:
        if check_types:
            validation.check_types(expected, body)
        if expected == CUSTOM_RESOURCE_DEFINITIONS.kind:
            for version in (body.get("spec") or {}).get("versions") or []:
                schema = (version or {}).get("schema") or {}
                crd.check_schema_types(
                    schema.get("openAPIV3Schema"),
                    "CustomResourceDefinition.spec.versions.schema.openAPIV3Schema",
                )
    except validation.DecodeError as exc:
        raise _cannot_handle(expected, exc, api_version_wanted) from None
    body.setdefault("metadata", {})
    return body


def _check_client_readable(kind: str, obj: JSON) -> None:
    """400 for an object the official client could not read back (see validation)."""
    try:
        validation.check_client_readable(kind, obj)
    except validation.DecodeError as exc:
        raise _cannot_handle(kind, exc) from None


def _cannot_handle(
    kind: str, exc: validation.DecodeError, api_version: str = "v1"
) -> errors.ApiError:
    """The decoder's 400 for a body of the right kind whose contents do not fit it."""
    version = api_version.rpartition("/")[2]
    return errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}')


def _short(body: JSON) -> str:
    import json

    text = json.dumps(body)
    return text if len(text) < 80 else text[:80] + " ..."


class Registry:
    """The verbs on top of a :class:`Store`. ``now`` and ``rng`` are injectable for tests."""

    def __init__(
        self,
        store: Store,
        *,
        now: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        fail_binding_fraction: float = 0.0,
        fault_rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.now = now
        self.rng = rng or random.Random()
        # Test-only fault injection (see __main__ --fail-binding-fraction).
        self.fail_binding_fraction = fail_binding_fraction
        # A generator of its own: drawn from ``rng``, which also makes every uid, the k-th
        # binding's fate depended on how many objects (events...) were created before it, so
        # --seed did not make the injected faults repeatable.
        self.fault_rng = fault_rng or random.Random()
        self.failed_bindings = 0
        # The groups CRDs serve, built again when a CRD changed (see custom_groups).
        self._custom: dict[str, dict[str, dict[str, Resource]]] = {}
        self._custom_version = -1

    def bootstrap(self) -> None:
        """The namespaces and system PriorityClasses every cluster starts with."""
        for name in BOOTSTRAP_NAMESPACES:
            if self.store.get("namespaces", ("", name)) is None:
                self.create(NAMESPACES, None, {"metadata": {"name": name}}, trusted=True)
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            if self.store.get("priorityclasses", ("", name)) is None:
                body = {"metadata": {"name": name}, "value": value, "description": description}
                self.create(PRIORITY_CLASSES, None, body, trusted=True)
        # Namespaces left Terminating by a server stopped mid-deletion finish now, and so do
        # CRDs left between their creation and establishment, or being deleted.
        for ns in self.store.list("namespaces", None):
            if ns["metadata"].get("deletionTimestamp"):
                self._schedule(lambda n=ns["metadata"]["name"]: self._finalize_namespace(n))
        for c in self.store.list(CUSTOM_RESOURCE_DEFINITIONS.store_key, None):
            name = c["metadata"]["name"]
            if c["metadata"].get("deletionTimestamp"):
                self._schedule(lambda n=name: self._finalize_crd(n))
            else:
                self._schedule(lambda n=name: self._sync_crd(n))

    # ---- helpers ----------------------------------------------------------------------------

    def _existing(self, res: Resource, namespace: str | None, name: str) -> JSON:
        obj = self.store.get(res.store_key, (namespace or "", name))
        if obj is None:
            raise errors.not_found(res.name, name, res.group)
        return obj

    def _require_namespace(self, res: Resource, namespace: str, name: str) -> None:
        """Admission plugin NamespaceLifecycle: no new content in a missing namespace, nor in
        one being deleted."""
        ns = self.store.get("namespaces", ("", namespace))
        if ns is None:
            raise errors.not_found("namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            refused = errors.forbidden(
                res.name,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                res.group,
            )
            refused.body["details"]["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise refused

    def _generate_name(self, prefix: str) -> str:
        return prefix + "".join(self.rng.choice(_NAME_CHARS) for _ in range(5))

    # ---- create -----------------------------------------------------------------------------

    def create(
        self,
        res: Resource,
        namespace: str | None,
        body: Any,
        *,
        trusted: bool = False,
        field_validation: str = "",
        raw: bytes = b"",
    ) -> JSON:
        """Create an object; ``trusted`` (the server's own bootstrap objects) skips the
        official-client check, so start-up does not import the client's models.
        ``field_validation`` is the request's fieldValidation ("Strict" refuses the unknown
        fields of a custom resource instead of dropping them); ``raw``, the bytes sent (some
        messages about a custom resource's body quote them)."""
        if res.custom is not None:
            obj = self._decode_custom(res, body, field_validation, raw)
        else:
            obj = decode(res.kind, body, res.api_version, not res.stub)
        meta = obj["metadata"]
        if res.namespaced:
            assert namespace is not None
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            self._require_namespace(res, namespace, meta.get("name") or "")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            # Differs from upstream: the storage layer refuses this with a 500 without reason
            # (a client error reported as a server error); we answer 400 BadRequest.
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        # rest.FillObjectMetaSystemFields and BeforeCreate: the server owns these fields.
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(key, None)
        meta["resourceVersion"] = ""  # set by the store when it commits
        meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = rfc3339(self.now())
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(meta["generateName"])
        self._prepare_for_create(res, obj)
        if res is PODS and not trusted:
            self._admit_pod_priority(obj)  # a mutating admission plugin: before validation
        if res.custom is not None:
            errs = self._custom_errors(res, obj, None, "")
        elif res is CUSTOM_RESOURCE_DEFINITIONS:
            errs = crd.crd_errors(obj)
        else:
            errs = validation.metadata_errors(meta, res.name_rule)
            errs += self._validate(res, obj)
        if errs:
            raise errors.invalid(
                str(obj.get("kind") or res.kind) if res.custom else res.kind,
                meta.get("name") or "",
                errs,
                group=res.group,
                name_in_details=bool(meta.get("name")),
            )
        if not trusted:
            self._admit_create(res, obj)
        if self.store.get(res.store_key, (namespace or "", meta["name"])) is not None:
            raise errors.already_exists(res.name, meta["name"], res.group)
        if res.custom is not None:
            stored = self.store.insert(res.store_key, self._to_storage(res, obj))
            return self.present(res, stored)
        obj = defaults.order_object(res.kind, obj, res.api_version)
        if not trusted and not res.stub:
            _check_client_readable(res.kind, obj)
        stored = self.store.insert(res.store_key, obj)
        if res is CUSTOM_RESOURCE_DEFINITIONS:
            self._schedule(lambda: self._sync_crd(meta["name"]))
        return stored

    def _prepare_for_create(self, res: Resource, obj: JSON) -> None:
        obj["metadata"].pop("generation", None)
        if res.custom is not None:
            crd.prepare_for_create(res.custom, obj)
        elif res is CUSTOM_RESOURCE_DEFINITIONS:
            crd.default_crd(obj)
            crd.prepare_crd_for_create(obj)
        elif res is PODS:
            defaults.prepare_pod_for_create(obj)
        elif res is NODES:
            defaults.default_node(obj)
        elif res is NAMESPACES:
            defaults.default_namespace(obj)
            obj["status"] = {"phase": "Active"}
        elif res is EVENTS:
            defaults.default_event(obj)
        elif res is PRIORITY_CLASSES:
            obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
            obj["metadata"]["generation"] = 1
            if obj.get("globalDefault") is False:
                del obj["globalDefault"]  # omitempty

    def _validate(self, res: Resource, obj: JSON) -> list[FieldError]:
        if res is PODS:
            spec = obj.get("spec") or {}
            errs = validation.pod_spec_errors(spec)
            # validation.ValidatePodCreate
            if spec.get("ephemeralContainers"):
                errs.append(
                    FieldError("Forbidden", "spec.ephemeralContainers", "cannot be set on create")
                )
            if spec.get("nodeName") and spec.get("schedulingGates"):
                errs.append(
                    FieldError(
                        "Forbidden",
                        "spec.nodeName",
                        "cannot be set until all schedulingGates have been cleared",
                    )
                )
            return errs
        if res is EVENTS:
            return validation.event_create_errors(obj)
        if res is PRIORITY_CLASSES:
            return validation.priority_class_errors(obj, SYSTEM_PRIORITY_CLASSES)
        return []

    def _admit_create(self, res: Resource, obj: JSON) -> None:
        """Validating admission: after validation, before the storage's AlreadyExists."""
        name = obj["metadata"]["name"]
        if res.custom is not None and res.custom.terminating:
            # The CRD handler's forbidCreateAdmission.
            raise errors.forbidden(
                res.name,
                name,
                "create not allowed while custom resource definition is terminating",
                res.group,
            )
        if res is PRIORITY_CLASSES and obj.get("globalDefault"):
            for pc in self.store.list("priorityclasses", None):
                if pc.get("globalDefault"):
                    raise errors.forbidden(
                        res.name,
                        name,
                        f"PriorityClass {pc['metadata']['name']} is already marked as default. "
                        "Only one default can exist",
                        res.group,
                    )

    def _admit_pod_priority(self, pod: JSON) -> None:
        """Admission plugin Priority (``plugin/pkg/admission/priority``): resolve
        ``spec.priority`` and ``preemptionPolicy`` from the PriorityClass named, or from the
        globalDefault class, or 0; refuse a missing class and a mismatching explicit value."""
        spec = pod["spec"]
        name = pod["metadata"].get("name") or ""  # not validated yet
        class_name = spec.get("priorityClassName")
        policy = None
        if class_name:
            pc = self.store.get("priorityclasses", ("", class_name))
            if pc is None:
                raise errors.forbidden(
                    "pods", name, f"no PriorityClass with name {class_name} was found"
                )
            value, policy = pc["value"], pc.get("preemptionPolicy")
        else:
            # With several globalDefault classes (possible only by racing creates), the one
            # with the smallest value wins, as upstream's getDefaultPriorityClass.
            defaults_ = [
                c for c in self.store.list("priorityclasses", None) if c.get("globalDefault")
            ]
            default = min(defaults_, key=lambda c: c["value"], default=None)
            value = 0
            if default is not None:
                value, policy = default["value"], default.get("preemptionPolicy")
                spec["priorityClassName"] = default["metadata"]["name"]
        if "priority" in spec and spec["priority"] != value:
            raise errors.forbidden(
                "pods",
                name,
                f"the integer value of priority ({spec['priority']}) must not be provided in pod "
                f"spec; priority admission controller computed {value} from the given "
                "PriorityClass name",
            )
        spec["priority"] = value
        if policy is not None:
            spec["preemptionPolicy"] = policy
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")

    # ---- update and patch -------------------------------------------------------------------

    def update(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str = "",
        *,
        field_validation: str = "",
        raw: bytes = b"",
    ) -> JSON:
        if res.custom is not None:
            obj = self._decode_custom(res, body, field_validation, raw)
        else:
            obj = decode(res.kind, body, res.api_version, not res.stub)
        meta = obj["metadata"]
        if res.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        if meta.get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name') or ''}) does not match the name on "
                f"the URL ({name})"
            )
        existing = self._existing(res, namespace, name)
        return self._apply_update(res, existing, obj, subresource)

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch_type: str,
        body: Any,
        subresource: str = "",
        *,
        field_validation: str = "",
    ) -> JSON:
        existing = self._existing(res, namespace, name)
        current = clone(self.present(res, existing))
        try:
            if patch_type == patch.JSON_PATCH:
                patched = patch.json_patch(current, body)
            elif patch_type == patch.MERGE_PATCH:
                if not isinstance(body, dict):
                    raise errors.bad_request(
                        "json: cannot unmarshal array into Go value of type map[string]interface {}"
                    )
                patched = patch.merge_patch(current, body)
            else:
                schema = patch.SCHEMAS.get(res.name, patch.EVENT_SCHEMA)  # metadata only
                patched = patch.strategic_merge_patch(current, body, schema)
        except patch.PatchError:
            raise errors.patch_rejected() from None
        if res.custom is not None:
            obj = self._decode_custom(res, patched, field_validation)
        else:
            obj = decode(res.kind, patched, res.api_version, not res.stub)
        if obj["metadata"].get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({obj['metadata'].get('name') or ''}) does not match "
                f"the name on the URL ({name})"
            )
        return self._apply_update(res, existing, obj, subresource)

    def _apply_update(self, res: Resource, existing: JSON, obj: JSON, subresource: str) -> JSON:
        """GuaranteedUpdate: preconditions, the strategy's PrepareForUpdate, validation, write."""
        old_meta, meta = existing["metadata"], obj["metadata"]
        name = old_meta["name"]
        rv = meta.get("resourceVersion")
        if not rv and (res.custom is not None or res is CUSTOM_RESOURCE_DEFINITIONS):
            # Their strategies do not AllowUnconditionalUpdate (a PATCH carries the version
            # of the object it was applied to).
            raise errors.invalid(
                res.name,
                name,
                [
                    FieldError(
                        "Invalid", "metadata.resourceVersion", "must be specified for an update", 0
                    )
                ],
                group=res.group,
            )
        if rv and rv != old_meta["resourceVersion"]:
            raise errors.conflict(res.name, name, errors.STALE_OBJECT, res.group)
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise errors.conflict(
                res.name,
                name,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                f"{old_meta['uid']}",
                res.group,
            )
        new = obj
        # System fields are the server's (rest.BeforeUpdate).
        for key in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
            "generateName",
        ):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        if res.custom is not None:
            return self._update_custom(res, existing, new, subresource)
        if subresource == "status":
            # Status strategies (pod, node, namespace): the spec stays as stored; metadata
            # such as labels and annotations does change through /status, as upstream.
            new["status"] = obj.get("status") or {}
            if "spec" in existing:
                new["spec"] = clone(existing["spec"])
            if res is PODS:
                # podStatusStrategy: owner references are not touched through /status, and
                # the QoS class (immutable) is kept when the write leaves it out.
                if "ownerReferences" in old_meta:
                    meta["ownerReferences"] = clone(old_meta["ownerReferences"])
                else:
                    meta.pop("ownerReferences", None)
                if not new["status"].get("qosClass") and existing["status"].get("qosClass"):
                    new["status"]["qosClass"] = existing["status"]["qosClass"]
                defaults.default_pod_status(new["status"])
        else:
            if res.has_status:
                new["status"] = clone(existing.get("status") or {})
            if res is PODS:
                defaults.default_pod_spec(new.setdefault("spec", {}))
            elif res is NODES:
                defaults.default_node(new)
            elif res is NAMESPACES:
                defaults.default_namespace(new)
                new["spec"] = clone(existing.get("spec") or {})
            elif res is EVENTS:
                defaults.default_event(new)
            elif res is PRIORITY_CLASSES:
                new.setdefault("preemptionPolicy", "PreemptLowerPriority")
            elif res is CUSTOM_RESOURCE_DEFINITIONS:
                crd.default_crd(new)
                crd.prepare_crd_for_update(new, existing)
        if res is CUSTOM_RESOURCE_DEFINITIONS and subresource != "status":
            errs = crd.crd_errors(new, existing)
        else:
            errs = validation.metadata_errors(new["metadata"], res.name_rule)
        if res is CUSTOM_RESOURCE_DEFINITIONS and subresource == "status":
            accepted = (new.get("status") or {}).get("acceptedNames") or {}
            errs += crd.names_errors(accepted if isinstance(accepted, dict) else {})
        if res is PODS and subresource != "status":
            errs += validation.pod_update_errors(existing, new)
        elif res is PODS:
            errs += validation.pod_status_errors(new["status"])
        if res is PRIORITY_CLASSES:
            errs += validation.priority_class_update_errors(existing, new)
        if errs:
            raise errors.invalid(res.kind, name, errs, group=res.group)
        if res is PODS and new.get("spec") != existing.get("spec"):
            new["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1
        new = defaults.order_object(res.kind, new, res.api_version)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        # (A CRD's schema may hold any JSON, where Python's == takes true for 1.)
        if crd.same(new, existing) if res is CUSTOM_RESOURCE_DEFINITIONS else new == existing:
            return existing  # a no-op update writes nothing (etcd3 GuaranteedUpdate)
        if not res.stub:
            _check_client_readable(res.kind, new)
        if self._delete_during_update(res, existing, new):
            return new
        stored = self.store.replace(res.store_key, new, existing)
        if res is CUSTOM_RESOURCE_DEFINITIONS:
            self._schedule(lambda: self._sync_crd(name))
        return stored

    def _delete_during_update(self, res: Resource, existing: JSON, new: JSON) -> bool:
        """An update that empties the finalizers of an object being deleted (grace 0)
        deletes it instead (store.go ``ShouldDeleteDuringUpdate``, ``errEmptiedFinalizers``):
        the update itself is never stored, so a watch sees DELETED with the last stored state,
        and the client gets the object it sent."""
        old_meta = existing["metadata"]
        if (
            new["metadata"].get("finalizers")
            or not old_meta.get("deletionTimestamp")
            or old_meta.get("deletionGracePeriodSeconds", 0) != 0
        ):
            return False
        self.store.remove(res.store_key, existing)
        self._after_remove(res, existing)
        return True

    def _after_remove(self, res: Resource, obj: JSON) -> None:
        """What an object's removal lets finish: its namespace's deletion; its CRD's."""
        namespace = obj["metadata"].get("namespace") or ""
        if res is PODS or (res.custom is not None and namespace):
            self._purge_namespace_if_empty(namespace)
        if res.custom is not None and res.custom.terminating:
            self._schedule(lambda: self._finalize_crd(res.custom.crd_name))
        if res is CUSTOM_RESOURCE_DEFINITIONS:
            self._crd_removed(obj)

    # ---- delete -----------------------------------------------------------------------------

    def delete(
        self, res: Resource, namespace: str | None, name: str, options: JSON
    ) -> tuple[JSON, JSON]:
        """Delete one object. Returns (the answer body, the object as it was before)."""
        existing = self._existing(res, namespace, name)
        pre = options.get("preconditions") or {}
        if res is CUSTOM_RESOURCE_DEFINITIONS:
            return self._delete_crd(existing, pre), existing
        # Upstream's storage precondition check; its Conflict names the Kind, not the resource.
        if pre.get("uid") and pre["uid"] != existing["metadata"]["uid"]:
            raise errors.conflict(
                res.kind,
                name,
                f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                f"({existing['metadata']['uid']}). The object might have been deleted and then "
                "recreated",
            )
        if (
            pre.get("resourceVersion")
            and pre["resourceVersion"] != existing["metadata"]["resourceVersion"]
        ):
            raise errors.conflict(
                res.kind,
                name,
                f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not "
                f"match the ResourceVersion in record ({existing['metadata']['resourceVersion']})"
                ". The object might have been modified",
            )
        if res is PRIORITY_CLASSES and name in {n for n, _, _ in SYSTEM_PRIORITY_CLASSES}:
            raise errors.forbidden(
                res.name, name, "this is a system priority class and cannot be deleted", res.group
            )
        if res is NAMESPACES:
            return self._delete_namespace(existing), existing
        if res is PODS:
            return self._delete_pod(existing, options.get("gracePeriodSeconds")), existing
        if existing["metadata"].get("finalizers"):
            if existing["metadata"].get("deletionTimestamp"):
                return self.present(res, existing), existing  # already waiting for them
            return self.present(res, self._mark_deleted(res, existing, 0)), existing
        last = self.store.remove(res.store_key, existing)
        self._after_remove(res, existing)
        details: JSON = {"name": name}
        if res.group:
            details["group"] = res.group
        details.update(kind=res.name, uid=last["metadata"]["uid"])
        return errors.success(None, details), existing

    def _mark_deleted(self, res: Resource, existing: JSON, grace: int) -> JSON:
        """Set deletionTimestamp (now + grace) and deletionGracePeriodSeconds; bump generation
        the first time (upstream ``BeforeDelete``)."""
        new = clone(existing)
        meta = new["metadata"]
        if not meta.get("deletionTimestamp") and "generation" in meta:
            meta["generation"] = int(meta["generation"]) + 1
        meta["deletionTimestamp"] = rfc3339(self.now() + grace)
        meta["deletionGracePeriodSeconds"] = grace
        if res.custom is None:
            new = defaults.order_object(res.kind, new, res.api_version)
        return self.store.replace(res.store_key, new, existing)

    def _delete_pod(self, existing: JSON, grace: Any) -> JSON:
        spec, meta = existing.get("spec") or {}, existing["metadata"]
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        grace = int(grace)
        if grace < 0:
            grace = 1
        # podStrategy.CheckGracefulTermination: nothing runs an unbound or finished pod.
        if not spec.get("nodeName") or (existing.get("status") or {}).get("phase") in (
            "Failed",
            "Succeeded",
        ):
            grace = 0
        current = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and current is not None and current <= grace:
            return existing  # already terminating at least as fast
        marked = self._mark_deleted(PODS, existing, grace)
        if grace == 0 and not meta.get("finalizers"):
            last = self.store.remove("pods", marked)
            self._purge_namespace_if_empty(meta.get("namespace") or "")
            return last
        return marked

    def _delete_namespace(self, existing: JSON) -> JSON:
        """Mark the namespace Terminating and answer it; its contents go, then it does.

        Simplified: upstream's namespace controller (kube-controller-manager) does the rest
        asynchronously; here the server does it on its own loop right after answering:
        ``_finalize_namespace`` deletes the pods as the controller does (gracefully: an
        unbound pod goes at once, a bound one stays Terminating until its kubelet deletes it)
        and the events, writes the five deletion conditions the controller writes (one
        MODIFIED), then removes the namespace (DELETED) once no pod is left, the sequence a
        watcher of a real cluster sees.
        """
        name = existing["metadata"]["name"]
        if name in PROTECTED_NAMESPACES:
            raise ApiError(
                errors.status_body(
                    403,
                    "Forbidden",
                    f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                    {"name": name, "kind": "namespaces"},
                )
            )
        if existing["metadata"].get("deletionTimestamp"):
            return existing  # already terminating
        new = clone(existing)
        new["metadata"]["deletionTimestamp"] = rfc3339(self.now())
        new["status"] = {"phase": "Terminating"}
        marked = self.store.replace("namespaces", defaults.order_object("Namespace", new), existing)
        self._schedule(lambda: self._finalize_namespace(name))
        return marked

    def _schedule(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the server's loop after the current request (or now, without one)."""
        import asyncio

        try:
            asyncio.get_running_loop().call_soon(fn)
        except RuntimeError:
            fn()

    def _finalize_namespace(self, name: str) -> None:
        """The namespace controller's work for one Terminating namespace (see above)."""
        ns = self.store.get("namespaces", ("", name))
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        for obj in self.store.list("pods", name):
            current = self.store.get("pods", (name, obj["metadata"]["name"]))
            if current is not None and not current["metadata"].get("deletionTimestamp"):
                self._delete_pod(current, None)
        for obj in self.store.list("events", name):
            current = self.store.get("events", (name, obj["metadata"]["name"]))
            if current is not None:
                self.store.remove("events", current)
        for res in self._custom_storages(namespaced=True):
            for obj in self.store.list(res.store_key, name):
                if self.store.get(res.store_key, (name, obj["metadata"]["name"])) is not None:
                    self.delete(res, name, obj["metadata"]["name"], {})
        ns = self.store.get("namespaces", ("", name)) or ns
        now = rfc3339(self.now())
        new = clone(ns)
        new["status"] = {
            "phase": "Terminating",
            "conditions": [
                {"type": t, "status": "False", "lastTransitionTime": now, "reason": r, "message": m}
                for t, r, m in _NAMESPACE_DELETION_CONDITIONS
            ],
        }
        self.store.replace("namespaces", new, ns)
        self._purge_namespace_if_empty(name)

    def _purge_namespace_if_empty(self, name: str) -> None:
        """The controller's last step: a Terminating namespace it has emptied goes once its
        last (gracefully deleted) pod is gone."""
        ns = self.store.get("namespaces", ("", name))
        if (
            ns is not None
            and ns["metadata"].get("deletionTimestamp")
            and (ns.get("status") or {}).get("conditions")  # the controller has been through
            and not self.store.list("pods", name)
            and not any(
                self.store.list(r.store_key, name) for r in self._custom_storages(namespaced=True)
            )
        ):
            self.store.remove("namespaces", ns)

    def delete_collection(
        self, res: Resource, namespace: str | None, selector: Selector, options: JSON
    ) -> JSON:
        """Delete every matching object; answer their list as it was before the deletion."""
        before = self.store.list(res.store_key, namespace, selector)
        for obj in before:
            meta = obj["metadata"]
            self.delete(res, meta.get("namespace"), meta["name"], {**options, "preconditions": {}})
        return self.list_body(res, before)

    def list_body(self, res: Resource, items: list[JSON], rv: int | None = None) -> JSON:
        version = str(self.store.rv if rv is None else rv)
        if res.custom is not None:
            # An UnstructuredList: items keep kind and apiVersion, and "continue" is there
            # even when empty.
            return {
                "apiVersion": res.api_version,
                "items": [self.present(res, o) for o in items],
                "kind": res.custom.list_kind,
                "metadata": {"continue": "", "resourceVersion": version},
            }
        return {
            "kind": res.list_kind,
            "apiVersion": res.api_version,
            "metadata": {"resourceVersion": version},
            "items": [
                {k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items
            ],
        }

    # ---- binding ----------------------------------------------------------------------------

    def bind(self, namespace: str, url_name: str | None, body: Any) -> JSON:
        """``BindingREST.Create`` / ``assignPod``: set spec.nodeName and PodScheduled=True."""
        binding = decode("Binding", body)
        meta = binding["metadata"]
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        name = meta.get("name") or ""
        if url_name is not None and name != url_name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        errs = validation.binding_errors(binding)
        if errs:
            raise errors.invalid("Binding", name, errs, name_in_details=bool(name))
        if self.fail_binding_fraction and self.fault_rng.random() < self.fail_binding_fraction:
            self.failed_bindings += 1
            raise errors.service_unavailable(
                "the server is currently unable to handle the request (injected fault)"
            )
        existing = self._existing(PODS, namespace, name)
        old_meta = existing["metadata"]
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise errors.conflict(
                "pods",
                name,
                f"StorageError: invalid object, Code: 4, Key: /registry/pods/{namespace}/{name}, "
                "ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in "
                f"precondition: {meta['uid']}, UID in object meta: {old_meta['uid']}",
            )
        if old_meta.get("deletionTimestamp"):
            raise errors.conflict(
                "pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host"
            )
        node_name = (existing.get("spec") or {}).get("nodeName")
        if node_name:
            raise errors.conflict(
                "pods/binding", name, f'pod {name} is already assigned to node "{node_name}"'
            )
        if (existing.get("spec") or {}).get("schedulingGates"):
            raise errors.conflict(
                "pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates"
            )
        new = clone(existing)
        new["spec"]["nodeName"] = binding["target"]["name"]
        if meta.get("annotations"):
            new["metadata"].setdefault("annotations", {}).update(meta["annotations"])
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.insert(
            0,
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(self.now()),
            },
        )
        status["conditions"] = conditions
        self.store.replace("pods", defaults.order_object("Pod", new), existing)
        return errors.success(201)

    # ---- custom resources -------------------------------------------------------------------

    def custom_groups(self) -> dict[str, dict[str, dict[str, Resource]]]:
        """What the CRDs make the server serve: group -> version -> plural -> Resource."""
        version = self.store.last_change(CUSTOM_RESOURCE_DEFINITIONS.store_key)
        if version != self._custom_version:
            groups: dict[str, dict[str, dict[str, Resource]]] = {}
            crds = self.store.list(CUSTOM_RESOURCE_DEFINITIONS.store_key, None)
            for kind in crd.served_kinds(crds):
                res = Resource(
                    kind.plural,
                    kind.singular,
                    kind.kind,
                    kind.namespaced,
                    crd.TERMINATING_VERBS if kind.terminating else crd.VERBS,
                    kind.short_names,
                    kind.categories,
                    kind.storage_hash,
                    has_status=kind.status,
                    group=kind.group,
                    version=kind.version,
                    store_name=kind.store_key,
                    custom=kind,
                )
                groups.setdefault(kind.group, {}).setdefault(kind.version, {})[kind.plural] = res
            self._custom, self._custom_version = groups, version
        return self._custom

    def discovery_groups(self) -> dict[str, dict[str, dict[str, Resource]]]:
        """The custom groups discovery lists: established CRDs only, versions in upstream's
        order (v1 before v1beta1 before v1alpha1), groups by name."""
        out: dict[str, dict[str, dict[str, Resource]]] = {}
        for group in sorted(self.custom_groups()):
            versions = self.custom_groups()[group]
            for version in sorted(versions, key=crd.version_priority):
                served = {
                    plural: res
                    for plural, res in sorted(
                        versions[version].items(), key=lambda item: item[1].store_key
                    )
                    if res.custom is not None and res.custom.established
                }
                if served:
                    out.setdefault(group, {})[version] = served
        return out

    def _custom_storages(self, *, namespaced: bool | None = None) -> list[Resource]:
        """One Resource per CRD (its storage version), for the controllers."""
        out = []
        for versions in self.custom_groups().values():
            for served in versions.values():
                for res in served.values():
                    kind = res.custom
                    if kind is None or kind.version != kind.storage_version:
                        continue
                    if namespaced is None or kind.namespaced == namespaced:
                        out.append(res)
        return out

    def present(self, res: Resource, obj: JSON) -> JSON:
        """A custom resource as the requested version shows it: the stored document with that
        version's apiVersion (conversion ``None``)."""
        if res.custom is None or obj.get("apiVersion") == res.api_version:
            return obj
        return {**obj, "apiVersion": res.api_version}

    def _to_storage(self, res: Resource, obj: JSON) -> JSON:
        """A custom resource as stored: its storage version, keys sorted as Go marshals an
        unstructured object."""
        kind = res.custom
        assert kind is not None
        obj["apiVersion"] = f"{kind.group}/{kind.storage_version}"
        return _sorted_keys(obj)

    def _decode_custom(
        self, res: Resource, body: Any, field_validation: str, raw: bytes = b""
    ) -> JSON:
        assert res.custom is not None
        obj, unknown = crd.decode(res.custom, body, raw)
        if unknown and field_validation == "Strict":
            fields = ", ".join(f'unknown field "{f}"' for f in unknown)
            raise errors.bad_request(
                f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                f"strict decoding error: {fields}"
            )
        return obj

    def _custom_errors(
        self, res: Resource, obj: JSON, old: JSON | None, subresource: str
    ) -> list[FieldError]:
        """The custom resource validator: type meta alone when it fails, else ObjectMeta and
        the schema."""
        assert res.custom is not None
        errs = crd.type_errors(res.custom, obj)
        if errs:
            return errs
        errs = validation.metadata_errors(obj["metadata"], res.name_rule)
        return errs + crd.object_errors(res.custom, obj, old, subresource)

    def _update_custom(self, res: Resource, existing: JSON, obj: JSON, subresource: str) -> JSON:
        """The custom resource strategies' update (main endpoint or ``/status``)."""
        assert res.custom is not None
        current = self.present(res, existing)
        name = existing["metadata"]["name"]
        new = crd.prepare_for_update(res.custom, obj, current, subresource)
        errs = self._custom_errors(res, new, current, subresource)
        if errs:
            raise errors.invalid(str(new.get("kind") or res.kind), name, errs, group=res.group)
        new["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        new = self._to_storage(res, new)
        if crd.same(new, existing):
            return current  # a no-op update writes nothing
        if self._delete_during_update(res, existing, new):
            return self.present(res, new)
        return self.present(res, self.store.replace(res.store_key, new, existing))

    # ---- CRD controllers --------------------------------------------------------------------
    # Upstream they run in kube-apiserver, each with its own informer and work queue; here
    # each step runs on the server's loop right after the write that called for it, so a
    # watcher sees the same sequence of writes.

    def _sync_crd(self, name: str) -> None:
        """The naming controller, then the establishing and API-approval controllers."""
        key = ("", name)
        crds = CUSTOM_RESOURCE_DEFINITIONS.store_key
        current = self.store.get(crds, key)
        if current is None:
            return
        now = rfc3339(self.now())
        names, accepted, established = self._calculate_names(current)
        new = clone(current)
        new["status"]["acceptedNames"] = names
        crd.set_condition(new, "NamesAccepted", *accepted, now)
        crd.set_condition(new, "Established", *established, now)
        if new != current:
            current = self.store.replace(crds, new, current)
        if crd.is_true(current, "NamesAccepted") and not crd.is_true(current, "Established"):
            new = clone(current)
            crd.set_condition(
                new, "Established", "True", "InitialNamesAccepted", _INITIAL_NAMES, now
            )
            current = self.store.replace(crds, new, current)
        group = (current.get("spec") or {}).get("group") or ""
        if crd.is_protected_group(group):
            state, reason = crd.approval_state(current["metadata"].get("annotations") or {})
            status, why = _APPROVAL_CONDITIONS[state]
            new = clone(current)
            crd.set_condition(
                new, "KubernetesAPIApprovalPolicyConformant", status, why, reason, now
            )
            if new != current:
                self.store.replace(crds, new, current)

    def _calculate_names(self, current: JSON) -> tuple[JSON, tuple, tuple]:
        """``calculateNamesAndConditions``: the names no other CRD of the group has taken are
        accepted; the conditions say which were not."""
        spec = current.get("spec") or {}
        requested = spec.get("names") or {}
        accepted = (current.get("status") or {}).get("acceptedNames") or {}
        resources: set[str] = set()
        kinds: set[str] = set()
        for other in self.store.list(CUSTOM_RESOURCE_DEFINITIONS.store_key, None):
            if other["metadata"]["name"] == current["metadata"]["name"]:
                continue
            if (other.get("spec") or {}).get("group") != spec.get("group"):
                continue
            taken = (other.get("status") or {}).get("acceptedNames") or {}
            shorts = taken.get("shortNames") or ()
            resources.update(n for n in (taken.get("plural"), taken.get("singular"), *shorts) if n)
            kinds.update(n for n in (taken.get("kind"), taken.get("listKind")) if n)
        names = dict(accepted)
        problem: tuple[str, str] | None = None

        def fresh(wanted: Any, have: Any, used: set[str]) -> bool:
            return wanted == have or wanted not in used

        for key, used, reason in (
            ("plural", resources, "PluralConflict"),
            ("singular", resources, "SingularConflict"),
        ):
            if fresh(requested.get(key), accepted.get(key), used):
                names[key] = requested.get(key)
            else:
                problem = (reason, f'"{requested.get(key)}" is already in use')
        if requested.get("shortNames") != accepted.get("shortNames"):
            have = set(accepted.get("shortNames") or ())
            clashes = [
                f'"{n}" is already in use'
                for n in requested.get("shortNames") or ()
                if n not in have and n in resources
            ]
            if clashes:
                message = clashes[0] if len(clashes) == 1 else "[" + ", ".join(clashes) + "]"
                problem = ("ShortNamesConflict", message)
            else:
                names["shortNames"] = requested.get("shortNames")
        for key, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
            if fresh(requested.get(key), accepted.get(key), kinds):
                names[key] = requested.get(key)
            else:
                problem = (reason, f'"{requested.get(key)}" is already in use')
        names["categories"] = requested.get("categories")
        ordered = {
            k: names[k]
            for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
            if names.get(k) or k in ("plural", "kind")
        }
        ordered.setdefault("plural", "")
        ordered.setdefault("kind", "")
        if problem is None:
            names_cond = ("True", "NoConflicts", "no conflicts found")
        else:
            names_cond = ("False", *problem)
        established_cond: tuple = ("False", "NotAccepted", "not all names are accepted")
        old = crd.condition(current, "Established")
        if old is not None:
            established_cond = (old.get("status"), old.get("reason"), old.get("message"))
        if established_cond[0] != "True" and names_cond[0] == "True":
            established_cond = ("False", "Installing", _INITIAL_NAMES)
        return ordered, names_cond, established_cond

    def _delete_crd(self, existing: JSON, pre: JSON) -> JSON:
        """The CRD registry's Delete: the first delete only marks the CRD (deletionTimestamp,
        the cleanup finalizer, ``Terminating``); the finalizer controller does the rest."""
        meta = existing["metadata"]
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise errors.conflict(
                CUSTOM_RESOURCE_DEFINITIONS.name,
                meta["name"],
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                f"{meta['uid']}",
                crd.GROUP,
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise errors.conflict(
                CUSTOM_RESOURCE_DEFINITIONS.name,
                meta["name"],
                "Precondition failed: ResourceVersion in precondition: "
                f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                f"{meta['resourceVersion']}",
                crd.GROUP,
            )
        if meta.get("deletionTimestamp"):
            return existing  # already being deleted: its finalizer is pending
        new = clone(existing)
        now = rfc3339(self.now())
        new["metadata"]["deletionTimestamp"] = now
        finalizers = new["metadata"].setdefault("finalizers", [])
        if crd.CLEANUP_FINALIZER not in finalizers:
            finalizers.append(crd.CLEANUP_FINALIZER)
        crd.set_condition(
            new,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            now,
        )
        new = defaults.order_object(CUSTOM_RESOURCE_DEFINITIONS.kind, new, crd.GROUP + "/v1")
        marked = self.store.replace(CUSTOM_RESOURCE_DEFINITIONS.store_key, new, existing)
        self._schedule(lambda: self._finalize_crd(meta["name"]))
        return marked

    def _finalize_crd(self, name: str) -> None:
        """The CRD finalizer: delete the CRD's objects (their own finalizers respected), then
        remove the cleanup finalizer, which deletes the CRD."""
        crds = CUSTOM_RESOURCE_DEFINITIONS.store_key
        current = self.store.get(crds, ("", name))
        if (
            current is None
            or not current["metadata"].get("deletionTimestamp")
            or crd.CLEANUP_FINALIZER not in (current["metadata"].get("finalizers") or [])
        ):
            return
        now = rfc3339(self.now())
        new = clone(current)
        crd.set_condition(
            new,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            now,
        )
        if new != current:
            current = self.store.replace(crds, new, current)
        if crd.is_true(current, "Established"):
            storages = [
                r for r in self._custom_storages() if r.custom and r.custom.crd_name == name
            ]
            for res in storages:
                for obj in self.store.list(res.store_key, None):
                    meta = obj["metadata"]
                    if not meta.get("deletionTimestamp"):
                        self.delete(res, meta.get("namespace"), meta["name"], {})
            if any(self.store.list(res.store_key, None) for res in storages):
                return  # objects with finalizers: this runs again when the last one goes
            outcome = ("False", "InstanceDeletionCompleted", "removed all instances")
        else:
            outcome = ("False", "NeverEstablished", "resource was never established")
        current = self.store.get(crds, ("", name)) or current
        final = clone(current)
        crd.set_condition(final, "Terminating", *outcome, now)
        final["metadata"]["finalizers"] = [
            f for f in final["metadata"]["finalizers"] if f != crd.CLEANUP_FINALIZER
        ]
        if not final["metadata"]["finalizers"]:
            # Emptied finalizers on an object being deleted: it goes (not stored first).
            self.store.remove(crds, current)
            self._crd_removed(current)
        else:
            self.store.replace(crds, final, current)

    def _crd_removed(self, removed: JSON) -> None:
        """A deleted CRD's resource is no longer served: its watches end (upstream tears its
        storage down). Objects still stored (only when the cleanup finalizer was removed by
        hand) stay, invisible, as they stay in etcd upstream."""
        self.store.end_watches(removed["metadata"]["name"], "the resource was removed")


_INITIAL_NAMES = "the initial names have been accepted"
# The API-approval controller's condition for each approval state: (status, reason).
_APPROVAL_CONDITIONS = {
    "Approved": ("True", "ApprovedAnnotation"),
    "Bypassed": ("False", "UnapprovedAnnotation"),
    "Missing": ("False", "MissingAnnotation"),
    "Invalid": ("False", "InvalidAnnotation"),
}


def _sorted_keys(doc: Any) -> Any:
    """JSON with every object's keys sorted (Go's encoding of a map)."""
    if isinstance(doc, dict):
        return {k: _sorted_keys(doc[k]) for k in sorted(doc)}
    if isinstance(doc, list):
        return [_sorted_keys(v) for v in doc]
    return doc
