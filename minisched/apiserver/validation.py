"""Decoding checks and validation of the objects we store.

Upstream: decoding into typed Go structs (``k8s.io/apimachinery/pkg/runtime/serializer/json``:
a wrong JSON type is a 400 "cannot be handled as a Pod"), ``resource.ParseQuantity``
(``staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go``), and
``pkg/apis/core/validation/validation.go`` (``ValidatePodCreate``, ``ValidatePodUpdate``,
``ValidateNode``, ``ValidateNamespace``, ``ValidateEvent``) for the 422 Invalid answers.

Simplified: only the rules a scheduler, its scenarios and kubectl can run into are checked; every
message that appears in the recorded conformance cases is reproduced exactly.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from ..apimachinery import json_kind
from .errors import FieldError

JSON = dict[str, Any]

# --------------------------------------------------------------------------------------------
# Quantities
# --------------------------------------------------------------------------------------------

_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
QUANTITY_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


class QuantityError(ValueError):
    pass


def parse_quantity(text: Any) -> Decimal:
    """Parse a Kubernetes quantity ("100m", "8Gi", "1e3") into a Decimal; raise QuantityError."""
    if isinstance(text, bool):
        raise QuantityError(QUANTITY_ERROR)
    if isinstance(text, (int, float)):
        return Decimal(str(text))
    if not isinstance(text, str):
        raise QuantityError(QUANTITY_ERROR)
    match = _QUANTITY_RE.match(text.strip())
    if not match:
        raise QuantityError(QUANTITY_ERROR)
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation as exc:
        raise QuantityError(QUANTITY_ERROR) from exc
    if suffix in _SUFFIXES:
        return value * _SUFFIXES[suffix]
    exp = re.fullmatch(r"[eE]([-+]?[0-9]+)", suffix)
    if exp and len(exp.group(1).lstrip("+-")) <= 4:
        return value.scaleb(int(exp.group(1)))
    raise QuantityError("unable to parse quantity's suffix")


# --------------------------------------------------------------------------------------------
# Decoding: JSON types must fit the Go structs
# --------------------------------------------------------------------------------------------

# A tiny type schema: "str", "int", "bool", "map" (any object), "strmap" (object of strings),
# "quantities" (object of quantities), "any", a dict (an object with these fields) or a
# one-element list (a list of that type).
_STR, _INT, _BOOL, _ANY = "str", "int", "bool", "any"
_META_TYPES: JSON = {
    "name": _STR,
    "generateName": _STR,
    "namespace": _STR,
    "uid": _STR,
    "resourceVersion": _STR,
    "generation": _INT,
    "creationTimestamp": _ANY,
    "deletionTimestamp": _ANY,
    "deletionGracePeriodSeconds": _INT,
    "labels": "strmap",
    "annotations": "strmap",
    "finalizers": [_STR],
    "ownerReferences": [{"name": _STR, "uid": _STR, "kind": _STR, "apiVersion": _STR}],
}
_RESOURCES = {"requests": "quantities", "limits": "quantities", "claims": [_ANY]}
_CONTAINER_TYPES: JSON = {
    "name": _STR,
    "image": _STR,
    "command": [_STR],
    "args": [_STR],
    "workingDir": _STR,
    "ports": [{"containerPort": _INT, "hostPort": _INT, "protocol": _STR, "name": _STR}],
    "env": [{"name": _STR, "value": _STR}],
    "resources": _RESOURCES,
    "imagePullPolicy": _STR,
    "terminationMessagePath": _STR,
    "terminationMessagePolicy": _STR,
}
_TOLERATION = {
    "key": _STR,
    "operator": _STR,
    "value": _STR,
    "effect": _STR,
    "tolerationSeconds": _INT,
}
_CONDITION = {"type": _STR, "status": _STR, "reason": _STR, "message": _STR}
_POD_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "metadata": _META_TYPES,
    "spec": {
        "containers": [_CONTAINER_TYPES],
        "initContainers": [_CONTAINER_TYPES],
        "restartPolicy": _STR,
        "terminationGracePeriodSeconds": _INT,
        "activeDeadlineSeconds": _INT,
        "dnsPolicy": _STR,
        "nodeSelector": "strmap",
        "nodeName": _STR,
        "hostNetwork": _BOOL,
        "schedulerName": _STR,
        "tolerations": [_TOLERATION],
        "priorityClassName": _STR,
        "priority": _INT,
        "enableServiceLinks": _BOOL,
        "preemptionPolicy": _STR,
        "affinity": "map",
        "securityContext": "map",
        "overhead": "quantities",
        "schedulingGates": [{"name": _STR}],
    },
    "status": {
        "phase": _STR,
        "conditions": [_CONDITION],
        "nominatedNodeName": _STR,
        "qosClass": _STR,
        "podIP": _STR,
        "hostIP": _STR,
    },
}
_NODE_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "metadata": _META_TYPES,
    "spec": {
        "unschedulable": _BOOL,
        "taints": [{"key": _STR, "value": _STR, "effect": _STR}],
        "podCIDR": _STR,
        "podCIDRs": [_STR],
        "providerID": _STR,
    },
    "status": {
        "capacity": "quantities",
        "allocatable": "quantities",
        "conditions": [_CONDITION],
        "addresses": [{"type": _STR, "address": _STR}],
        "nodeInfo": "map",
        "images": [_ANY],
    },
}
_NAMESPACE_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "metadata": _META_TYPES,
    "spec": {"finalizers": [_STR]},
    "status": {"phase": _STR},
}
_EVENT_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "metadata": _META_TYPES,
    "involvedObject": {
        "kind": _STR,
        "namespace": _STR,
        "name": _STR,
        "uid": _STR,
        "apiVersion": _STR,
        "resourceVersion": _STR,
        "fieldPath": _STR,
    },
    "reason": _STR,
    "message": _STR,
    "source": {"component": _STR, "host": _STR},
    "count": _INT,
    "type": _STR,
    "action": _STR,
    "reportingComponent": _STR,
    "reportingInstance": _STR,
}
_BINDING_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "metadata": _META_TYPES,
    "target": {"kind": _STR, "name": _STR, "namespace": _STR, "apiVersion": _STR, "uid": _STR},
}
_DELETE_OPTIONS_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "gracePeriodSeconds": _INT,
    "propagationPolicy": _STR,
    "orphanDependents": _BOOL,
    "preconditions": {"uid": _STR, "resourceVersion": _STR},
    "dryRun": [_STR],
}
_PRIORITY_CLASS_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "metadata": _META_TYPES,
    "value": _INT,
    "globalDefault": _BOOL,
    "description": _STR,
    "preemptionPolicy": _STR,
}
_CRD_NAMES: JSON = {
    "plural": _STR,
    "singular": _STR,
    "kind": _STR,
    "listKind": _STR,
    "shortNames": [_STR],
    "categories": [_STR],
}
_CRD_TYPES: JSON = {
    "kind": _STR,
    "apiVersion": _STR,
    "metadata": _META_TYPES,
    "spec": {
        "group": _STR,
        "names": _CRD_NAMES,
        "scope": _STR,
        "preserveUnknownFields": _BOOL,
        "versions": [
            {
                "name": _STR,
                "served": _BOOL,
                "storage": _BOOL,
                "deprecated": _BOOL,
                "deprecationWarning": _STR,
                "schema": {"openAPIV3Schema": "map"},
                "subresources": {"status": "map", "scale": "map"},
                "additionalPrinterColumns": [
                    {
                        "name": _STR,
                        "type": _STR,
                        "format": _STR,
                        "description": _STR,
                        "priority": _INT,
                        "jsonPath": _STR,
                    }
                ],
                "selectableFields": [{"jsonPath": _STR}],
            }
        ],
        "conversion": {"strategy": _STR, "webhook": "map"},
    },
    "status": "map",
}
TYPES = {
    "CustomResourceDefinition": _CRD_TYPES,
    "PriorityClass": _PRIORITY_CLASS_TYPES,
    "Pod": _POD_TYPES,
    "Node": _NODE_TYPES,
    "Namespace": _NAMESPACE_TYPES,
    "Event": _EVENT_TYPES,
    "Binding": _BINDING_TYPES,
    "DeleteOptions": _DELETE_OPTIONS_TYPES,
}


class DecodeError(ValueError):
    """A body whose JSON types do not fit the Go struct (answered as a 400 BadRequest)."""


def _mismatch(value: Any, path: str, go_type: str) -> DecodeError:
    return DecodeError(
        f"json: cannot unmarshal {json_kind(value)} into Go struct field {path} of type {go_type}"
    )


def _check(value: Any, schema: Any, path: str) -> None:
    if value is None or schema == _ANY:
        return  # null is the zero value in Go: always accepted
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise _mismatch(value, path, "struct")
        for key, sub in schema.items():
            if key in value:
                if value[key] is None and isinstance(sub, dict):
                    # Go decodes null into a struct field as the zero struct; the code after
                    # decoding reads such fields as dicts ({"spec": null} and {"metadata":
                    # null} crashed defaulting: found by fuzzing).
                    value[key] = {}
                _check(value[key], sub, f"{path}.{key}")
        return
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise _mismatch(value, path, "[]")
        for i, item in enumerate(value):
            if item is None and isinstance(schema[0], dict):
                # Go decodes a null element of a []struct as the zero struct; everything
                # after decoding reads elements as dicts (``[null]`` containers crashed the
                # pod validation: found by fuzzing).
                value[i] = item = {}
            _check(item, schema[0], path)
        return
    if schema == _STR and not isinstance(value, str):
        raise _mismatch(value, path, "string")
    if schema == _INT and (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not value.is_integer())
        or abs(value) > 2**63
    ):
        raise _mismatch(value, path, "int64")
    if schema == _BOOL and not isinstance(value, bool):
        raise _mismatch(value, path, "bool")
    if schema in ("map", "strmap", "quantities"):
        if not isinstance(value, dict):
            raise _mismatch(value, path, "map")
        if schema == "strmap":
            for k, v in value.items():
                if not isinstance(v, str):
                    raise _mismatch(v, path + "." + str(k), "string")
        if schema == "quantities":
            for v in value.values():
                try:
                    parse_quantity(v)
                except QuantityError as exc:
                    raise DecodeError(str(exc)) from exc


def check_types(kind: str, obj: JSON) -> None:
    """Raise DecodeError when ``obj`` would not decode into the Go struct for ``kind``."""
    _check(obj, TYPES[kind], kind)


# The official client's model of each kind we store. Its pydantic models are generated from
# the real API's OpenAPI schema, so they know every field's type and which fields are required,
# where the schema above knows only the fields a scheduler reads.
_CLIENT_MODELS = {
    "Pod": "V1Pod",
    "Node": "V1Node",
    "Namespace": "V1Namespace",
    "Event": "CoreV1Event",
    "PriorityClass": "V1PriorityClass",
    "CustomResourceDefinition": "V1CustomResourceDefinition",
}


def check_client_readable(kind: str, obj: JSON) -> None:
    """Raise DecodeError when the official client could not read ``obj`` back.

    Not upstream (the Go decoder and validation reject these bodies field by field). Found by
    fuzzing: without it, one stored object with a wrong type in a field the schema above does
    not list (``spec.volumes: "x"``, ``ownerReferences: [{}]``, a taint without a key...) made
    every list and watch of its resource fail in the official client, so every informer, the
    scheduler's included, stopped working until the object was deleted.
    """
    from kubernetes.client import models  # on first use: keeps the server's start-up fast

    try:
        getattr(models, _CLIENT_MODELS[kind]).from_dict(obj)
    except (ValueError, TypeError, AttributeError) as exc:  # pydantic's ValidationError too
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise DecodeError("; ".join(lines[:3])) from None


# --------------------------------------------------------------------------------------------
# Names and metadata
# --------------------------------------------------------------------------------------------

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',"
    "  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def name_errors(name: str, field: str, rule: str, *, prefix: bool = False) -> list[FieldError]:
    """DNS-1123 label or subdomain check; with ``prefix`` a trailing '-' is allowed
    (upstream's ``maskTrailingDash`` for generateName)."""
    checked = name[:-1] if prefix and len(name) > 1 and name.endswith("-") else name
    if rule == "path":
        # Event names: any valid path segment (upstream ValidatePathSegmentName).
        if name in (".", "..") or "/" in name or "%" in name:
            return [FieldError("Invalid", field, 'may not contain "/" or "%"', name)]
        return []
    if rule == "label":
        if len(checked) > 63 or not _DNS_LABEL.match(checked):
            return [FieldError("Invalid", field, DNS_LABEL_MSG, name)]
    elif len(checked) > 253 or not _DNS_SUBDOMAIN.match(checked):
        return [FieldError("Invalid", field, DNS_SUBDOMAIN_MSG, name)]
    return []


def _qualified_name_errors(key: str, field: str) -> list[FieldError]:
    prefix, slash, name = key.rpartition("/")
    if key.count("/") > 1 or not name or len(name) > 63 or not _QUALIFIED.match(name):
        return [FieldError("Invalid", field, QUALIFIED_NAME_MSG, key)]
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return [FieldError("Invalid", field, "prefix part " + DNS_SUBDOMAIN_MSG, key)]
    return []


def metadata_errors(meta: JSON, name_rule: str) -> list[FieldError]:
    errs: list[FieldError] = []
    generate = meta.get("generateName") or ""
    if generate:
        errs += name_errors(generate, "metadata.generateName", name_rule, prefix=True)
    name = meta.get("name") or ""
    if not name:
        errs.append(FieldError("Required", "metadata.name", "name or generateName is required"))
    else:
        errs += name_errors(name, "metadata.name", name_rule)
    for key, value in (meta.get("labels") or {}).items():
        errs += _qualified_name_errors(key, "metadata.labels")
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            errs.append(FieldError("Invalid", "metadata.labels", LABEL_VALUE_MSG, value))
    for key in meta.get("annotations") or {}:
        errs += _qualified_name_errors(key, "metadata.annotations")
    return errs


# --------------------------------------------------------------------------------------------
# Pods
# --------------------------------------------------------------------------------------------

_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")


def _overcommit_allowed(resource: str) -> bool:
    """Whether the scheduler may promise more of the resource than the limit (upstream:
    IsOvercommitAllowed): native resources (no domain, or a kubernetes.io one) but hugepages.
    An extended resource (``example.com/gpu``) may not be overcommitted."""
    domain, slash, _ = resource.partition("/")
    native = not slash or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return native and not resource.startswith("hugepages-")


def _non_overcommitable_errors(resources: JSON, field: str) -> list[FieldError]:
    """A request of a resource that cannot be overcommitted needs its limit (upstream:
    ValidateResourceRequirements, "Limit must be set for non overcommitable resources")."""
    limits = resources.get("limits") or {}
    return [
        FieldError(
            "Required", f"{field}.limits", "Limit must be set for non overcommitable resources"
        )
        for name in resources.get("requests") or {}
        if name not in limits and not _overcommit_allowed(name)
    ]


def pod_spec_errors(spec: JSON) -> list[FieldError]:
    errs: list[FieldError] = []
    containers = spec.get("containers") or []
    if not containers:
        errs.append(FieldError("Required", "spec.containers"))
    seen: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            base = f"spec.{key}[{i}]"
            name = c.get("name") or ""
            if not name:
                errs.append(FieldError("Required", f"{base}.name"))
            elif name in seen:
                errs.append(FieldError("Duplicate", f"{base}.name", value=name))
            else:
                errs += name_errors(name, f"{base}.name", "label")
            seen.add(name)
            if not c.get("image"):
                errs.append(FieldError("Required", f"{base}.image"))
            errs += _non_overcommitable_errors(c.get("resources") or {}, f"{base}.resources")
    policy = spec.get("restartPolicy")
    if policy not in _RESTART_POLICIES:
        errs.append(
            FieldError(
                "Unsupported",
                "spec.restartPolicy",
                'supported values: "Always", "OnFailure", "Never"',
                policy,
            )
        )
    if spec.get("dnsPolicy") not in _DNS_POLICIES:
        errs.append(
            FieldError(
                "Unsupported",
                "spec.dnsPolicy",
                'supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
                spec.get("dnsPolicy"),
            )
        )
    node_name = spec.get("nodeName")
    if node_name:
        errs += name_errors(node_name, "spec.nodeName", "subdomain")
    return errs


POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)"
)


def _tolerations_update_errors(old: list[JSON], new: list[JSON]) -> list[FieldError]:
    """Existing tolerations stay; only their tolerationSeconds may change (additions are fine)."""
    for old_t in old:
        found = False
        for new_t in new:
            clone = dict(old_t)
            if "tolerationSeconds" in new_t:
                clone["tolerationSeconds"] = new_t["tolerationSeconds"]
            else:
                clone.pop("tolerationSeconds", None)
            if clone == new_t:
                found = True
                break
        if not found:
            return [
                FieldError(
                    "Forbidden",
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return []


def pod_status_errors(status: JSON) -> list[FieldError]:
    """``ValidatePodStatusUpdate``, the part a status writer meets: ``hostIPs`` (unlike
    ``podIPs``, which the v1 conversion derives from ``podIP``) must start with ``hostIP``."""
    host_ips = status.get("hostIPs") or []
    first = host_ips[0] if isinstance(host_ips[0] if host_ips else None, dict) else {}
    if host_ips and first.get("ip") != (status.get("hostIP") or ""):
        return [
            FieldError(
                "Invalid", "status.hostIPs[0].ip", "must be equal to `hostIP`", first.get("ip")
            )
        ]
    return []


def pod_update_errors(old: JSON, new: JSON) -> list[FieldError]:
    """``ValidatePodUpdate``: only images, activeDeadlineSeconds, tolerations (additions) and a
    negative terminationGracePeriodSeconds may change; schedulingGates may only be removed."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    errs = pod_spec_errors(new_spec)
    errs += _tolerations_update_errors(
        old_spec.get("tolerations") or [], new_spec.get("tolerations") or []
    )
    if errs:
        return errs
    # Copy the mutable fields from the new spec into the old one; anything else that still
    # differs is a forbidden change.
    munged = dict(old_spec)
    for key in ("containers", "initContainers"):
        old_list, new_list = old_spec.get(key) or [], new_spec.get(key) or []
        if key in old_spec and len(old_list) == len(new_list):
            munged[key] = [
                {**o, "image": n.get("image")} for o, n in zip(old_list, new_list, strict=True)
            ]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        if key in new_spec:
            munged[key] = new_spec[key]
        else:
            munged.pop(key, None)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if (
        isinstance(old_grace, int)
        and old_grace < 0
        and new_spec.get("terminationGracePeriodSeconds") == 1
    ):
        munged["terminationGracePeriodSeconds"] = 1
    new_gates = new_spec.get("schedulingGates") or []
    if any(g not in (old_spec.get("schedulingGates") or []) for g in new_gates):
        return [
            FieldError(
                "Forbidden",
                "spec.schedulingGates",
                "only deletion is allowed, but found new scheduling gate",
            )
        ]
    if munged != new_spec:
        changed = sorted(k for k in set(munged) | set(new_spec) if munged.get(k) != new_spec.get(k))
        detail = POD_UPDATE_FORBIDDEN + "\n  changed: " + ", ".join(f"spec.{k}" for k in changed)
        return [FieldError("Forbidden", "spec", detail)]
    return []


# --------------------------------------------------------------------------------------------
# Bindings
# --------------------------------------------------------------------------------------------


def binding_errors(binding: JSON) -> list[FieldError]:
    """Upstream answers these with a 500 (no reason); we answer 422 Invalid."""
    target = binding.get("target") or {}
    kind = target.get("kind") or ""
    if kind not in ("", "Node"):
        return [
            FieldError("Unsupported", "target.kind", 'supported values: "Node", "<empty>"', kind)
        ]
    if not target.get("name"):
        return [FieldError("Required", "target.name")]
    return []


# --------------------------------------------------------------------------------------------
# Events (core/v1) and PriorityClasses
# --------------------------------------------------------------------------------------------

_EVENT_LIMIT = 128  # ReportingInstanceLengthLimit, ActionLengthLimit, ReasonLengthLimit
_NOTE_LIMIT = 1024  # NoteLengthLimit


def event_create_errors(event: JSON) -> list[FieldError]:
    """``ValidateEventCreate`` for a core/v1 request: the legacy checks only.

    Old-style events (no ``eventTime``) need matching namespaces; new-style ones also need
    reportingComponent, reportingInstance, action and reason.
    """
    errs: list[FieldError] = []
    namespace = event["metadata"].get("namespace") or ""
    involved = event.get("involvedObject") or {}
    involved_ns = involved.get("namespace") or ""
    mismatch = FieldError(
        "Invalid", "involvedObject.namespace", "does not match event.namespace", involved_ns
    )
    if not event.get("eventTime"):
        if involved_ns:
            if namespace != involved_ns:
                errs.append(mismatch)
        elif namespace not in ("", "default"):
            errs.append(mismatch)
        return errs
    if not involved_ns and namespace not in ("default", "kube-system"):
        errs.append(mismatch)
    component = event.get("reportingComponent") or ""
    if not component:
        errs.append(FieldError("Required", "reportingComponent"))
        errs.append(FieldError("Invalid", "reportingComponent", "name part must be non-empty", ""))
        errs.append(FieldError("Invalid", "reportingComponent", QUALIFIED_NAME_MSG, ""))
    else:
        errs += _qualified_name_errors(component, "reportingComponent")
    for key, limit in (
        ("reportingInstance", _EVENT_LIMIT),
        ("action", _EVENT_LIMIT),
        ("reason", _EVENT_LIMIT),
    ):
        value = event.get(key) or ""
        if not value:
            errs.append(FieldError("Required", key))
        if len(value) > limit:
            errs.append(FieldError("Invalid", key, f"can have at most {limit} characters", ""))
    if len(event.get("message") or "") > _NOTE_LIMIT:
        errs.append(
            FieldError("Invalid", "message", f"can have at most {_NOTE_LIMIT} characters", "")
        )
    return errs


def priority_class_errors(pc: JSON, system: Any) -> list[FieldError]:
    """``ValidatePriorityClass`` (pkg/apis/scheduling/validation)."""
    errs: list[FieldError] = []
    name = pc["metadata"].get("name") or ""
    known = {n: v for n, v, _ in system}
    if name.startswith("system-"):
        if name not in known:
            errs.append(
                FieldError(
                    "Forbidden",
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use "
                    f"only. error: {name} is not a known system priority class",
                )
            )
    elif pc.get("value", 0) > 1000000000:
        errs.append(
            FieldError(
                "Forbidden",
                "value",
                "maximum allowed value of a user defined priority is 1000000000",
            )
        )
    policy = pc.get("preemptionPolicy")
    if policy not in ("PreemptLowerPriority", "Never"):
        errs.append(
            FieldError(
                "Unsupported",
                "preemptionPolicy",
                'supported values: "PreemptLowerPriority", "Never"',
                policy,
            )
        )
    return errs


def priority_class_update_errors(old: JSON, new: JSON) -> list[FieldError]:
    errs = []
    if new.get("value") != old.get("value"):
        errs.append(FieldError("Forbidden", "value", "may not be changed in an update."))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        errs.append(
            FieldError(
                "Invalid", "preemptionPolicy", "field is immutable", new.get("preemptionPolicy")
            )
        )
    return errs
