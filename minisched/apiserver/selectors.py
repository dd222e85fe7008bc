"""Label and field selectors: parsing and matching.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/labels/selector.go`` (the label selector lexer and
parser), ``staging/src/k8s.io/apimachinery/pkg/fields/selector.go`` (field selectors), and the
per-resource field label tables in ``pkg/registry/core/{pod,node,namespace,event}/strategy.go``
(``ToSelectableFields``).

A selector is parsed once per request into a list of requirements; matching a requirement is a
plain dictionary lookup, so selectors cost almost nothing on the watch fan-out path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from . import errors
from .crd import jsonpath, printed

JSON = dict[str, Any]

# --------------------------------------------------------------------------------------------
# Label selectors
# --------------------------------------------------------------------------------------------

# Characters that end an identifier in upstream's lexer.
_SPECIAL = set("!=(),<> \t\n")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class LabelRequirement:
    """One ``key op values`` term; ``op`` is exists, !, =, !=, in, notin, gt or lt."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op in ("gt", "lt"):
            try:
                have, want = int(value or ""), int(self.values[0])
            except ValueError:
                return False
            return have > want if self.op == "gt" else have < want
        return False


def _lex(text: str) -> list[tuple[str, str]]:
    """Split a selector into (kind, text) tokens: ident, op, (, ), ','."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in " \t\n":
            i += 1
            continue
        if ch in "(),":
            tokens.append((ch, ch))
            i += 1
            continue
        if ch in "!=<>":
            two = text[i : i + 2]
            if two in ("==", "!="):
                tokens.append(("op", two))
                i += 2
            else:
                tokens.append(("op", ch))
                i += 1
            continue
        start = i
        while i < len(text) and text[i] not in _SPECIAL:
            i += 1
        word = text[start:i]
        tokens.append(("op" if word in ("in", "notin") else "ident", word))
    return tokens


def _validate_label_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (
        not name
        or len(name) > 63
        or not _QUALIFIED_NAME.match(name)
        or (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)))
        or key.count("/") > 1
    ):
        raise errors.bad_request(
            f'unable to parse requirement: key: Invalid value: "{key}": '
            "name part must consist of alphanumeric characters, '-', '_' or '.'"
        )


def _validate_label_value(value: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise errors.bad_request(
            f'unable to parse requirement: values[0]: Invalid value: "{value}": '
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )


def _requirement_error(detail: str) -> errors.ApiError:
    return errors.bad_request(f"unable to parse requirement: {detail}")


def parse_label_selector(text: str | None) -> list[LabelRequirement]:
    """Parse ``app=web,tier in (fe,be),!legacy``; raise a 400 ``ApiError`` when malformed."""
    if not text or not text.strip():
        return []
    tokens = _lex(text)
    reqs: list[LabelRequirement] = []
    pos = 0

    def peek() -> tuple[str, str]:
        return tokens[pos] if pos < len(tokens) else ("end", "end of string")

    while True:
        kind, word = peek()
        if kind == "op" and word == "!":
            pos += 1
            kind, word = peek()
            if kind != "ident":
                raise errors.bad_request(
                    f"unable to parse requirement: found '{word}', expected: identifier"
                )
            _validate_label_key(word)
            pos += 1
            reqs.append(LabelRequirement(word, "!"))
        elif kind == "ident":
            key = word
            _validate_label_key(key)
            pos += 1
            kind, word = peek()
            if kind in ("end", ","):
                reqs.append(LabelRequirement(key, "exists"))
            elif kind == "op" and word in ("=", "==", "!="):
                pos += 1
                kind, value = peek()
                if kind in ("end", ","):
                    value = ""
                elif kind == "ident":
                    pos += 1
                else:
                    raise errors.bad_request(
                        f"unable to parse requirement: found '{value}', expected: identifier"
                    )
                _validate_label_value(value)
                reqs.append(LabelRequirement(key, "!=" if word == "!=" else "=", (value,)))
            elif kind == "op" and word in ("in", "notin"):
                pos += 1
                if peek()[0] != "(":
                    raise errors.bad_request(
                        f"unable to parse requirement: found '{peek()[1]}' expected: '('"
                    )
                pos += 1
                values: list[str] = []
                while True:
                    kind, value = peek()
                    if kind == "ident":
                        _validate_label_value(value)
                        values.append(value)
                        pos += 1
                        kind, value = peek()
                    elif kind in (",", ")"):
                        values.append("")  # an empty value, as upstream allows
                    if kind == ",":
                        pos += 1
                        continue
                    if kind == ")":
                        pos += 1
                        break
                    raise _requirement_error(f"found '{value}', expected: ',', ')' or identifier")
                reqs.append(LabelRequirement(key, word, tuple(values)))
            elif kind == "op" and word in (">", "<"):
                pos += 1
                kind, value = peek()
                if kind != "ident" or not re.fullmatch(r"-?\d+", value):
                    raise _requirement_error(
                        "for 'gt', 'lt' operators, the value must be an integer"
                    )
                pos += 1
                reqs.append(LabelRequirement(key, "gt" if word == ">" else "lt", (value,)))
            else:
                raise _requirement_error(f"found '{word}', expected: in, notin, =, ==, !=, gt, lt")
        else:
            raise errors.bad_request(f"found '{word}', expected: !, identifier, or 'end of string'")
        kind, word = peek()
        if kind == "end":
            return reqs
        if kind != ",":
            raise errors.bad_request(f"found '{word}', expected: ',' or 'end of string'")
        pos += 1


def labels_match(reqs: list[LabelRequirement], obj: JSON) -> bool:
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


# --------------------------------------------------------------------------------------------
# Field selectors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append(value[i + 1])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def parse_field_selector(
    text: str | None, resource: str, getters: Getters | None = None
) -> list[FieldRequirement]:
    """Parse ``spec.nodeName=,status.phase!=Failed`` for ``resource``; 400 on errors."""
    if not text or not text.strip():
        return []
    # The resources served as stubs take name and namespace.
    supported = getters if getters is not None else FIELD_GETTERS.get(resource, _NS_META)
    reqs = []
    for term in _split_unescaped(text, ","):
        if not term:
            continue
        for op in ("!=", "==", "="):
            idx = _find_unescaped(term, op)
            if idx >= 0:
                field, value = term[:idx], _unescape(term[idx + len(op) :])
                break
        else:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        if field not in supported:
            raise errors.bad_request(f"field label not supported: {field}")
        reqs.append(FieldRequirement(field, "!=" if op == "!=" else "=", value))
    return reqs


def _find_unescaped(term: str, op: str) -> int:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        if term.startswith(op, i):
            return i
        i += 1
    return -1


def fields_match(
    reqs: list[FieldRequirement], resource: str, obj: JSON, getters: Getters | None = None
) -> bool:
    if not reqs:
        return True
    if getters is None:
        getters = FIELD_GETTERS.get(resource, _NS_META)
    for r in reqs:
        have = getters[r.field](obj)
        if (have == r.value) != (r.op == "="):
            return False
    return True


def _path(*keys: str) -> Callable[[JSON], str]:
    def get(obj: JSON) -> str:
        cur: Any = obj
        for k in keys:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return "" if cur is None else str(cur)

    return get


def _bool_path(*keys: str) -> Callable[[JSON], str]:
    inner = _path(*keys)

    def get(obj: JSON) -> str:
        return inner(obj) or "false"

    return get


Getters = dict[str, Callable[[JSON], str]]
_META = {"metadata.name": _path("metadata", "name")}
_NS_META = {**_META, "metadata.namespace": _path("metadata", "namespace")}

# Upstream: the ToSelectableFields / GetAttrs functions of each registry strategy.
FIELD_GETTERS: dict[str, dict[str, Callable[[JSON], str]]] = {
    "pods": {
        **_NS_META,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _bool_path("spec", "hostNetwork"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "nodes": {**_META, "spec.unschedulable": _bool_path("spec", "unschedulable")},
    "namespaces": {**_META, "status.phase": _path("status", "phase")},
    "priorityclasses": _META,
    "events": {
        **_NS_META,
        "involvedObject.kind": _path("involvedObject", "kind"),
        "involvedObject.namespace": _path("involvedObject", "namespace"),
        "involvedObject.name": _path("involvedObject", "name"),
        "involvedObject.uid": _path("involvedObject", "uid"),
        "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
}


def crd_field_getters(kind: Any) -> Getters:
    """A custom resource's field labels (``customResourceStrategy.GetAttrs``): its name, its
    namespace when namespaced, and each of the CRD's ``selectableFields`` (their values as
    Go's ``fmt.Sprint`` prints them, "" when missing)."""
    getters: Getters = dict(_NS_META if kind.namespaced else _META)
    for path in kind.selectable:

        def get(obj: JSON, path: str = path) -> str:
            value = jsonpath(obj, path)
            return "" if value is None else printed(value)

        getters[path.lstrip(".")] = get
    return getters


@dataclass(frozen=True)
class Selector:
    """A parsed label + field selector for one resource; ``matches`` is used by list and watch."""

    resource: str
    labels: tuple[LabelRequirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()
    # A custom resource's field labels (None: the table above).
    getters: Getters | None = dataclass_field(default=None, compare=False)

    @classmethod
    def parse(
        cls,
        resource: str,
        label_text: str | None,
        field_text: str | None,
        getters: Getters | None = None,
    ) -> Selector:
        return cls(
            resource,
            tuple(parse_label_selector(label_text)),
            tuple(parse_field_selector(field_text, resource, getters)),
            getters,
        )

    def matches(self, obj: JSON) -> bool:
        return labels_match(list(self.labels), obj) and fields_match(
            list(self.fields), self.resource, obj, self.getters
        )

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields
