"""PATCH bodies: JSON merge patch, JSON patch and strategic merge patch.

Upstream: ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`` (which patch types a
resource accepts and how failures are reported), ``github.com/evanphx/json-patch`` (RFC 6902 and
RFC 7386) and ``staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`` (strategic
merge patch). The strategic merge schema below is the subset of the ``patchStrategy`` and
``patchMergeKey`` struct tags of ``k8s.io/api/core/v1/types.go`` for the objects we serve.

All functions are pure: they never modify their inputs and return a new document.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from . import errors

JSON = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class PatchError(Exception):
    """A patch that is well formed but cannot be applied to this object (answered with 422)."""


# --------------------------------------------------------------------------------------------
# RFC 7386 JSON merge patch
# --------------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch: objects merge recursively, ``null`` deletes, the rest replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------------------------------------------
# RFC 6902 JSON patch
# --------------------------------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f"invalid JSON pointer {path!r}")
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, *, for_add: bool) -> int:
    if token == "-" and for_add:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    idx = int(token)
    if idx > len(container) or (idx == len(container) and not for_add):
        raise PatchError(f"array index {idx} out of range")
    return idx


def _parent(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict):
            if token not in cur:
                raise PatchError(f"path component {token!r} not found")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, for_add=False)]
        else:
            raise PatchError(f"cannot traverse into {type(cur).__name__}")
    return cur


def _existing(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    """The container holding an existing value at ``tokens`` and the value's key or index."""
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {last!r} not found")
        return parent, last
    if isinstance(parent, list):
        return parent, _index(parent, last, for_add=False)
    raise PatchError("cannot index a scalar")


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent, key = _existing(doc, tokens)
    return parent[key]


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_add=True), value)
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent, key = _existing(doc, tokens)
    del parent[key]
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 patch (add, remove, replace, move, copy, test)."""
    if not isinstance(operations, list):
        raise errors.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise PatchError("each operation must be an object with an 'op'")
        kind = op["op"]
        tokens = _pointer(op.get("path"))
        if kind == "add":
            if "value" not in op:
                raise PatchError("add: missing value")
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, tokens)
        elif kind == "replace":
            if "value" not in op:
                raise PatchError("replace: missing value")
            _get(doc, tokens)  # must exist
            if tokens:
                doc = _remove(doc, tokens)
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from"))
            value = copy.deepcopy(_get(doc, source))
            if kind == "move":
                if tokens[: len(source)] == source and tokens != source:
                    raise PatchError("move: cannot move a value into one of its children")
                doc = _remove(doc, source)
            doc = _add(doc, tokens, value)
        elif kind == "test":
            if _get(doc, tokens) != op.get("value"):
                raise PatchError("test failed")
        else:
            raise PatchError(f"unsupported operation {kind!r}")
    return doc


# --------------------------------------------------------------------------------------------
# Strategic merge patch
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """Patch metadata of one field: how a list merges, and the schema of its items or value."""

    merge_key: str | None = None  # a list of objects merged by this key
    primitive_merge: bool = False  # a list of scalars merged as a set
    retain_keys: bool = False
    schema: dict[str, Field] = field(default_factory=dict)


_CONTAINER = {
    "ports": Field(merge_key="containerPort"),
    "env": Field(merge_key="name"),
    "volumeMounts": Field(merge_key="mountPath"),
    "volumeDevices": Field(merge_key="devicePath"),
}
_OBJECT_META = Field(
    schema={
        "finalizers": Field(primitive_merge=True),
        "ownerReferences": Field(merge_key="uid"),
    }
)
POD_SCHEMA: dict[str, Field] = {
    "metadata": _OBJECT_META,
    "spec": Field(
        schema={
            "volumes": Field(merge_key="name", retain_keys=True),
            "initContainers": Field(merge_key="name", schema=_CONTAINER),
            "containers": Field(merge_key="name", schema=_CONTAINER),
            "ephemeralContainers": Field(merge_key="name", schema=_CONTAINER),
            "imagePullSecrets": Field(merge_key="name"),
            "hostAliases": Field(merge_key="ip"),
            "topologySpreadConstraints": Field(merge_key="topologyKey"),
            "schedulingGates": Field(merge_key="name"),
            "resourceClaims": Field(merge_key="name", retain_keys=True),
        }
    ),
    "status": Field(
        schema={
            "conditions": Field(merge_key="type"),
            "podIPs": Field(merge_key="ip"),
            "hostIPs": Field(merge_key="ip"),
        }
    ),
}
NODE_SCHEMA: dict[str, Field] = {
    "metadata": _OBJECT_META,
    "spec": Field(schema={"podCIDRs": Field(primitive_merge=True)}),
    "status": Field(
        schema={
            "conditions": Field(merge_key="type"),
            "addresses": Field(merge_key="type"),
        }
    ),
}
NAMESPACE_SCHEMA: dict[str, Field] = {"metadata": _OBJECT_META}
EVENT_SCHEMA: dict[str, Field] = {"metadata": _OBJECT_META}

SCHEMAS = {
    "pods": POD_SCHEMA,
    "nodes": NODE_SCHEMA,
    "namespaces": NAMESPACE_SCHEMA,
    "events": EVENT_SCHEMA,
}

_SET_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def strategic_merge_patch(target: Any, patch: Any, schema: dict[str, Field]) -> Any:
    """Apply a strategic merge patch, honouring ``$patch``, ``$retainKeys``,
    ``$setElementOrder/<list>`` and ``$deleteFromPrimitiveList/<list>`` directives."""
    if not isinstance(patch, dict):
        raise errors.bad_request("strategic merge patch body must be a JSON object")
    return _smp_map(target if isinstance(target, dict) else {}, patch, schema)


def _smp_map(target: JSON, patch: JSON, schema: dict[str, Field]) -> JSON:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    result = dict(target)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch",):
            continue
        if key == "$retainKeys":
            if isinstance(value, list):
                keep = set(value) | {k for k in patch if not k.startswith("$")}
                result = {k: v for k, v in result.items() if k in keep}
            continue
        if key.startswith(_SET_ORDER):
            orders[key[len(_SET_ORDER) :]] = value if isinstance(value, list) else []
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            name = key[len(_DELETE_PRIMITIVE) :]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [v for v in result[name] if v not in value]
            continue
        meta = schema.get(key, Field())
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = _smp_map(current if isinstance(current, dict) else {}, value, meta.schema)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _smp_list(result[key], value, meta)
        elif isinstance(value, list):
            result[key] = _smp_list([], value, meta)
        else:
            result[key] = copy.deepcopy(value)
    for name, order in orders.items():
        meta = schema.get(name, Field())
        if isinstance(result.get(name), list):
            result[name] = _apply_order(result[name], order, meta)
    return result


def _smp_list(target: list[Any], patch: list[Any], meta: Field) -> list[Any]:
    # A list carrying {"$patch": "replace"} replaces the whole list with its other items.
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    if meta.primitive_merge:
        result = list(target)
        for item in patch:
            if item not in result:
                result.append(copy.deepcopy(item))
        return result
    key = meta.merge_key
    if not key:
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    result = [copy.deepcopy(t) for t in target]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise errors.bad_request(f"map: {item!r} does not contain declared merge key: {key}")
        index = next(
            (i for i, t in enumerate(result) if isinstance(t, dict) and t.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
            continue
        if index is None:
            result.append(_smp_map({}, item, meta.schema))
        else:
            result[index] = _smp_map(result[index], item, meta.schema)
    return result


def _apply_order(items: list[Any], order: list[Any], meta: Field) -> list[Any]:
    """Reorder ``items`` to follow ``$setElementOrder``; items it does not name keep their place
    after the ordered ones (upstream interleaves them by their original position)."""
    key = meta.merge_key

    def ident(x: Any) -> Any:
        if key and isinstance(x, dict):
            return json.dumps(x.get(key), sort_keys=True)
        return json.dumps(x, sort_keys=True)

    rank = {ident(o): i for i, o in enumerate(order)}
    named = sorted((x for x in items if ident(x) in rank), key=lambda x: rank[ident(x)])
    others = [x for x in items if ident(x) not in rank]
    return named + others
