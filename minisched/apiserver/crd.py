"""CustomResourceDefinitions, and the custom resources each one makes the server serve.

Upstream: ``staging/src/k8s.io/apiextensions-apiserver``:

- ``pkg/registry/customresourcedefinition`` (the CRD strategy: defaults, status reset,
  ``generation``, the two-step deletion with the ``customresourcecleanup`` finalizer) and
  ``pkg/apis/apiextensions/validation`` (what a CRD may be; the messages of the common
  mistakes are ported, checked against the real server);
- the controllers that run inside kube-apiserver: ``controller/status`` (naming: the
  ``NamesAccepted`` condition and ``status.acceptedNames``), ``controller/establish``
  (``Established``), ``controller/apiapproval`` (``KubernetesAPIApprovalPolicyConformant``
  for the protected ``*.k8s.io`` groups) and ``controller/finalizer`` (a deleted CRD's objects
  go first);
- the custom resources: ``pkg/apiserver/customresource_handler.go`` (when a resource is
  served, its decoding), ``pkg/registry/customresource`` (strategy, status strategy, validator,
  table convertor), ``pkg/apiserver/schema`` (structural schemas: ``pruning``, ``defaulting``,
  the ``objectmeta`` coercion) and kube-openapi's ``validation/validate`` (the schema
  validation and its messages, mapped to field errors by ``pkg/apiserver/validation``).

Everything here is pure: functions of JSON documents. The registry does the storing, and runs
the controllers' steps on the server's loop (see ``Registry._sync_crd``).

Simplified: no conversion webhooks (every version's objects are the same document with another
``apiVersion``, upstream's ``strategy: None``), no ``scale`` subresource, no CEL
(``x-kubernetes-validations``), no ``x-kubernetes-list-type`` checks, no defaulting on read
(a default added to a schema later shows only on the next write), no ``patternProperties``,
no ``Warning`` header for ``fieldValidation=Warn`` (unknown fields are dropped silently).
"""

from __future__ import annotations

import base64
import calendar
import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from ..apimachinery import json_kind
from . import errors, validation
from .errors import FieldError

JSON = dict[str, Any]

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
# The verbs of a served custom resource, in the order discovery lists them (upstream's order,
# not sorted), and those left while its CRD is being deleted.
VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
TERMINATING_VERBS = ("delete", "deletecollection", "get", "list", "watch")

_MISSING = object()  # "no old value" for ratcheting: not the same as a JSON null


# --------------------------------------------------------------------------------------------
# Conditions
# --------------------------------------------------------------------------------------------


def condition(crd: JSON, kind: str) -> JSON | None:
    for cond in (crd.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def is_true(crd: JSON, kind: str) -> bool:
    cond = condition(crd, kind)
    return cond is not None and cond.get("status") == "True"


def set_condition(crd: JSON, kind: str, status: str, reason: str, message: str, now: str) -> None:
    """``SetCRDCondition``: replace or append; lastTransitionTime moves only with the status."""
    conditions = crd.setdefault("status", {}).get("conditions") or []
    crd["status"]["conditions"] = conditions
    for cond in conditions:
        if cond.get("type") == kind:
            if cond.get("status") != status or not cond.get("lastTransitionTime"):
                cond["lastTransitionTime"] = now
            cond.update(status=status, reason=reason, message=message)
            return
    conditions.append(
        {
            "type": kind,
            "status": status,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
    )


# --------------------------------------------------------------------------------------------
# Versions
# --------------------------------------------------------------------------------------------

_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


def version_priority(name: str) -> tuple:
    """``version.CompareKubeAwareVersionStrings`` as a sort key: v2, v1, v1beta2, v1beta1,
    v1alpha1, then anything else alphabetically."""
    match = _KUBE_VERSION.match(name)
    if not match:
        return (3, 0, 0, name)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), name)


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """``discovery.StorageVersionHash``: the first 8 bytes of sha256("group/version/kind")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


# --------------------------------------------------------------------------------------------
# What a CRD serves
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CustomKind:
    """One served version of a CRD: what the handlers need to serve its objects."""

    crd_name: str
    group: str
    version: str
    storage_version: str
    plural: str
    singular: str
    kind: str
    list_kind: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    namespaced: bool
    schema: JSON  # the version's openAPIV3Schema
    status: bool  # the status subresource
    columns: tuple[JSON, ...]  # additionalPrinterColumns
    selectable: tuple[str, ...]  # selectableFields' jsonPaths
    storage_hash: str
    established: bool  # listed in discovery only then
    terminating: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def store_key(self) -> str:
        # One storage for all of a CRD's versions, as upstream (keyed by the CRD's name).
        return self.crd_name


def served_kinds(crds: list[JSON]) -> list[CustomKind]:
    """The versions the CRDs make the server serve. Upstream's handler serves a CRD once
    ``NamesAccepted`` or ``Established`` is true; discovery waits for ``Established``."""
    kinds = []
    for crd in crds:
        if not (is_true(crd, "NamesAccepted") or is_true(crd, "Established")):
            continue
        spec, status = crd.get("spec") or {}, crd.get("status") or {}
        names = status.get("acceptedNames") or {}
        requested = spec.get("names") or {}
        versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
        storage = next((v["name"] for v in versions if v.get("storage")), "")
        for v in versions:
            if not v.get("served"):
                continue
            kinds.append(
                CustomKind(
                    crd_name=crd["metadata"]["name"],
                    group=spec.get("group") or "",
                    version=v["name"],
                    storage_version=storage,
                    plural=names.get("plural") or requested.get("plural") or "",
                    singular=names.get("singular") or "",
                    kind=names.get("kind") or requested.get("kind") or "",
                    list_kind=names.get("listKind") or f"{requested.get('kind') or ''}List",
                    short_names=tuple(names.get("shortNames") or ()),
                    categories=tuple(names.get("categories") or ()),
                    namespaced=spec.get("scope") == "Namespaced",
                    schema=((v.get("schema") or {}).get("openAPIV3Schema")) or {},
                    status="status" in (v.get("subresources") or {}),
                    columns=tuple(v.get("additionalPrinterColumns") or ()),
                    selectable=tuple(
                        f["jsonPath"] for f in v.get("selectableFields") or () if f.get("jsonPath")
                    ),
                    storage_hash=storage_version_hash(
                        spec.get("group") or "", storage, requested.get("kind") or ""
                    )
                    if storage
                    else "",
                    established=is_true(crd, "Established"),
                    terminating=is_true(crd, "Terminating"),
                )
            )
    return kinds


# --------------------------------------------------------------------------------------------
# The CRD strategy: defaults, create, update
# --------------------------------------------------------------------------------------------


def default_crd(crd: JSON) -> None:
    """``SetDefaults_CustomResourceDefinitionSpec``: singular, listKind, conversion."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind") if isinstance(names.get("kind"), str) else ""
        if not names.get("singular"):
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    if not spec.get("conversion"):
        spec["conversion"] = {"strategy": "None"}
    service = ((spec["conversion"].get("webhook") or {}).get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


def _storage_version(crd: JSON) -> str | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("storage"):
            return v.get("name")
    return None


def prepare_crd_for_create(crd: JSON) -> None:
    """``strategy.PrepareForCreate``: the status is the server's; generation starts at 1."""
    crd["metadata"]["generation"] = 1
    crd["status"] = {"conditions": None, "acceptedNames": {"plural": "", "kind": ""}}
    storage = _storage_version(crd)
    if storage is not None:
        crd["status"]["storedVersions"] = [storage]


def prepare_crd_for_update(new: JSON, old: JSON) -> None:
    """``strategy.PrepareForUpdate``: the status stays; a spec change bumps generation; a new
    storage version joins ``storedVersions``."""
    new["status"] = json.loads(json.dumps(old.get("status") or {}))
    generation = int(old["metadata"].get("generation") or 0)
    new["metadata"]["generation"] = generation + (not same(new.get("spec"), old.get("spec")))
    storage = _storage_version(new)
    stored = new["status"].setdefault("storedVersions", [])
    if storage is not None and storage not in stored:
        stored.append(storage)


# --------------------------------------------------------------------------------------------
# CRD validation (the common mistakes, upstream's messages)
# --------------------------------------------------------------------------------------------

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
_SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def _dns1035_errors(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _DNS1035.match(value):
        out.append(DNS1035_MSG)
    return out


def is_protected_group(group: str) -> bool:
    """``IsProtectedCommunityGroup``: k8s.io and kubernetes.io and their subdomains."""
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def approval_state(annotations: JSON) -> tuple[str, str]:
    """``GetAPIApprovalState``: (state, reason) for the api-approved annotation."""
    value = str((annotations or {}).get(APPROVAL_ANNOTATION) or "")
    if not value:
        return "Missing", (
            f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", see '
            "https://github.com/kubernetes/enhancements/pull/1111"
        )
    if value.startswith("unapproved"):
        return "Bypassed", f"not approved: {errors._go_quote(value)}"
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s]+", value):
        return "Approved", f"approved in {value}"
    return "Invalid", (
        f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}" with either a '
        'URL or a reason starting with "unapproved", see '
        "https://github.com/kubernetes/enhancements/pull/1111"
    )


def _go_version_struct(version: JSON, lifted: set[str]) -> JSON:
    """A version as Go prints the internal struct (``%v`` of []CustomResourceDefinitionVersion
    in the "storage version" message). Schema, subresources and columns equal in every
    version live at the top level internally, so they print as null."""
    out: JSON = {
        "Name": version.get("name") or "",
        "Served": bool(version.get("served")),
        "Storage": bool(version.get("storage")),
        "Deprecated": bool(version.get("deprecated")),
        "DeprecationWarning": version.get("deprecationWarning"),
    }
    for key, go in (
        ("schema", "Schema"),
        ("subresources", "Subresources"),
        ("additionalPrinterColumns", "AdditionalPrinterColumns"),
        ("selectableFields", "SelectableFields"),
    ):
        out[go] = None if key in lifted else version.get(key)
    return out


def _lifted(versions: list[JSON]) -> tuple[set[str], str | None]:
    """Which per-version fields upstream's conversion to the internal type lifts to the top
    (equal in every version), and the schema's path in messages."""
    lifted = set()
    for key in ("schema", "subresources", "additionalPrinterColumns", "selectableFields"):
        values = [v.get(key) for v in versions]
        if versions and all(x == values[0] for x in values):
            lifted.add(key)
    return lifted, ("spec.validation" if "schema" in lifted else None)


def crd_errors(crd: JSON, old: JSON | None = None) -> list[FieldError]:
    """``ValidateCustomResourceDefinition`` (and ``...Update`` with ``old``), for what a CRD
    here can get wrong: names, group, scope, versions, schemas, printer columns, approval."""
    meta, spec = crd["metadata"], crd.get("spec") or {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    group = spec.get("group") if isinstance(spec.get("group"), str) else ""
    plural = names.get("plural") if isinstance(names.get("plural"), str) else ""
    # ValidateObjectMeta, with the CRD's own name rule on create (not on update: the name
    # and spec.group and spec.names.plural are all immutable then).
    errs = validation.metadata_errors(meta, "subdomain")
    name = meta.get("name") or ""
    if old is None and name and name != f"{plural}.{group}":
        after = max((i + 1 for i, e in enumerate(errs) if e.field == "metadata.name"), default=0)
        rule = FieldError(
            "Invalid", "metadata.name", 'must be spec.names.plural+"."+spec.group', name
        )
        errs.insert(after, rule)
    errs += _spec_errors(spec, names, group)
    if old is not None:
        old_spec = old.get("spec") or {}
        old_names = old_spec.get("names") or {}
        if is_true(old, "Established"):
            errs += _immutable(spec.get("scope"), old_spec.get("scope"), "spec.scope")
            errs += _immutable(names.get("kind"), old_names.get("kind"), "spec.names.kind")
        errs += _immutable(group, old_spec.get("group"), "spec.group")
        errs += _immutable(plural, old_names.get("plural"), "spec.names.plural")
    status = crd.get("status") or {}
    errs += names_errors(status.get("acceptedNames") or {}, "status.acceptedNames")
    errs += _stored_versions_errors(status.get("storedVersions"), spec.get("versions") or [])
    if is_protected_group(group):
        state, reason = approval_state(meta.get("annotations") or {})
        old_state = approval_state(old["metadata"].get("annotations") or {})[0] if old else None
        field = f"metadata.annotations[{APPROVAL_ANNOTATION}]"
        if state != old_state:
            if state == "Missing":
                errs.append(FieldError("Required", field, reason))
            elif state == "Invalid":
                value = (meta.get("annotations") or {}).get(APPROVAL_ANNOTATION)
                errs.append(FieldError("Invalid", field, reason, value))
    if spec.get("preserveUnknownFields") is True:
        errs.append(
            FieldError(
                "Invalid",
                "spec.preserveUnknownFields",
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
                True,
            )
        )
    return errs


def _immutable(new: Any, old: Any, field: str) -> list[FieldError]:
    if new != old:
        return [FieldError("Invalid", field, "field is immutable", new)]
    return []


def _spec_errors(spec: JSON, names: JSON, group: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not group:
        errs.append(FieldError("Required", "spec.group"))
    elif not _DNS1123_SUBDOMAIN.match(group) or len(group) > 253:
        errs.append(FieldError("Invalid", "spec.group", validation.DNS_SUBDOMAIN_MSG, group))
    elif "." not in group:
        errs.append(
            FieldError("Invalid", "spec.group", "should be a domain with at least one dot", group)
        )
    scope = spec.get("scope") or ""
    if not scope:
        errs.append(FieldError("Required", "spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(
            FieldError(
                "Unsupported", "spec.scope", 'supported values: "Cluster", "Namespaced"', scope
            )
        )
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    lifted, top_path = _lifted(versions)
    storage_count, seen, unique = 0, set(), True
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        vname = version.get("name") or ""
        storage_count += bool(version.get("storage"))
        unique = unique and vname not in seen
        seen.add(vname)
        if not ((version.get("schema") or {}).get("openAPIV3Schema")):
            errs.append(FieldError("Required", f"{path}.schema.openAPIV3Schema"))
        for message in _dns1035_errors(vname):
            errs.append(FieldError("Invalid", f"{path}.name", message, vname))
        if version.get("deprecationWarning") is not None and not version.get("deprecated"):
            errs.append(
                FieldError(
                    "Invalid",
                    f"{path}.deprecationWarning",
                    "can only be set for deprecated versions",
                    version["deprecationWarning"],
                )
            )
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema and top_path is None:
            errs += schema_errors(schema, f"{path}.schema.openAPIV3Schema")
        if "additionalPrinterColumns" not in lifted:
            for j, col in enumerate(version.get("additionalPrinterColumns") or []):
                errs += _column_errors(col, f"{path}.additionalPrinterColumns[{j}]")
    go_versions = [_go_version_struct(v, lifted) for v in versions]
    if not unique:
        errs.append(
            FieldError("Invalid", "spec.versions", "must contain unique version names", go_versions)
        )
    if storage_count != 1:
        errs.append(
            FieldError(
                "Invalid",
                "spec.versions",
                "must have exactly one version marked as storage version",
                go_versions,
            )
        )
    # Upstream's internal type has the first version's name in spec.version.
    if versions and _dns1035_errors(versions[0].get("name") or ""):
        first = versions[0].get("name") or ""
        for message in _dns1035_errors(first):
            errs.append(FieldError("Invalid", "spec.version", message, first))
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(FieldError("Required", f"spec.names.{key}"))
    errs += names_errors(names, "spec.names")
    if top_path is not None and versions:
        schema = (versions[0].get("schema") or {}).get("openAPIV3Schema")
        if schema:
            errs += schema_errors(schema, f"{top_path}.openAPIV3Schema")
    if "additionalPrinterColumns" in lifted and versions:
        for j, col in enumerate(versions[0].get("additionalPrinterColumns") or []):
            errs += _column_errors(col, f"spec.additionalPrinterColumns[{j}]")
    conversion = spec.get("conversion") or {}
    strategy = conversion.get("strategy") or ""
    if not strategy:
        errs.append(FieldError("Required", "spec.conversion.strategy"))
    elif strategy not in ("None", "Webhook"):
        errs.append(
            FieldError(
                "Unsupported",
                "spec.conversion.strategy",
                'supported values: "None", "Webhook"',
                strategy,
            )
        )
    elif strategy == "Webhook":
        # Not implemented: conversion webhooks. Refused rather than accepted and ignored.
        errs.append(
            FieldError(
                "Unsupported",
                "spec.conversion.strategy",
                "conversion webhooks are not supported by the minisched API server",
                strategy,
            )
        )
    return errs


def names_errors(names: JSON, path: str = "status.acceptedNames") -> list[FieldError]:
    """``ValidateCustomResourceDefinitionNames``."""
    errs: list[FieldError] = []
    for key in ("plural", "singular"):
        value = names.get(key)
        if isinstance(value, str) and value and _dns1035_errors(value):
            errs.append(
                FieldError("Invalid", f"{path}.{key}", ",".join(_dns1035_errors(value)), value)
            )
    for key in ("kind", "listKind"):
        value = names.get(key)
        if isinstance(value, str) and value and _dns1035_errors(value.lower()):
            detail = "may have mixed case, but should otherwise match: " + ",".join(
                _dns1035_errors(value.lower())
            )
            errs.append(FieldError("Invalid", f"{path}.{key}", detail, value))
    for i, short in enumerate(names.get("shortNames") or []):
        if _dns1035_errors(str(short)):
            errs.append(
                FieldError(
                    "Invalid",
                    f"{path}.shortNames[{i}]",
                    ",".join(_dns1035_errors(str(short))),
                    short,
                )
            )
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(
            FieldError(
                "Invalid",
                f"{path}.listKind",
                "kind and listKind may not be the same",
                names["kind"],
            )
        )
    for i, category in enumerate(names.get("categories") or []):
        if _dns1035_errors(str(category)):
            errs.append(
                FieldError(
                    "Invalid",
                    f"{path}.categories[{i}]",
                    ",".join(_dns1035_errors(str(category))),
                    category,
                )
            )
    return errs


def _stored_versions_errors(stored: Any, versions: list[JSON]) -> list[FieldError]:
    path = "status.storedVersions"
    if not stored:
        return [FieldError("Invalid", path, "must have at least one stored version", stored)]
    errs = []
    remaining = {v: i for i, v in enumerate(stored)}
    for v in versions:
        if v.get("storage") and v.get("name") not in remaining:
            errs.append(
                FieldError(
                    "Invalid", path, f"must have the storage version {v.get('name')}", stored
                )
            )
        remaining.pop(v.get("name"), None)
    for v, i in remaining.items():
        errs.append(
            FieldError(
                "Invalid",
                f"{path}[{i}]",
                f"missing from spec.versions; {v} was previously a storage version, and must "
                f"remain in spec.versions until a storage migration ensures no data remains "
                f"persisted in {v} and removes {v} from status.storedVersions",
                v,
            )
        )
    return errs


def _column_errors(col: JSON, path: str) -> list[FieldError]:
    """``ValidateCustomResourceColumnDefinition``."""
    errs = []
    if not col.get("name"):
        errs.append(FieldError("Required", f"{path}.name"))
    kinds = ",".join(_COLUMN_TYPES)
    if not col.get("type"):
        errs.append(FieldError("Required", f"{path}.type", f"must be one of {kinds}"))
    elif col["type"] not in _COLUMN_TYPES:
        errs.append(FieldError("Invalid", f"{path}.type", f"must be one of {kinds}", col["type"]))
    if col.get("format") and col["format"] not in _COLUMN_FORMATS:
        errs.append(
            FieldError(
                "Invalid",
                f"{path}.format",
                f"must be one of {','.join(_COLUMN_FORMATS)}",
                col["format"],
            )
        )
    if not col.get("jsonPath"):
        errs.append(FieldError("Required", f"{path}.JSONPath"))
    else:
        try:
            parse_jsonpath(col["jsonPath"])
        except ValueError as exc:
            errs.append(FieldError("Invalid", f"{path}.JSONPath", str(exc), col["jsonPath"]))
    return errs


# --------------------------------------------------------------------------------------------
# Structural schemas: what a CRD's openAPIV3Schema must be
# --------------------------------------------------------------------------------------------

# The Go types of JSONSchemaProps' fields: a schema is decoded into that struct, so a field of
# the wrong JSON type is a 400 before any validation (and nothing after meets one).
_STRING_FIELDS = ("id", "$schema", "$ref", "description", "type", "format", "title", "pattern")
_NUMBER_FIELDS = ("maximum", "minimum", "multipleOf")
_INT_FIELDS = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties")
_BOOL_FIELDS = (
    "exclusiveMaximum",
    "exclusiveMinimum",
    "uniqueItems",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
)


def check_schema_types(schema: Any, path: str) -> None:
    """Raise ``validation.DecodeError`` where ``schema`` would not decode into Go's
    ``JSONSchemaProps`` (upstream's 400 "cannot unmarshal")."""

    def fail(value: Any, field: str, go: str) -> validation.DecodeError:
        return validation.DecodeError(
            f"json: cannot unmarshal {json_kind(value)} into Go struct field {field} of type {go}"
        )

    stack = [(schema, path)]
    while stack:
        node, where = stack.pop()
        if node is None:
            continue
        if not isinstance(node, dict):
            raise fail(node, where, "v1.JSONSchemaProps")
        for key, value in node.items():
            field = f"{where}.{key}"
            if value is None:
                continue
            if key in _STRING_FIELDS and not isinstance(value, str):
                raise fail(value, field, "string")
            if key in _NUMBER_FIELDS and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                raise fail(value, field, "float64")
            if key in _INT_FIELDS and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not float(value).is_integer()
            ):
                raise fail(value, field, "int64")
            if key in _BOOL_FIELDS and not isinstance(value, bool):
                raise fail(value, field, "bool")
            if key in ("required", "x-kubernetes-list-map-keys") and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                raise fail(value, field, "[]string")
            if key in ("x-kubernetes-list-type", "x-kubernetes-map-type") and not isinstance(
                value, str
            ):
                raise fail(value, field, "string")
            if key in ("enum", "x-kubernetes-validations") and not isinstance(value, list):
                raise fail(value, field, "[]v1.JSON")
            if key == "externalDocs" and not isinstance(value, dict):
                raise fail(value, field, "v1.ExternalDocumentation")
            if key in ("allOf", "oneOf", "anyOf"):
                if not isinstance(value, list):
                    raise fail(value, field, "[]v1.JSONSchemaProps")
                stack.extend((v, field) for v in value)
            elif key == "not":
                stack.append((value, field))
            elif key in ("properties", "patternProperties", "definitions"):
                if not isinstance(value, dict):
                    raise fail(value, field, "map[string]v1.JSONSchemaProps")
                stack.extend((v, field) for v in value.values())
            elif key in ("additionalProperties", "additionalItems"):
                if not isinstance(value, (bool, dict)):
                    raise fail(value, field, "v1.JSONSchemaPropsOrBool")
                if isinstance(value, dict):
                    stack.append((value, field))
            elif key == "items":
                if not isinstance(value, (dict, list)):
                    raise fail(value, field, "v1.JSONSchemaPropsOrArray")
                stack.extend((v, field) for v in (value if isinstance(value, list) else [value]))
            elif key == "dependencies":
                if not isinstance(value, dict):
                    raise fail(value, field, "v1.JSONSchemaDependencies")
                for dep in value.values():
                    if isinstance(dep, dict):
                        stack.append((dep, field))
                    elif not (isinstance(dep, list) and all(isinstance(v, str) for v in dep)):
                        raise fail(dep, field, "v1.JSONSchemaPropsOrStringArray")


def _props(schema: JSON) -> dict[str, JSON]:
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def _additional(schema: JSON) -> JSON | None:
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _items(schema: JSON) -> JSON | None:
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def schema_errors(schema: JSON, path: str) -> list[FieldError]:
    """The structural-schema rules (``ValidateStructural``, sorted by message as upstream) and
    the OpenAPI checks that matter here: valid types, defaults that fit their schema."""
    errs: list[FieldError] = []
    if not isinstance(schema, dict):
        return [FieldError("Invalid", path, "must be an object", schema)]
    if schema.get("nullable"):
        errs.append(
            FieldError("Forbidden", f"{path}.nullable", "nullable cannot be true at the root")
        )
    structural: list[FieldError] = []
    _structural(schema, "root", path, structural)
    structural.sort(key=str)
    errs += structural
    openapi: list[FieldError] = []
    _openapi(schema, path, openapi, True)
    errs += openapi
    if not errs:
        errs += _default_errors(schema, path)
    return errs


def _structural(schema: JSON, level: str, path: str, errs: list[FieldError]) -> None:
    kind = schema.get("type") or ""
    if kind == "array" and _items(schema) is None:
        errs.append(FieldError("Required", f"{path}.items", "must be specified"))
    items = _items(schema)
    if items is not None:
        _structural(items, "item", f"{path}.items", errs)
    for key, sub in _props(schema).items():
        if isinstance(sub, dict):
            _structural(sub, "field", f"{path}.properties[{key}]", errs)
    extra = _additional(schema)
    if extra is not None:
        if level == "root":
            errs.append(
                FieldError(
                    "Forbidden", f"{path}.additionalProperties", "must not be used at the root"
                )
            )
        _structural(extra, "field", f"{path}.additionalProperties", errs)
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if int_or_string and preserve:
        errs.append(
            FieldError(
                "Invalid",
                f"{path}.x-kubernetes-preserve-unknown-fields",
                "must be false if x-kubernetes-int-or-string is true",
                True,
            )
        )
    if not kind and not int_or_string and not preserve:
        where = {
            "root": "must not be empty at the root",
            "item": "must not be empty for specified array items",
            "field": "must not be empty for specified object fields",
        }[level]
        errs.append(FieldError("Required", f"{path}.type", where))
    if level == "root" and kind and kind != "object":
        errs.append(FieldError("Invalid", f"{path}.type", "must be object at the root", kind))
    if level == "root":
        for key in ("kind", "apiVersion"):
            sub = _props(schema).get(key)
            if isinstance(sub, dict) and sub.get("type") != "string":
                errs.append(
                    FieldError(
                        "Invalid",
                        f"{path}.properties[{key}].type",
                        "must be string",
                        sub.get("type") or "",
                    )
                )
        meta = _props(schema).get("metadata")
        if isinstance(meta, dict):
            if meta.get("type") != "object":
                errs.append(
                    FieldError(
                        "Invalid",
                        f"{path}.properties[metadata].type",
                        "must be object",
                        meta.get("type") or "",
                    )
                )
            rest = {k: v for k, v in meta.items() if k != "type"}
            props = set(_props(meta))
            if props and props <= {"name", "generateName"}:
                rest.pop("properties", None)
            if rest:
                errs.append(
                    FieldError(
                        "Forbidden",
                        f"{path}.properties[metadata]",
                        "must not specify anything other than name and generateName, but "
                        "metadata is implicitly specified",
                    )
                )
    elif "metadata" in _props(schema) and schema.get("x-kubernetes-embedded-resource") is not True:
        pass  # upstream allows a nested "metadata" field unless it is an embedded resource


def _openapi(schema: JSON, path: str, errs: list[FieldError], root: bool) -> None:
    kind = schema.get("type")
    if kind and kind not in _SCHEMA_TYPES and kind != "null":
        errs.append(
            FieldError(
                "Unsupported",
                f"{path}.type",
                "supported values: " + ", ".join(f'"{t}"' for t in _SCHEMA_TYPES),
                kind,
            )
        )
    if schema.get("uniqueItems"):
        errs.append(
            FieldError(
                "Forbidden",
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    if _additional(schema) is not None and _props(schema):
        errs.append(
            FieldError(
                "Forbidden",
                f"{path}.additionalProperties",
                "additionalProperties and properties are mutual exclusive",
            )
        )
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as exc:
            errs.append(
                FieldError(
                    "Invalid",
                    f"{path}.pattern",
                    f"must be a valid regular expression, but isn't: {exc}",
                    pattern,
                )
            )
    for key, sub in _props(schema).items():
        if isinstance(sub, dict):
            if root and key in ("metadata", "kind", "apiVersion") and "default" in sub:
                errs.append(
                    FieldError(
                        "Forbidden",
                        f"{path}.properties[{key}].default",
                        f"must not be set in top-level {key}",
                    )
                )
            _openapi(sub, f"{path}.properties[{key}]", errs, False)
    extra = _additional(schema)
    if extra is not None:
        _openapi(extra, f"{path}.additionalProperties", errs, False)
    items = _items(schema)
    if items is not None:
        _openapi(items, f"{path}.items", errs, False)
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(key) or []):
            if isinstance(sub, dict):
                _openapi(sub, f"{path}.{key}[{i}]", errs, False)


def _default_errors(schema: JSON, path: str) -> list[FieldError]:
    """``ValidateDefaults``: each default must be valid for its own schema (and be pruned)."""
    errs: list[FieldError] = []

    def walk(node: JSON, where: str) -> None:
        if "default" in node:
            value = json.loads(json.dumps(node["default"]))
            if isinstance(value, dict):
                apply_defaults(value, node)
            errs.extend(validate(value, node, "", f"{where}.default"))
            pruned = json.loads(json.dumps(value))
            unknown = prune(pruned, node, root=False)
            if unknown:
                errs.append(
                    FieldError(
                        "Invalid",
                        f"{where}.default",
                        "must not have unknown fields",
                        node["default"],
                    )
                )
        for key, sub in _props(node).items():
            if isinstance(sub, dict):
                walk(sub, f"{where}.properties[{key}]")
        extra = _additional(node)
        if extra is not None:
            walk(extra, f"{where}.additionalProperties")
        items = _items(node)
        if items is not None:
            walk(items, f"{where}.items")

    walk(schema, path)
    return errs


# --------------------------------------------------------------------------------------------
# Custom resources: pruning, defaulting, nulls
# --------------------------------------------------------------------------------------------

_META_FIELDS = ("apiVersion", "kind", "metadata")


def prune(obj: Any, schema: JSON | None, root: bool = True, path: str = "") -> list[str]:
    """``pruning.Prune``: drop the fields the schema does not declare (unless
    ``x-kubernetes-preserve-unknown-fields``); returns the paths dropped, sorted (for
    ``fieldValidation=Strict``). At the root (and in embedded resources) apiVersion, kind and
    metadata stay."""
    unknown: list[str] = []
    _prune(obj, schema, root, path, unknown)
    return sorted(unknown)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(x: Any, s: JSON | None, embedded: bool, path: str, unknown: list[str]) -> None:
    if s is not None and s.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(x, s, path, unknown)
        return
    if isinstance(x, dict):
        if s is None:
            for k in list(x):
                unknown.append(_join(path, k))
                del x[k]
            return
        embedded = embedded or bool(s.get("x-kubernetes-embedded-resource"))
        props, extra = _props(s), _additional(s)
        for k in list(x):
            if embedded and k in _META_FIELDS:
                continue
            if isinstance(props.get(k), dict):
                _prune(x[k], props[k], False, _join(path, k), unknown)
            elif extra is not None:
                _prune(x[k], extra, False, _join(path, k), unknown)
            else:
                unknown.append(_join(path, k))
                del x[k]
    elif isinstance(x, list):
        items = _items(s) if s is not None else None
        for i, v in enumerate(x):
            _prune(v, items, False, f"{path}[{i}]", unknown)


def _skip_prune(x: Any, s: JSON, path: str, unknown: list[str]) -> None:
    """Inside ``x-kubernetes-preserve-unknown-fields``: unknown fields stay, declared ones are
    still pruned by their own schema."""
    if isinstance(x, dict):
        embedded = bool(s.get("x-kubernetes-embedded-resource"))
        props, extra = _props(s), _additional(s)
        for k in list(x):
            if embedded and k in _META_FIELDS:
                continue
            if isinstance(props.get(k), dict):
                _prune(x[k], props[k], False, _join(path, k), unknown)
            elif extra is not None:
                _prune(x[k], extra, False, _join(path, k), unknown)
    elif isinstance(x, list):
        items = _items(s)
        if items is not None:
            for i, v in enumerate(x):
                _skip_prune(v, items, f"{path}[{i}]", unknown)


def apply_defaults(x: Any, s: JSON | None) -> None:
    """``structuraldefaulting.Default``: fill in missing (or null and not nullable) fields
    from their schema's ``default``, recursively."""
    if s is None:
        return
    if isinstance(x, dict):
        props, extra = _props(s), _additional(s)
        for k, prop in props.items():
            if not isinstance(prop, dict) or "default" not in prop:
                continue
            if k not in x or (x[k] is None and not prop.get("nullable")):
                x[k] = json.loads(json.dumps(prop["default"]))
        for k in list(x):
            if k in props and isinstance(props[k], dict):
                apply_defaults(x[k], props[k])
            elif extra is not None:
                if x[k] is None and not extra.get("nullable") and "default" in extra:
                    x[k] = json.loads(json.dumps(extra["default"]))
                apply_defaults(x[k], extra)
    elif isinstance(x, list):
        items = _items(s)
        if items is None:
            return
        for i in range(len(x)):
            if x[i] is None and not items.get("nullable") and "default" in items:
                x[i] = json.loads(json.dumps(items["default"]))
            apply_defaults(x[i], items)


def prune_nulls(x: Any, s: JSON | None) -> None:
    """``PruneNonNullableNullsWithoutDefaults``: a null where the schema allows none (and has
    no default) is dropped, as decoding into a Go struct would."""
    if isinstance(x, dict):
        for k in list(x):
            sub = None
            if s is not None:
                sub = _props(s).get(k) if k in _props(s) else _additional(s)
            if (
                x[k] is None
                and isinstance(sub, dict)
                and not sub.get("nullable")
                and "default" not in sub
            ):
                del x[k]
            else:
                prune_nulls(x[k], sub if isinstance(sub, dict) else None)
    elif isinstance(x, list):
        items = _items(s) if s is not None else None
        for v in x:
            prune_nulls(v, items)


# --------------------------------------------------------------------------------------------
# Custom resources: decoding
# --------------------------------------------------------------------------------------------

# ObjectMeta's fields and their Go types, for decoding a custom resource's metadata.
_OBJECT_META = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "selfLink": "string",
    "uid": "string",
    "resourceVersion": "string",
    "generation": "int64",
    "creationTimestamp": "time",
    "deletionTimestamp": "time",
    "deletionGracePeriodSeconds": "int64",
    "labels": "map[string]string",
    "annotations": "map[string]string",
    "ownerReferences": "[]v1.OwnerReference",
    "finalizers": "[]string",
    "managedFields": "[]v1.ManagedFieldsEntry",
}


def _meta_type_error(key: str, value: Any, go: str) -> str | None:
    if value is None:
        return None
    ok = {
        "string": isinstance(value, str),
        "int64": isinstance(value, (int, float))
        and not isinstance(value, bool)
        and float(value).is_integer(),
        "time": isinstance(value, str),
        "map[string]string": isinstance(value, dict)
        and all(isinstance(v, str) for v in value.values()),
        "[]string": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }.get(go, isinstance(value, list) and all(isinstance(v, dict) for v in value))
    if ok:
        return None
    head = "json: cannot unmarshal"
    if go == "map[string]string" and isinstance(value, dict):
        bad = next(v for v in value.values() if not isinstance(v, str))
        return f"{head} {json_kind(bad)} into Go struct field ObjectMeta.{key} of type string"
    if go == "[]string" and isinstance(value, list):
        bad = next(v for v in value if not isinstance(v, str))
        return f"{head} {json_kind(bad)} into Go struct field ObjectMeta.{key} of type string"
    return f"{head} {json_kind(value)} into Go struct field ObjectMeta.{key} of type {go}"


def _summary(data: bytes, limit: int = 30) -> str:
    """The handlers' ``summarizeData``: a body's start, as text when it is an object, else
    in hex."""
    if not data:
        return "<empty>"
    head = data[:limit]
    text = head.decode(errors="replace") if data[:1] == b"{" else head.hex()
    return text + (" ..." if len(data) > limit else "")


def decode(kind: CustomKind, body: Any, raw: bytes = b"") -> tuple[JSON, list[str]]:
    """Decode a request body for ``kind`` as upstream's unstructured decoder and
    ``unstructuredSchemaCoercer`` do: apiVersion and kind checks (400), ObjectMeta's types
    (400) and unknown metadata fields (dropped), then, for an object of this kind, the
    schema's defaults, pruning and the nulls it does not allow. Returns the object and the
    fields pruned (``fieldValidation=Strict`` refuses them). ``raw``: the bytes the client
    sent, which some messages quote (a patched object's are Go's compact encoding)."""
    raw = raw or json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    prefix = f"the object provided is unrecognized (must be of type {kind.kind}): "
    suffix = f" ({_summary(raw)})"
    if not isinstance(body, dict):
        what = "array" if isinstance(body, list) else json_kind(body)
        raise errors.bad_request(
            prefix + "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{what} into Go value of type struct {{ APIVersion string "
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }' + suffix
        )
    for key in ("apiVersion", "kind"):
        if key in body and body[key] is not None and not isinstance(body[key], str):
            raise errors.bad_request(
                prefix + "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{json_kind(body[key])} into Go struct field .{key} of type string" + suffix
            )
    obj_kind, api_version = body.get("kind") or "", body.get("apiVersion") or ""
    if not obj_kind:
        text = raw.decode(errors="replace")
        raise errors.bad_request(prefix + f"Object 'Kind' is missing in '{text}'" + suffix)
    if api_version != kind.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({kind.api_version})"
        )
    obj = json.loads(json.dumps(body))
    meta = obj.get("metadata")
    unknown: list[str] = []
    if meta is None or "metadata" not in obj:
        meta = {}
    elif not isinstance(meta, dict):
        raise errors.bad_request(
            f'{obj_kind} in version "{kind.version}" cannot be handled as a {obj_kind}: json: '
            f"cannot unmarshal {json_kind(meta)} into Go value of type v1.ObjectMeta"
        )
    for key in list(meta):
        go = _OBJECT_META.get(key)
        if go is None:
            unknown.append(f"metadata.{key}")
            del meta[key]
            continue
        problem = _meta_type_error(key, meta[key], go)
        if problem:
            raise errors.bad_request(
                f'{obj_kind} in version "{kind.version}" cannot be handled as a {obj_kind}: '
                + problem
            )
        if meta[key] is None:
            del meta[key]
    obj["metadata"] = meta
    if obj_kind == kind.kind:
        apply_defaults(obj, kind.schema)
        unknown += prune(obj, kind.schema)
        prune_nulls(obj, kind.schema)
    return obj, sorted(unknown)


