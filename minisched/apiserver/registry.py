"""What each verb does to each resource: the REST storage strategies.

Upstream: ``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`` (create,
update, delete, deletecollection and graceful deletion), ``pkg/registry/core/pod/strategy.go``
and ``pkg/registry/core/pod/storage/storage.go`` (``BindingREST``: ``assignPod``), the node,
namespace and event strategies, and ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers``
(``create.go``, ``update.go``, ``patch.go``, ``delete.go``) for the order of the checks, which
decides which error a bad request gets.

Everything here runs on the event loop thread (see ``store.py``); a request's checks and its
commit happen without an ``await`` in between, so no other request can interleave.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import defaults, errors, patch, validation
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

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


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
BOOTSTRAP_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # upstream's utilrand alphanums


def rfc3339(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def decode(expected: str, body: Any) -> JSON:
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
        body = {"kind": expected, "apiVersion": "v1", **body}
    elif not isinstance(kind, str) or not kind:
        raise errors.bad_request(f"Object 'Kind' is missing in '{_short(body)}'")
    elif api_version != "v1" and not (
        expected == "DeleteOptions" and api_version in (None, "meta.k8s.io/v1")
    ):
        raise errors.bad_request(
            f'{kind} in version "{api_version}" cannot be handled as a {expected}: no kind '
            f'"{kind}" is registered for version "{api_version}" in scheme '
            '"pkg/api/legacyscheme/scheme.go:30"'
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
        validation.check_types(expected, body)
    except validation.DecodeError as exc:
        raise _cannot_handle(expected, exc) from None
    body.setdefault("metadata", {})
    return body


def _check_client_readable(kind: str, obj: JSON) -> None:
    """400 for an object the official client could not read back (see validation)."""
    try:
        validation.check_client_readable(kind, obj)
    except validation.DecodeError as exc:
        raise _cannot_handle(kind, exc) from None


def _cannot_handle(kind: str, exc: validation.DecodeError) -> errors.ApiError:
    """The decoder's 400 for a body of the right kind whose contents do not fit it."""
    return errors.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: {exc}')


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

    def bootstrap(self) -> None:
        """The namespaces every cluster starts with."""
        for name in BOOTSTRAP_NAMESPACES:
            if self.store.get("namespaces", ("", name)) is None:
                self.create(NAMESPACES, None, {"metadata": {"name": name}}, trusted=True)

    # ---- helpers ----------------------------------------------------------------------------

    def _existing(self, res: Resource, namespace: str | None, name: str) -> JSON:
        obj = self.store.get(res.name, (namespace or "", name))
        if obj is None:
            raise errors.not_found(res.name, name)
        return obj

    def _require_namespace(self, namespace: str) -> None:
        """Admission plugin NamespaceLifecycle: no new content in a missing namespace."""
        if self.store.get("namespaces", ("", namespace)) is None:
            raise errors.not_found("namespaces", namespace)

    def _generate_name(self, prefix: str) -> str:
        return prefix + "".join(self.rng.choice(_NAME_CHARS) for _ in range(5))

    # ---- create -----------------------------------------------------------------------------

    def create(
        self, res: Resource, namespace: str | None, body: Any, *, trusted: bool = False
    ) -> JSON:
        """Create an object; ``trusted`` (the server's own bootstrap objects) skips the
        official-client check, so start-up does not import the client's models."""
        obj = decode(res.kind, body)
        meta = obj["metadata"]
        if res.namespaced:
            assert namespace is not None
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            self._require_namespace(namespace)
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        # rest.FillObjectMetaSystemFields and BeforeCreate: the server owns these fields.
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(key, None)
        meta["resourceVersion"] = ""  # set by the store when it commits
        meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = rfc3339(self.now())
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(meta["generateName"])
        self._prepare_for_create(res, obj)
        errs = validation.metadata_errors(meta, res.name_rule)
        errs += self._validate(res, obj)
        if errs:
            raise errors.invalid(
                res.kind, meta.get("name") or "", errs, name_in_details=bool(meta.get("name"))
            )
        if self.store.get(res.name, (namespace or "", meta["name"])) is not None:
            raise errors.already_exists(res.name, meta["name"])
        obj = defaults.order_object(res.kind, obj)
        if not trusted:
            _check_client_readable(res.kind, obj)
        return self.store.insert(res.name, obj)

    def _prepare_for_create(self, res: Resource, obj: JSON) -> None:
        obj["metadata"].pop("generation", None)
        if res is PODS:
            defaults.prepare_pod_for_create(obj)
        elif res is NODES:
            defaults.default_node(obj)
        elif res is NAMESPACES:
            defaults.default_namespace(obj)
            obj["status"] = {"phase": "Active"}
        elif res is EVENTS:
            defaults.default_event(obj)

    def _validate(self, res: Resource, obj: JSON) -> list[FieldError]:
        if res is PODS:
            return validation.pod_spec_errors(obj.get("spec") or {})
        return []

    # ---- update and patch -------------------------------------------------------------------

    def update(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str = "",
    ) -> JSON:
        obj = decode(res.kind, body)
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
    ) -> JSON:
        existing = self._existing(res, namespace, name)
        current = clone(existing)
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
                patched = patch.strategic_merge_patch(current, body, patch.SCHEMAS[res.name])
        except patch.PatchError:
            raise errors.patch_rejected() from None
        obj = decode(res.kind, patched)
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
        if rv and rv != old_meta["resourceVersion"]:
            raise errors.conflict(res.name, name, errors.STALE_OBJECT)
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise errors.conflict(
                res.name,
                name,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                f"{old_meta['uid']}",
            )
        if subresource == "status":
            # Status strategies: only the status changes; spec and metadata stay as stored.
            new = clone(existing)
            new["status"] = obj.get("status") or {}
        else:
            new = obj
            # System fields are the server's; status is only written through /status.
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
        errs = validation.metadata_errors(new["metadata"], res.name_rule)
        if res is PODS and subresource != "status":
            errs += validation.pod_update_errors(existing, new)
        if errs:
            raise errors.invalid(res.kind, name, errs)
        if res is PODS and new.get("spec") != existing.get("spec"):
            new["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1
        new = defaults.order_object(res.kind, new)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if new == existing:
            return existing  # a no-op update writes nothing (etcd3 GuaranteedUpdate)
        _check_client_readable(res.kind, new)
        stored = self.store.replace(res.name, new, existing)
        return self._finish_if_deleted(res, stored)

    def _finish_if_deleted(self, res: Resource, obj: JSON) -> JSON:
        """An object marked for deletion with grace 0 goes once its last finalizer is gone."""
        meta = obj["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and meta.get("deletionGracePeriodSeconds", 0) == 0
        ):
            return self.store.remove(res.name, obj)
        return obj

    # ---- delete -----------------------------------------------------------------------------

    def delete(
        self, res: Resource, namespace: str | None, name: str, options: JSON
    ) -> tuple[JSON, JSON]:
        """Delete one object. Returns (the answer body, the object as it was before)."""
        existing = self._existing(res, namespace, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != existing["metadata"]["uid"]:
            raise errors.conflict(
                res.name,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                f"{existing['metadata']['uid']}",
            )
        if (
            pre.get("resourceVersion")
            and pre["resourceVersion"] != existing["metadata"]["resourceVersion"]
        ):
            raise errors.conflict(
                res.name,
                name,
                "Precondition failed: ResourceVersion in precondition: "
                f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                f"{existing['metadata']['resourceVersion']}",
            )
        if res is NAMESPACES:
            return self._delete_namespace(existing), existing
        if res is PODS:
            return self._delete_pod(existing, options.get("gracePeriodSeconds")), existing
        if existing["metadata"].get("finalizers"):
            return self._mark_deleted(res, existing, 0), existing
        last = self.store.remove(res.name, existing)
        details = {"name": name, "kind": res.name, "uid": last["metadata"]["uid"]}
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
        new = defaults.order_object(res.kind, new)
        return self.store.replace(res.name, new, existing)

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
            return self.store.remove("pods", marked)
        return marked

    def _delete_namespace(self, existing: JSON) -> JSON:
        """Simplified: upstream marks the namespace Terminating and its controller empties and
        removes it later; we do all of that at once (contents are deleted with grace 0)."""
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
        for res in (PODS, EVENTS):
            for obj in self.store.list(res.name, name):
                current = self.store.get(res.name, (name, obj["metadata"]["name"]))
                if current is not None:
                    self.store.remove(res.name, current)
        new = clone(existing)
        new["metadata"]["deletionTimestamp"] = rfc3339(self.now())
        new["status"] = {"phase": "Terminating"}
        marked = self.store.replace("namespaces", new, existing)
        return self.store.remove("namespaces", marked)

    def delete_collection(
        self, res: Resource, namespace: str | None, selector: Selector, options: JSON
    ) -> JSON:
        """Delete every matching object; answer their list as it was before the deletion."""
        before = self.store.list(res.name, namespace, selector)
        for obj in before:
            meta = obj["metadata"]
            self.delete(res, meta.get("namespace"), meta["name"], {**options, "preconditions": {}})
        return self.list_body(res, before)

    def list_body(self, res: Resource, items: list[JSON], rv: int | None = None) -> JSON:
        return {
            "kind": res.list_kind,
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(self.store.rv if rv is None else rv)},
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
            raise errors.bad_request(
                f"the name of the object ({name}) does not match the name on the URL ({url_name})"
            )
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
