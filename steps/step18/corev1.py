"""Helpers on the core API's scheduling fields: taints and tolerations, and node affinity.

Upstream, at v1.23 (kubernetes v1.23.10's vendored copies):
- k8s.io/api/core/v1 toleration.go (Toleration.ToleratesTaint);
- k8s.io/component-helpers/scheduling/corev1 helpers.go (TolerationsTolerateTaint,
  FindMatchingUntoleratedTaint);
- k8s.io/component-helpers/scheduling/corev1/nodeaffinity nodeaffinity.go (NodeSelector,
  LazyErrorNodeSelector, PreferredSchedulingTerms, RequiredNodeAffinity,
  GetRequiredNodeAffinity), which matches a node's labels and fields the way
  k8s.io/apimachinery's label selectors do.

The kubelet, the DaemonSet controller and kube-scheduler share these helpers, so a pod's
``nodeSelector`` and tolerations mean the same thing to all of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from kubernetes.client import (
    V1Node,
    V1NodeSelector,
    V1NodeSelectorRequirement,
    V1NodeSelectorTerm,
    V1Pod,
    V1PreferredSchedulingTerm,
    V1Taint,
    V1Toleration,
)

from minisched.apimachinery import (
    ERROR_TYPE_INVALID,
    ERROR_TYPE_NOT_SUPPORTED,
    NOTHING,
    Aggregate,
    FieldError,
    FieldSelector,
    FieldTerm,
    LabelSelector,
    NothingSelector,
    SelectionOperator,
    child_path,
    flatten,
    go_quote,
    index_path,
    new_aggregate,
    new_requirement,
    selector_from_set,
)

# --- taints and tolerations ------------------------------------------------------------------


def tolerates_taint(toleration: V1Toleration, taint: V1Taint) -> bool:
    """Whether the toleration tolerates the taint (upstream: Toleration.ToleratesTaint).

    - an empty effect matches every effect, else the effects must be equal;
    - an empty key matches every key (the API only accepts it with ``Exists``);
    - ``Exists`` matches every value; ``Equal``, or no operator, wants the same value.
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in (None, "", "Equal"):
        return (toleration.value or "") == (taint.value or "")
    return toleration.operator == "Exists"


def tolerations_tolerate_taint(tolerations: list[V1Toleration] | None, taint: V1Taint) -> bool:
    """Whether any of the tolerations tolerates the taint (upstream: TolerationsTolerateTaint)."""
    return any(tolerates_taint(t, taint) for t in tolerations or [])


def find_matching_untolerated_taint(
    taints: list[V1Taint] | None,
    tolerations: list[V1Toleration] | None,
    inclusion_filter: Callable[[V1Taint], bool] | None,
) -> tuple[V1Taint | None, bool]:
    """The first taint the filter keeps that no toleration tolerates, and True; or (None,
    False) when the pod tolerates them all (upstream: FindMatchingUntoleratedTaint)."""
    for taint in taints or []:
        if inclusion_filter is not None and not inclusion_filter(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint, True
    return None, False


# --- node affinity ---------------------------------------------------------------------------
#
# Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go and
# MatchNodeSelectorTerms (component-helpers/scheduling/corev1/helpers.go) at v0.23.10. The
# label selectors and field errors they build are apimachinery's (minisched/apimachinery.py).

# --- nodeaffinity.go ---

# A node selector requirement's operator as a label selector's (upstream: the switch in
# nodeSelectorRequirementsAsSelector).
_NODE_SELECTOR_OPERATORS: dict[str, SelectionOperator] = {
    "In": SelectionOperator.IN,
    "NotIn": SelectionOperator.NOT_IN,
    "Exists": SelectionOperator.EXISTS,
    "DoesNotExist": SelectionOperator.DOES_NOT_EXIST,
    "Gt": SelectionOperator.GREATER_THAN,
    "Lt": SelectionOperator.LESS_THAN,
}

# The operators matchFields takes (upstream: validFieldSelectorOperators).
_VALID_FIELD_SELECTOR_OPERATORS = ["In", "NotIn"]


def node_selector_requirements_as_selector(
    nsm: Sequence[V1NodeSelectorRequirement] | None, path: str | None
) -> tuple[LabelSelector | NothingSelector | None, list[BaseException]]:
    """A term's matchExpressions as one label selector, or None and every error (upstream:
    nodeSelectorRequirementsAsSelector). No requirement selects nothing."""
    if not nsm:
        return NOTHING, []
    errs: list[BaseException] = []
    selector = LabelSelector()
    for i, expr in enumerate(nsm):
        p = index_path(path, i)
        op = _NODE_SELECTOR_OPERATORS.get(expr.operator)
        if op is None:
            # Upstream lists no supported values here, so the text ends at the bad operator.
            errs.append(
                FieldError(ERROR_TYPE_NOT_SUPPORTED, child_path(p, "operator"), expr.operator, "")
            )
            continue
        try:
            requirement = new_requirement(expr.key, op, expr.values, path=p)
        except Aggregate as e:
            errs.append(e)
        else:
            selector = selector.add(requirement)
    if errs:
        return None, errs
    return selector, []


def node_selector_requirements_as_field_selector(
    nsr: Sequence[V1NodeSelectorRequirement] | None, path: str | None
) -> tuple[FieldSelector | NothingSelector | None, list[BaseException]]:
    """A term's matchFields as one field selector, or None and every error (upstream:
    nodeSelectorRequirementsAsFieldSelector). Each requirement is In or NotIn with exactly
    one value: the node's name is, or is not, that value. The key is not checked: the only
    field a node offers is ``metadata.name``, so In on any other key matches no named node
    and NotIn every one."""
    if not nsr:
        return NOTHING, []
    errs: list[BaseException] = []
    terms: list[FieldTerm] = []
    for i, expr in enumerate(nsr):
        p = index_path(path, i)
        if expr.operator in ("In", "NotIn"):
            if expr.values is None or len(expr.values) != 1:
                errs.append(
                    FieldError(
                        ERROR_TYPE_INVALID,
                        child_path(p, "values"),
                        expr.values,
                        "must have one element",
                    )
                )
            else:
                terms.append(FieldTerm(expr.key, expr.values[0], expr.operator == "In"))
        else:
            errs.append(
                FieldError(
                    ERROR_TYPE_NOT_SUPPORTED,
                    child_path(p, "operator"),
                    expr.operator,
                    "supported values: "
                    + ", ".join(go_quote(o) for o in _VALID_FIELD_SELECTOR_OPERATORS),
                )
            )
    if errs:
        return None, errs
    return FieldSelector(tuple(terms)), []


def _is_empty_node_selector_term(term: V1NodeSelectorTerm) -> bool:
    """A term with neither matchExpressions nor matchFields (upstream:
    isEmptyNodeSelectorTerm): it selects no node."""
    return not term.match_expressions and not term.match_fields


def _node_labels(node: V1Node) -> Mapping[str, str]:
    return (node.metadata and node.metadata.labels) or {}


def extract_node_fields(node: V1Node) -> dict[str, str]:
    """The fields matchFields can ask about: only ``metadata.name``, and only when the node
    has a name (upstream: extractNodeFields)."""
    name = (node.metadata and node.metadata.name) or ""
    return {"metadata.name": name} if name else {}


@dataclasses.dataclass
class _NodeSelectorTerm:
    """A parsed term (upstream: nodeSelectorTerm): its matchExpressions, its matchFields, or
    why they could not be parsed."""

    match_labels: LabelSelector | NothingSelector | None = None
    match_fields: FieldSelector | NothingSelector | None = None
    parse_errs: list[BaseException] = dataclasses.field(default_factory=list)

    def match(
        self, node_labels: Mapping[str, str], node_fields: Mapping[str, str]
    ) -> tuple[bool, list[BaseException]]:
        """Whether the node meets both halves of the term; a term that failed to parse
        matches nothing and returns its errors (upstream: nodeSelectorTerm.match)."""
        if self.parse_errs:
            return False, self.parse_errs
        if self.match_labels is not None and not self.match_labels.matches(node_labels):
            return False, []
        # A node without a name has no fields, and then matchFields is not checked at all:
        # upstream's own quirk, kept.
        if (
            self.match_fields is not None
            and node_fields
            and not self.match_fields.matches(node_fields)
        ):
            return False, []
        return True, []


def _new_node_selector_term(term: V1NodeSelectorTerm, path: str) -> _NodeSelectorTerm:
    """Upstream: newNodeSelectorTerm."""
    parsed = _NodeSelectorTerm()
    if term.match_expressions:
        parsed.match_labels, errs = node_selector_requirements_as_selector(
            term.match_expressions, child_path(path, "matchExpressions")
        )
        parsed.parse_errs.extend(errs)
    if term.match_fields:
        parsed.match_fields, errs = node_selector_requirements_as_field_selector(
            term.match_fields, child_path(path, "matchFields")
        )
        parsed.parse_errs.extend(errs)
    return parsed


class LazyErrorNodeSelector:
    """A parsed v1.NodeSelector that reports parse errors only when no term matches
    (upstream: LazyErrorNodeSelector). Terms are ORed; within a term every requirement must
    match; an empty term matches nothing, and so does a selector without terms."""

    def __init__(self, terms: list[_NodeSelectorTerm]) -> None:
        self.terms = terms

    def match(self, node: V1Node | None) -> tuple[bool, Exception | None]:
        """Whether some term matches the node's labels and fields; when none does, also the
        errors of the terms that failed to parse (an Aggregate), else None (upstream:
        LazyErrorNodeSelector.Match). A term that failed to parse is skipped, so a good term
        after a bad one still matches."""
        if node is None:
            return False, None
        node_labels = _node_labels(node)
        node_fields = extract_node_fields(node)
        errs: list[BaseException] = []
        for term in self.terms:
            matched, term_errs = term.match(node_labels, node_fields)
            if term_errs:
                errs.extend(term_errs)
                continue
            if matched:
                return True, None
        return False, flatten(new_aggregate(errs))


def new_lazy_error_node_selector(
    ns: V1NodeSelector, path: str | None = None
) -> LazyErrorNodeSelector:
    """Parse the selector's terms, keeping each term's errors for ``match`` (upstream:
    NewLazyErrorNodeSelector). ``path`` prefixes the errors' field paths (upstream:
    field.WithPath)."""
    terms_path = child_path(path, "nodeSelectorTerms")
    parsed = [
        _new_node_selector_term(term, index_path(terms_path, i))
        for i, term in enumerate(ns.node_selector_terms or [])
        # An empty term selects nothing, so it is not kept at all.
        if not _is_empty_node_selector_term(term)
    ]
    return LazyErrorNodeSelector(parsed)


class NodeSelector:
    """A v1.NodeSelector known to parse (upstream: NodeSelector)."""

    def __init__(self, lazy: LazyErrorNodeSelector) -> None:
        self.lazy = lazy

    def match(self, node: V1Node | None) -> bool:
        """Whether some term matches the node (upstream: NodeSelector.Match)."""
        matched, _ = self.lazy.match(node)  # no parse errors: new_node_selector saw to it
        return matched


def new_node_selector(ns: V1NodeSelector, path: str | None = None) -> NodeSelector:
    """Parse the selector; raises an Aggregate of every term's errors (upstream:
    NewNodeSelector, which returns them)."""
    lazy = new_lazy_error_node_selector(ns, path)
    errs = [e for term in lazy.terms for e in term.parse_errs]
    agg = flatten(new_aggregate(errs))
    if agg is not None:
        raise agg
    return NodeSelector(lazy)


@dataclasses.dataclass
class _PreferredSchedulingTerm:
    """A parsed term and its weight (upstream: preferredSchedulingTerm)."""

    term: _NodeSelectorTerm
    weight: int


class PreferredSchedulingTerms:
    """Parsed preferred terms (upstream: PreferredSchedulingTerms)."""

    def __init__(self, terms: list[_PreferredSchedulingTerm]) -> None:
        self.terms = terms

    def score(self, node: V1Node) -> int:
        """The sum of the weights of the terms that match the node (upstream:
        PreferredSchedulingTerms.Score)."""
        node_labels = _node_labels(node)
        node_fields = extract_node_fields(node)
        return sum(t.weight for t in self.terms if t.term.match(node_labels, node_fields)[0])


def new_preferred_scheduling_terms(
    terms: Sequence[V1PreferredSchedulingTerm] | None, path: str | None = None
) -> PreferredSchedulingTerms:
    """Parse the terms; raises an Aggregate of every term's errors (upstream:
    NewPreferredSchedulingTerms). A term of weight 0, or an empty one, is skipped before it is
    parsed, so its errors are never reported. The errors are named ``[i].matchExpressions...``
    (no ``preference``), as upstream names them."""
    errs: list[BaseException] = []
    parsed: list[_PreferredSchedulingTerm] = []
    for i, term in enumerate(terms or []):
        if not term.weight or _is_empty_node_selector_term(term.preference):
            continue
        parsed_term = _new_node_selector_term(term.preference, index_path(path, i))
        if parsed_term.parse_errs:
            errs.extend(parsed_term.parse_errs)
        else:
            parsed.append(_PreferredSchedulingTerm(parsed_term, term.weight))
    agg = flatten(new_aggregate(errs))
    if agg is not None:
        raise agg
    return PreferredSchedulingTerms(parsed)


@dataclasses.dataclass
class RequiredNodeAffinity:
    """A pod's nodeSelector and required node affinity, parsed (upstream:
    RequiredNodeAffinity). None where the pod has none."""

    label_selector: LabelSelector | None
    node_selector: LazyErrorNodeSelector | None

    def match(self, node: V1Node) -> tuple[bool, Exception | None]:
        """Whether the node has every nodeSelector label and matches the required terms;
        the terms' parse errors come back as ``LazyErrorNodeSelector.match`` gives them
        (upstream: RequiredNodeAffinity.Match)."""
        if self.label_selector is not None and not self.label_selector.matches(_node_labels(node)):
            return False, None
        if self.node_selector is not None:
            return self.node_selector.match(node)
        return True, None


def get_required_node_affinity(pod: V1Pod) -> RequiredNodeAffinity:
    """Parse the pod's nodeSelector and requiredDuringSchedulingIgnoredDuringExecution
    (upstream: GetRequiredNodeAffinity). The terms are parsed lazily: a pod whose bad term
    is ORed with a good one still schedules where the good one matches, as it did before
    v1.21 parsed terms up front."""
    spec = pod.spec
    selector = None
    if spec is not None and spec.node_selector:
        selector = selector_from_set(spec.node_selector)
    affinity = None
    if (
        spec is not None
        and spec.affinity is not None
        and spec.affinity.node_affinity is not None
        and spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        is not None
    ):
        affinity = new_lazy_error_node_selector(
            spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        )
    return RequiredNodeAffinity(selector, affinity)


def match_node_selector_terms(
    node: V1Node | None, node_selector: V1NodeSelector
) -> tuple[bool, Exception | None]:
    """Whether the node matches some of the selector's terms (upstream: MatchNodeSelectorTerms
    in component-helpers/scheduling/corev1/helpers.go)."""
    if node is None:
        return False, None
    return new_lazy_error_node_selector(node_selector).match(node)