# --------------------------------------------------------------------------------------------
# Custom resources: strategy and validation
# --------------------------------------------------------------------------------------------


def prepare_for_create(kind: CustomKind, obj: JSON) -> None:
    """``customResourceStrategy.PrepareForCreate``: with a status subresource the status is
    not the client's; generation starts at 1."""
    if kind.status:
        obj.pop("status", None)
    obj["metadata"]["generation"] = 1


def prepare_for_update(kind: CustomKind, new: JSON, old: JSON, subresource: str) -> JSON:
    """The strategies' PrepareForUpdate. The main endpoint keeps the stored status (when the
    status subresource exists); ``/status`` keeps everything but the status. Generation moves
    when anything but metadata changed."""
    if subresource == "status":
        # statusStrategy: everything of the old object (its metadata too) but the status.
        out = json.loads(json.dumps(old))
        if "status" in new:
            out["status"] = new["status"]
        else:
            out.pop("status", None)
        out["metadata"]["resourceVersion"] = new["metadata"].get("resourceVersion", "")
        return out
    if kind.status:
        if "status" in old:
            new["status"] = json.loads(json.dumps(old["status"]))
        else:
            new.pop("status", None)
    body_new = {k: v for k, v in new.items() if k != "metadata"}
    body_old = {k: v for k, v in old.items() if k != "metadata"}
    generation = int(old["metadata"].get("generation") or 0)
    new["metadata"]["generation"] = generation + (not same(body_new, body_old))
    return new


