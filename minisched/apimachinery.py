"""The pieces of k8s.io/apimachinery the steps' plugins stand on, ported as far as they need.

Upstream, at v0.23.10 (the apimachinery of kubernetes v1.23.10):
- pkg/util/validation/field (Error, Path) and pkg/util/errors (Aggregate, Flatten): how an
  invalid field is reported, ``nodeSelectorTerms[0].matchExpressions[0].key: Invalid value:
  ...``, and several errors as one;
- pkg/util/validation (IsQualifiedName, IsValidLabelValue, IsDNS1123Subdomain): what a label's
  key and value may be;
- pkg/labels/selector.go (Requirement, NewRequirement, the selectors) and pkg/fields (one-term
  field selectors): how ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt`` and ``Lt``
  match a set of labels.

kube-scheduler imports these as a library, as the steps import this module: the scheduling
lesson is in the steps (``corev1.py`` from step 13), not here.

Simplified: a field path is a plain string ("nodeSelectorTerms[0].matchExpressions[0].key");
upstream builds a field.Path and prints it the same way. Differs from upstream: a bad value is
printed as Go would print a string (%q) or a []string (%#v), but a string is quoted with only
ASCII control characters escaped, where Go also escapes non-printable Unicode.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping, Sequence
from typing import Any

# --- errors (k8s.io/apimachinery/pkg/util/validation/field, pkg/util/errors) ---

# The field.Error types the node affinity parsers report (upstream: ErrorTypeInvalid and
# ErrorTypeNotSupported), and how an error's text names them (upstream: ErrorType.String).
ERROR_TYPE_INVALID = "FieldValueInvalid"
ERROR_TYPE_NOT_SUPPORTED = "FieldValueNotSupported"
ERROR_TYPE_DUPLICATE = "FieldValueDuplicate"
_ERROR_TYPE_TEXT: dict[str, str] = {
    ERROR_TYPE_INVALID: "Invalid value",
    ERROR_TYPE_NOT_SUPPORTED: "Unsupported value",
    ERROR_TYPE_DUPLICATE: "Duplicate value",
}


@dataclasses.dataclass(eq=False)
class FieldError(Exception):
    """One field with a bad value (upstream: field.Error).

    ``bad_value`` is a string, a list of strings or None; None stands for a nil ``[]string``
    (the values of a requirement that has none), the only nil value these parsers report.
    """

    type: str
    field: str
    bad_value: Any
    detail: str

    def error_body(self) -> str:
        """The error without its field (upstream: Error.ErrorBody)."""
        # Some types print no value (upstream: Required, Forbidden, TooLong, Internal).
        if self.type in _ERROR_TYPES_WITHOUT_VALUE:
            body = _ERROR_TYPE_TEXT[self.type]
        else:
            body = f"{_ERROR_TYPE_TEXT[self.type]}: {_go_value(self.bad_value)}"
        if self.detail:
            body += f": {self.detail}"
        return body

    def __str__(self) -> str:
        """``<field>: <type text>: <bad value>: <detail>`` (upstream: Error.Error)."""
        return f"{self.field}: {self.error_body()}"


def go_quote(s: str) -> str:
    """``s`` as Go's %q writes it, for the ASCII control characters at least."""
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for ch in s:
        if ch in escapes:
            out.append(escapes[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _go_value(value: Any) -> str:
    """A bad value as field.Error prints it: %q for a string, %#v for a []string."""
    if value is None:
        return "[]string(nil)"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, (list, tuple)):
        return "[]string{" + ", ".join(go_quote(v) for v in value) + "}"
    return str(value)


class Aggregate(ValueError):
    """Several errors reported as one (upstream: errors.Aggregate).

    Its text is the one error's text, or every distinct text, in order, joined by ", " in
    brackets (upstream: aggregate.Error).
    """

    def __init__(self, errors: Sequence[BaseException]) -> None:
        super().__init__(*errors)
        self._errors = list(errors)

    def errors(self) -> list[BaseException]:
        return list(self._errors)

    def __str__(self) -> str:
        if not self._errors:
            return ""
        if len(self._errors) == 1:
            return str(self._errors[0])
        seen: list[str] = []

        def visit(errs: Sequence[BaseException]) -> None:
            for err in errs:
                if isinstance(err, Aggregate):
                    visit(err.errors())
                elif str(err) not in seen:
                    seen.append(str(err))

        visit(self._errors)
        return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


def new_aggregate(errs: Sequence[BaseException | None]) -> Aggregate | None:
    """The non-None errors as one Aggregate, or None if there are none (upstream:
    NewAggregate)."""
    kept = [e for e in errs if e is not None]
    return Aggregate(kept) if kept else None


def flatten(agg: Aggregate | None) -> Aggregate | None:
    """The errors of ``agg`` and of the Aggregates nested in it, as one flat Aggregate
    (upstream: Flatten)."""
    if agg is None:
        return None
    result: list[BaseException] = []
    for err in agg.errors():
        if isinstance(err, Aggregate):
            inner = flatten(err)
            if inner is not None:
                result.extend(inner.errors())
        else:
            result.append(err)
    return new_aggregate(result)


def to_aggregate(errs: Sequence[FieldError]) -> Aggregate | None:
    """The field errors as one Aggregate, each distinct text once (upstream:
    ErrorList.ToAggregate)."""
    seen: set[str] = set()
    kept = []
    for err in errs:
        if str(err) not in seen:
            seen.add(str(err))
            kept.append(err)
    return new_aggregate(kept)


# Field paths (upstream: field.Path's Child, Index and Key, as Path.String prints them). None is
# upstream's nil root: no prefix.


def child_path(path: str | None, name: str) -> str:
    return f"{path}.{name}" if path else name


def index_path(path: str | None, index: int | str) -> str:
    return f"{path or ''}[{index}]"


# --- validation (k8s.io/apimachinery/pkg/util/validation) ---

_QNAME_CHAR_FMT = "[A-Za-z0-9]"
_QNAME_EXT_CHAR_FMT = "[-A-Za-z0-9_.]"
_QUALIFIED_NAME_FMT = f"({_QNAME_CHAR_FMT}{_QNAME_EXT_CHAR_FMT}*)?{_QNAME_CHAR_FMT}"
_QUALIFIED_NAME_ERR_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_QUALIFIED_NAME_MAX_LENGTH = 63
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_ERR_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MAX_LENGTH = 63
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MAX_LENGTH = 253


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream: RegexError, two spaces before each " or " included."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _byte_len(s: str) -> int:
    """Go's len(s): the length in UTF-8 bytes."""
    return len(s.encode())


def is_dns1123_subdomain(value: str) -> list[str]:
    """What is wrong with ``value`` as a DNS subdomain, or [] (upstream: IsDNS1123Subdomain)."""
    errs = []
    if _byte_len(value) > _DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len_error(_DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not re.fullmatch(_DNS1123_SUBDOMAIN_FMT, value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_ERR_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """What is wrong with ``value`` as a label key, ``[prefix/]name``, or [] (upstream:
    IsQualifiedName)."""
    errs = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(
                _QUALIFIED_NAME_ERR_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > _QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + _max_len_error(_QUALIFIED_NAME_MAX_LENGTH))
    # Checked even when the name is empty, as upstream does: an empty name has two errors.
    if not re.fullmatch(_QUALIFIED_NAME_FMT, name):
        errs.append(
            "name part "
            + _regex_error(
                _QUALIFIED_NAME_ERR_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
            )
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """What is wrong with ``value`` as a label value, or [] (upstream: IsValidLabelValue)."""
    errs = []
    if _byte_len(value) > _LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len_error(_LABEL_VALUE_MAX_LENGTH))
    if not re.fullmatch(_LABEL_VALUE_FMT, value):
        errs.append(
            _regex_error(_LABEL_VALUE_ERR_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


def _parse_int64(s: str) -> int | None:
    """``s`` as Go's strconv.ParseInt(s, 10, 64) reads it, or None where it fails: an optional
    sign and ASCII digits, within int64 (Python's int() would also take spaces and "_")."""
    if not re.fullmatch(r"[+-]?[0-9]+", s):
        return None
    n = int(s)
    return n if -(2**63) <= n < 2**63 else None


# --- label selectors (k8s.io/apimachinery/pkg/labels) ---


class SelectionOperator(str, enum.Enum):
    """How a requirement relates a label to its values (upstream: selection.Operator)."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


# Upstream: validRequirementOperators, the binary operators then the unary ones.
_VALID_REQUIREMENT_OPERATORS = [
    op.value
    for op in (
        SelectionOperator.IN,
        SelectionOperator.NOT_IN,
        SelectionOperator.EQUALS,
        SelectionOperator.DOUBLE_EQUALS,
        SelectionOperator.NOT_EQUALS,
        SelectionOperator.GREATER_THAN,
        SelectionOperator.LESS_THAN,
        SelectionOperator.EXISTS,
        SelectionOperator.DOES_NOT_EXIST,
    )
]


@dataclasses.dataclass(frozen=True)
class Requirement:
    """One condition on one label (upstream: labels.Requirement). Build it with
    ``new_requirement``, which checks it."""

    key: str
    operator: SelectionOperator
    str_values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether the labels meet the requirement (upstream: Requirement.Matches).

        A missing label fails In, Exists, Gt and Lt and passes NotIn and DoesNotExist. Gt and
        Lt compare integers: a label value that is not one fails both.
        """
        op = self.operator
        if op in (SelectionOperator.IN, SelectionOperator.EQUALS, SelectionOperator.DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.str_values
        if op in (SelectionOperator.NOT_IN, SelectionOperator.NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.str_values
        if op == SelectionOperator.EXISTS:
            return self.key in labels
        if op == SelectionOperator.DOES_NOT_EXIST:
            return self.key not in labels
        if op in (SelectionOperator.GREATER_THAN, SelectionOperator.LESS_THAN):
            if self.key not in labels:
                return False
            label_value = _parse_int64(labels[self.key])
            # new_requirement saw to one integer value; upstream checks again, and so do we.
            if label_value is None or len(self.str_values) != 1:
                return False
            r_value = _parse_int64(self.str_values[0])
            if r_value is None:
                return False
            if op == SelectionOperator.GREATER_THAN:
                return label_value > r_value
            return label_value < r_value
        return False

    def __str__(self) -> str:
        """The requirement in selector syntax, values sorted (upstream: Requirement.String):
        ``foo in (bar,baz)``, ``foo>1``, ``!foo``."""
        op = self.operator
        if op == SelectionOperator.DOES_NOT_EXIST:
            return "!" + self.key
        if op == SelectionOperator.EXISTS:
            return self.key
        values = ",".join(sorted(self.str_values))
        if op in (SelectionOperator.IN, SelectionOperator.NOT_IN):
            return f"{self.key} {op.value} ({values})"
        symbol = {
            SelectionOperator.GREATER_THAN: ">",
            SelectionOperator.LESS_THAN: "<",
        }.get(op, op.value)
        return f"{self.key}{symbol}{values}"


def new_requirement(
    key: str,
    op: SelectionOperator,
    vals: Sequence[str] | None,
    path: str | None = None,
) -> Requirement:
    """A checked Requirement (upstream: labels.NewRequirement); raises an Aggregate of
    FieldErrors, each text once, naming fields under ``path``, when:

    - the key is not a qualified name (``[prefix/]name``);
    - In or NotIn has no value; Exists or DoesNotExist has any; Gt or Lt has not exactly one,
      or one that is not an integer;
    - a value is not a valid label value.

    The values are kept in their order (and copied): matching is by membership.
    """
    errs: list[FieldError] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errs.append(
            FieldError(ERROR_TYPE_INVALID, child_path(path, "key"), key, "; ".join(key_errs))
        )
    value_path = child_path(path, "values")
    values = list(vals or [])
    if op in (SelectionOperator.IN, SelectionOperator.NOT_IN):
        if not values:
            errs.append(
                FieldError(
                    ERROR_TYPE_INVALID,
                    value_path,
                    vals,
                    "for 'in', 'notin' operators, values set can't be empty",
                )
            )
    elif op in (
        SelectionOperator.EQUALS,
        SelectionOperator.DOUBLE_EQUALS,
        SelectionOperator.NOT_EQUALS,
    ):
        if len(values) != 1:
            errs.append(
                FieldError(
                    ERROR_TYPE_INVALID,
                    value_path,
                    vals,
                    "exact-match compatibility requires one single value",
                )
            )
    elif op in (SelectionOperator.EXISTS, SelectionOperator.DOES_NOT_EXIST):
        if values:
            errs.append(
                FieldError(
                    ERROR_TYPE_INVALID,
                    value_path,
                    vals,
                    "values set must be empty for exists and does not exist",
                )
            )
    elif op in (SelectionOperator.GREATER_THAN, SelectionOperator.LESS_THAN):
        if len(values) != 1:
            errs.append(
                FieldError(
                    ERROR_TYPE_INVALID,
                    value_path,
                    vals,
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, v in enumerate(values):
            if _parse_int64(v) is None:
                errs.append(
                    FieldError(
                        ERROR_TYPE_INVALID,
                        index_path(value_path, i),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    else:
        errs.append(
            FieldError(
                ERROR_TYPE_NOT_SUPPORTED,
                child_path(path, "operator"),
                str(op),
                "supported values: " + ", ".join(go_quote(o) for o in _VALID_REQUIREMENT_OPERATORS),
            )
        )
    for i, v in enumerate(values):
        value_errs = is_valid_label_value(v)
        if value_errs:
            # Upstream names the value's path with the key as a subscript: values[0][foo].
            errs.append(
                FieldError(
                    ERROR_TYPE_INVALID,
                    index_path(index_path(value_path, i), key),
                    v,
                    "; ".join(value_errs),
                )
            )
    agg = to_aggregate(errs)
    if agg is not None:
        raise agg
    return Requirement(key, op, tuple(values))


@dataclasses.dataclass(frozen=True)
class LabelSelector:
    """Requirements, all of which must match, kept sorted by key (upstream:
    labels.internalSelector). No requirement matches every set of labels."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def add(self, *reqs: Requirement) -> LabelSelector:
        """A copy with ``reqs`` added (upstream: internalSelector.Add)."""
        return LabelSelector(tuple(sorted(self.requirements + reqs, key=lambda r: r.key)))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


@dataclasses.dataclass(frozen=True)
class NothingSelector:
    """Matches nothing (upstream: labels.Nothing and fields.Nothing)."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        return False


NOTHING = NothingSelector()


def selector_from_set(labels: Mapping[str, str]) -> LabelSelector:
    """A selector wanting exactly these labels (upstream: labels.SelectorFromSet). At v1.23
    it checks neither keys nor values: a pod's nodeSelector with a bad key just matches no
    node."""
    reqs = (Requirement(k, SelectionOperator.EQUALS, (v,)) for k, v in labels.items())
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


# --- field selectors (k8s.io/apimachinery/pkg/fields) ---


@dataclasses.dataclass(frozen=True)
class FieldTerm:
    """``field == value`` or ``field != value`` (upstream: fields.hasTerm, notHasTerm). A field
    the object lacks reads as ""."""

    field: str
    value: str
    equal: bool

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field, "") == self.value) == self.equal


@dataclasses.dataclass(frozen=True)
class FieldSelector:
    """Terms, all of which must match (upstream: fields.andTerm)."""

    terms: tuple[FieldTerm, ...]

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(t.matches(fields) for t in self.terms)


# --- more field errors (k8s.io/apimachinery/pkg/util/validation/field) and label names
# (pkg/apis/meta/v1/validation), for the plugin args' validation ---

ERROR_TYPE_REQUIRED = "FieldValueRequired"
_ERROR_TYPE_TEXT[ERROR_TYPE_REQUIRED] = "Required value"
# The types whose text leaves the bad value out (upstream: Error.ErrorBody's first case).
_ERROR_TYPES_WITHOUT_VALUE: frozenset[str] = frozenset({ERROR_TYPE_REQUIRED})


def required(path: str, detail: str) -> FieldError:
    """A field that must be given and is not (upstream: field.Required): ``<field>: Required
    value: <detail>``."""
    return FieldError(ERROR_TYPE_REQUIRED, path, "", detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    """A field with a bad value (upstream: field.Invalid)."""
    return FieldError(ERROR_TYPE_INVALID, path, value, detail)


def validate_label_name(label_name: str, path: str) -> list[FieldError]:
    """One Invalid error per thing wrong with ``label_name`` as a label key, ``[prefix/]name``
    (upstream: metav1validation.ValidateLabelName)."""
    return [invalid(path, label_name, msg) for msg in is_qualified_name(label_name)]


def json_kind(value: Any) -> str:
    """How Go's encoding/json names a decoded JSON value's kind in its errors ("json: cannot
    unmarshal <kind> into Go struct field ...")."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