def type_errors(kind: CustomKind, obj: JSON) -> list[FieldError]:
    """``ValidateTypeMeta``: checked first, and alone when it fails."""
    errs = []
    if obj.get("kind") != kind.kind:
        errs.append(FieldError("Invalid", "kind", f"must be {kind.kind}", obj.get("kind")))
    if obj.get("apiVersion") != kind.api_version:
        errs.append(
            FieldError(
                "Invalid", "apiVersion", f"must be {kind.api_version}", obj.get("apiVersion")
            )
        )
    return errs


def object_errors(
    kind: CustomKind, obj: JSON, old: JSON | None, subresource: str
) -> list[FieldError]:
    """The schema's verdict on ``obj`` (after the type and metadata checks): the whole object,
    or only ``status`` through ``/status``. On an update, values equal to the old object's
    are not checked again (upstream's validation ratcheting)."""
    if subresource == "status":
        schema = _props(kind.schema).get("status")
        if "status" not in obj or not isinstance(schema, dict):
            return []
        before = old.get("status", _MISSING) if old is not None else _MISSING
        return validate(obj["status"], schema, "", "status", before)
    content = {k: v for k, v in obj.items() if k != "metadata"}
    before: Any = _MISSING
    if old is not None:
        before = {k: v for k, v in old.items() if k != "metadata"}
    schema = {k: v for k, v in kind.schema.items() if k != "properties"}
    schema["properties"] = {k: v for k, v in _props(kind.schema).items() if k != "metadata"}
    return validate(content, schema, "", None, before)


# --------------------------------------------------------------------------------------------
# Schema validation (kube-openapi's validator, mapped to field errors)
# --------------------------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Deep equality of JSON values where ``True`` is not ``1`` (Python's ``==`` says it is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _type_name(value: Any) -> str:
    """The JSON type go-openapi infers for a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _count_bounds(
    count: int,
    schema: JSON,
    keys: tuple[str, str],
    noun: str,
    field: str,
    name: str,
    errs: list[FieldError],
) -> None:
    """minItems/maxItems or minProperties/maxProperties: the sliceValidator's and the
    objectValidator's counts. field.TooMany says "items" for properties too."""
    low, high = schema.get(keys[0]), schema.get(keys[1])
    if isinstance(low, int) and count < low:
        errs.append(
            FieldError("Invalid", field, f"{_where(name)} should have at least {low} {noun}", count)
        )
    if isinstance(high, int) and count > high:
        errs.append(FieldError("TooMany", field, f"must have at most {high} items", count))


def _field(root: str | None, name: str) -> str:
    """The field path of an error: the validator's root (``status`` or none) and the name."""
    name = name.lstrip(".")
    if root is None:
        return name or "<nil>"
    return f"{root}.{name}" if name else root


def validate(
    value: Any, schema: JSON, name: str, root: str | None, old: Any = _MISSING
) -> list[FieldError]:
    """Validate ``value`` at ``name`` (its path in messages) against ``schema``; field paths
    are relative to ``root``."""
    if old is not _MISSING and same(old, value):
        return []  # ratcheting: unchanged values are not checked again
    errs: list[FieldError] = []
    types = [schema["type"]] if isinstance(schema.get("type"), str) and schema.get("type") else []
    if schema.get("x-kubernetes-int-or-string"):
        types = ["integer", "string"]
    fmt = schema.get("format") if isinstance(schema.get("format"), str) else ""
    field = _field(root, name)
    if value is None:  # only the type and enum validators look at a null
        if types and not schema.get("nullable"):
            errs.append(_type_error(field, name, ",".join(types), "null"))
        _enum(value, schema, field, name, errs)
        return errs
    if types or fmt:
        errs += _type_check(value, types, fmt, field, name)
    # The other validators run whatever the type check said.
    return errs + _after_type(value, schema, name, root, field, types, fmt, old)


def _type_check(value: Any, types: list[str], fmt: str, field: str, name: str) -> list[FieldError]:
    """go-openapi's ``typeValidator``: at most one error (a format is a type for numbers)."""
    actual = _type_name(value)
    go_format = {"integer": "int64", "number": "float64"}.get(actual, "")
    is_float_int = actual == "number" and float(value).is_integer() and "integer" in types
    is_int_float = actual == "integer" and "number" in types
    fits = actual in types or is_float_int or is_int_float
    if actual not in ("string", "array") and fmt and not (fits or go_format == fmt):
        return [_type_error(field, name, fmt, go_format)]
    if fmt and actual in ("string", "array") and not {"integer", "number"} & set(types):
        return []  # a string format: the format validator's business
    if types and not fits:
        return [_type_error(field, name, ",".join(types), actual)]
    return []


def _after_type(
    value: Any,
    schema: JSON,
    name: str,
    root: str | None,
    field: str,
    types: list,
    fmt: str,
    old: Any,
) -> list[FieldError]:
    errs: list[FieldError] = []
    actual = _type_name(value)
    # schemaPropsValidator: allOf, oneOf, anyOf, not
    _composition(value, schema, name, root, errs)
    # stringValidator
    if actual == "string":
        max_len, min_len = schema.get("maxLength"), schema.get("minLength")
        pattern = schema.get("pattern")
        if isinstance(max_len, int) and len(value) > max_len:
            errs.append(
                FieldError(
                    "TooLong",
                    field,
                    f"may not be more than {max_len} {'byte' if max_len == 1 else 'bytes'}",
                )
            )
        elif isinstance(min_len, int) and len(value) < min_len:
            errs.append(
                FieldError(
                    "Invalid",
                    field,
                    f"{_where(name)} should be at least {min_len} chars long",
                    value,
                )
            )
        elif isinstance(pattern, str) and pattern and not _matches(pattern, value):
            errs.append(
                FieldError("Invalid", field, f"{_where(name)} should match '{pattern}'", value)
            )
        # formatValidator
        if fmt and fmt in _FORMATS and not _FORMATS[fmt](value):
            errs.append(
                FieldError(
                    "TypeInvalid",
                    field,
                    f"{_where(name)} must be of type {fmt}: {errors._go_quote(value)}",
                    value,
                )
            )
    # numberValidator
    if actual in ("integer", "number"):
        _numbers(value, schema, name, root, field, types, fmt, errs)
    # sliceValidator
    if actual == "array":
        items = _items(schema)
        if items is not None:
            for i, item in enumerate(value):
                errs += validate(item, items, f"{name}[{i}]", root)
        _count_bounds(len(value), schema, ("minItems", "maxItems"), "items", field, name, errs)
    # commonValidator
    _enum(value, schema, field, name, errs)
    # objectValidator
    if actual == "object":
        bounds = ("minProperties", "maxProperties")
        _count_bounds(len(value), schema, bounds, "properties", field, name, errs)
        props, extra = _props(schema), _additional(schema)
        olds = old if isinstance(old, dict) else {}
        if extra is not None:
            for key in sorted(value):
                if key not in props:
                    errs += validate(
                        value[key], extra, f"{name}.{key}", root, olds.get(key, _MISSING)
                    )
        for key in sorted(props):
            if key in value and isinstance(props[key], dict):
                errs += validate(
                    value[key], props[key], f"{name}.{key}", root, olds.get(key, _MISSING)
                )
        required = schema.get("required")
        for key in required if isinstance(required, list) else ():
            if isinstance(key, str) and key not in value:
                errs.append(FieldError("Required", _field(root, f"{name}.{key}")))
    return errs


def _where(name: str) -> str:
    return f"{name.lstrip('.')} in body"


def _type_error(field: str, name: str, expected: str, actual: str) -> FieldError:
    return FieldError(
        "TypeInvalid",
        field,
        f"{_where(name)} must be of type {expected}: {errors._go_quote(actual)}",
        actual,
    )


def _enum(value: Any, schema: JSON, field: str, name: str, errs: list[FieldError]) -> None:
    enum = schema.get("enum")
    if not isinstance(enum, list) or not enum:
        return
    if any(same(allowed, value) for allowed in enum):
        return
    values = ", ".join(
        errors._go_quote(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))
        for v in enum
    )
    errs.append(FieldError("Unsupported", field, f"supported values: {values}", value))


def _numbers(
    value: Any,
    schema: JSON,
    name: str,
    root: str | None,
    field: str,
    types: list,
    fmt: str,
    errs: list[FieldError],
) -> None:
    single = types[0] if len(types) == 1 else ""
    checked = (
        fmt
        if (single == "integer" and fmt in ("int32", "int64"))
        or (single == "number" and fmt in ("float", "double"))
        else ""
    )
    if single == "integer":
        ok = float(value).is_integer() and (
            -(2**31) <= value < 2**31 if checked == "int32" else -(2**63) <= value < 2**63
        )
        if not ok:
            described = f"with format {checked}" if checked else "(default format)"
            errs.append(
                FieldError(
                    "Invalid",
                    _field(root, ""),
                    f"Checked value must be of type integer {described} in {name.lstrip('.')}",
                    "",
                )
            )
    maximum, minimum = schema.get("maximum"), schema.get("minimum")
    if isinstance(maximum, (int, float)) and not isinstance(maximum, bool):
        exclusive = bool(schema.get("exclusiveMaximum"))
        if value > maximum or (exclusive and value == maximum):
            word = "less than" if exclusive else "less than or equal to"
            errs.append(
                FieldError(
                    "Invalid", field, f"{_where(name)} should be {word} {_number(maximum)}", value
                )
            )
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        exclusive = bool(schema.get("exclusiveMinimum"))
        if value < minimum or (exclusive and value == minimum):
            word = "greater than" if exclusive else "greater than or equal to"
            errs.append(
                FieldError(
                    "Invalid", field, f"{_where(name)} should be {word} {_number(minimum)}", value
                )
            )
    multiple = schema.get("multipleOf")
    if isinstance(multiple, (int, float)) and multiple > 0:
        quotient = value / multiple
        if not float(quotient).is_integer():
            errs.append(
                FieldError(
                    "Invalid",
                    field,
                    f"{_where(name)} should be a multiple of {_number(multiple)}",
                    value,
                )
            )


def _number(value: float) -> str:
    """A bound as Go prints the float64 it is stored in."""
    return errors.go_float(float(value))


def _composition(
    value: Any, schema: JSON, name: str, root: str | None, errs: list[FieldError]
) -> None:
    where = name.lstrip(".")
    nil = _field(root, "")
    any_of = [s for s in schema.get("anyOf") or [] if isinstance(s, dict)]
    if any_of:
        results = [validate(value, s, name, root) for s in any_of]
        if all(results):
            errs.append(
                FieldError(
                    "Invalid", nil, f'"{where}" must validate at least one schema (anyOf)', ""
                )
            )
            errs += results[0]
    one_of = [s for s in schema.get("oneOf") or [] if isinstance(s, dict)]
    if one_of:
        results = [validate(value, s, name, root) for s in one_of]
        valid = sum(1 for r in results if not r)
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            errs.append(
                FieldError(
                    "Invalid",
                    nil,
                    f'"{where}" must validate one and only one schema (oneOf). {extra}',
                    "",
                )
            )
            if valid == 0:
                errs += results[0]
    all_of = [s for s in schema.get("allOf") or [] if isinstance(s, dict)]
    if all_of:
        results = [validate(value, s, name, root) for s in all_of]
        for r in results:
            errs += r
        failed = sum(1 for r in results if r)
        if failed:
            extra = ". None validated" if failed == len(results) else ""
            errs.append(
                FieldError(
                    "Invalid", nil, f'"{where}" must validate all the schemas (allOf){extra}', ""
                )
            )
    not_schema = schema.get("not")
    if isinstance(not_schema, dict) and not validate(value, not_schema, name, root):
        errs.append(FieldError("Invalid", nil, f'"{where}" must not validate the schema (not)', ""))


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return True


_DATE_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(:(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


def _is_date_time(text: str) -> bool:
    m = _DATE_TIME.match(text)
    if not m:
        return False
    try:
        time.strptime("-".join(m.group(1, 2, 3)), "%Y-%m-%d")
    except ValueError:
        return False
    return int(m.group(4)) < 24 and int(m.group(5)) < 60 and int(m.group(7) or 0) < 61


def _is_date(text: str) -> bool:
    try:
        time.strptime(text, "%Y-%m-%d")
    except ValueError:
        return False
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text))


def _is_byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


def _is_ipv4(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) < 256 and str(int(p)) == p for p in parts)


def _is_ipv6(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


# The formats kube-apiserver checks (the rest of strfmt's formats are not checked here).
_FORMATS = {
    "date-time": _is_date_time,
    "datetime": _is_date_time,
    "date": _is_date,
    "byte": _is_byte,
    "uuid": lambda t: bool(_UUID.match(t)),
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
}


# --------------------------------------------------------------------------------------------
# JSONPath (printer columns and selectable fields): the simple paths CRDs use
# --------------------------------------------------------------------------------------------

_STEP = re.compile(
    r"""\.(?P<name>[A-Za-z0-9_$-]+)|\[(?P<index>-?\d+)\]|\[['"](?P<key>[^'"]+)['"]\]"""
    r"""|\[\?\(@\.(?P<fkey>[A-Za-z0-9_.-]+)\s*==\s*['"](?P<fvalue>[^'"]*)['"]\)\]"""
)


def parse_jsonpath(path: str) -> list[tuple[str, Any]]:
    """Parse ``.a.b[0]``, ``.a['b.c']`` and ``.conditions[?(@.type=="Ready")]``."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if not text.startswith((".", "[")):
        raise ValueError("must be a simple json path starting with .")
    steps, pos = [], 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if not m:
            raise ValueError(f"unrecognized character in {text[pos:]!r}")
        if m.group("name") is not None:
            steps.append(("key", m.group("name")))
        elif m.group("key") is not None:
            steps.append(("key", m.group("key")))
        elif m.group("index") is not None:
            steps.append(("index", int(m.group("index"))))
        else:
            steps.append(("filter", (m.group("fkey").split("."), m.group("fvalue"))))
        pos = m.end()
    return steps


def jsonpath(obj: Any, path: str) -> Any:
    """The first value at ``path``, or None."""
    try:
        steps = parse_jsonpath(path)
    except ValueError:
        return None
    cur = obj
    for step, arg in steps:
        if step == "key":
            cur = cur.get(arg) if isinstance(cur, dict) else None
        elif step == "index":
            cur = cur[arg] if isinstance(cur, list) and -len(cur) <= arg < len(cur) else None
        else:
            keys, wanted = arg
            found = None
            for item in cur if isinstance(cur, list) else []:
                probe: Any = item
                for k in keys:
                    probe = probe.get(k) if isinstance(probe, dict) else None
                if probe is not None and printed(probe) == wanted:
                    found = item
                    break
            cur = found
        if cur is None:
            return None
    return cur


def printed(value: Any) -> str:
    """A value as JSONPath and ``fmt.Sprint`` print it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return errors.go_float(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# --------------------------------------------------------------------------------------------
# Tables (kubectl get)
# --------------------------------------------------------------------------------------------


def table_columns(kind: CustomKind, name_desc: str, age_desc: str) -> list[JSON]:
    """``tableconvertor.New``: Name, then the printer columns (Age when none is declared)."""
    columns = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": name_desc,
            "priority": 0,
        }
    ]
    declared = kind.columns or (
        {
            "name": "Age",
            "type": "date",
            "jsonPath": ".metadata.creationTimestamp",
            "description": age_desc,
        },
    )
    for col in declared:
        columns.append(
            {
                "name": col.get("name") or "",
                "type": col.get("type") or "",
                "format": col.get("format") or "",
                "description": col.get("description")
                or f"Custom resource definition column (in JSONPath format): {col.get('jsonPath')}",
                "priority": int(col.get("priority") or 0),
            }
        )
    return columns


def table_row(kind: CustomKind, obj: JSON, now: float, human_duration: Any) -> list[Any]:
    declared = kind.columns or ({"type": "date", "jsonPath": ".metadata.creationTimestamp"},)
    cells: list[Any] = [obj["metadata"]["name"]]
    for col in declared:
        value = jsonpath(obj, col.get("jsonPath") or "")
        cells.append(_cell(col.get("type") or "", value, now, human_duration))
    return cells


def _cell(kind: str, value: Any, now: float, human_duration: Any) -> Any:
    """``cellForJSONValue`` (and JSONPath printing for string columns)."""
    if value is None:
        return None
    if kind == "string":
        return printed(value)
    if kind == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            stamp = calendar.timegm(time.strptime(value[:19], "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            return "<invalid>"
        return human_duration(now - stamp)
    return None
