"""The upstream tests of the taint helpers ``corev1.py`` ports, case by case.

No stored copy of kubernetes is at v1.23, so the cases come from copies of other versions whose
functions have v1.23's signatures and behaviour (v1.23.10's toleration.go, taint.go and
component-helpers' helpers.go were read in the tree kubernetes-sigs/scheduler-plugins v0.23.10
vendors):

- staging/src/k8s.io/api/core/v1/toleration_test.go (TestTolerationToleratesTaint), read at
  ashierj/superdemo@c1cf94e91feedf4d7b64e64bcdefc7f21f8224f3 (ToleratesTaint(taint), as in
  v1.23), plus the one more case of the copy at
  cosmoskitten/kubernetes@4c430290ccdf6ba11194d8f5268b25c93aeea480 ("toleration have an empty
  key with operator Exists, expect tolerate everything"), whose answer v1.23 gives too;
- staging/src/k8s.io/component-helpers/scheduling/corev1/helpers_test.go
  (TestFindMatchingUntoleratedTaint), read at
  ashierj/superdemo@86435b28282edfa56ab3990aec6f7829df5c6243 (FindMatchingUntoleratedTaint(taints,
  tolerations, filter), as in v1.23).

The ids are ``<upstream test>/<the case's description>``, run against every built step from 13,
which brings ``corev1.py``.

Upstream tests not ported: TestMatchTaint and TestTaintToString (Taint.MatchTaint and
Taint.ToString have no port: the scheduler does not use them); TestPodPriority and
TestGetAvoidPodsFromNode of helpers_test.go (not ported); TestMatchNodeSelectorTerms and
TestMatchNodeSelectorTermsStateless (in tests/test_upstream_nodeaffinity.py); the cases with
the Gt and Lt operators, and TestCompareNumericValues, of the newer copies (kubernetes/kubernetes,
galal-hussein/kubernetes): the TaintTolerationComparisonOperators feature came long after v1.23,
whose ToleratesTaint tolerates nothing with an operator other than Equal and Exists.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module

STEPS = built_steps(13)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def taint(key: str, value: str | None = None, effect: str = "") -> client.V1Taint:
    """A Taint literal; the client's model requires an effect, so Go's empty one is ""."""
    return client.V1Taint(key=key, value=value, effect=effect)


def toleration(
    key: str | None = None,
    operator: str | None = None,
    value: str | None = None,
    effect: str | None = None,
) -> client.V1Toleration:
    return client.V1Toleration(key=key, operator=operator, value=value, effect=effect)


# --- TestTolerationToleratesTaint --------------------------------------------------------------

TOLERATES_TAINT = [
    pytest.param(
        toleration("foo", "Exists", effect=NO_SCHEDULE),
        taint("foo", effect=NO_SCHEDULE),
        True,
        id="TestTolerationToleratesTaint/toleration and taint have the same key and effect, and "
        "operator is Exists, and taint has no value, expect tolerated",
    ),
    pytest.param(
        toleration("foo", "Exists", effect=NO_SCHEDULE),
        taint("foo", "bar", NO_SCHEDULE),
        True,
        id="TestTolerationToleratesTaint/toleration and taint have the same key and effect, and "
        "operator is Exists, and taint has some value, expect tolerated",
    ),
    pytest.param(
        toleration("", "Exists", effect=NO_SCHEDULE),
        taint("foo", "bar", NO_SCHEDULE),
        True,
        id="TestTolerationToleratesTaint/toleration and taint have the same effect, toleration "
        "has empty key and operator is Exists, means match all taints, expect tolerated",
    ),
    pytest.param(
        toleration("foo", "Equal", "bar", NO_SCHEDULE),
        taint("foo", "bar", NO_SCHEDULE),
        True,
        id="TestTolerationToleratesTaint/toleration and taint have the same key, effect and "
        "value, and operator is Equal, expect tolerated",
    ),
    pytest.param(
        toleration("foo", "Equal", "value1", NO_SCHEDULE),
        taint("foo", "value2", NO_SCHEDULE),
        False,
        id="TestTolerationToleratesTaint/toleration and taint have the same key and effect, but "
        "different values, and operator is Equal, expect not tolerated",
    ),
    pytest.param(
        toleration("foo", "Equal", "bar", NO_SCHEDULE),
        taint("foo", "bar", NO_EXECUTE),
        False,
        id="TestTolerationToleratesTaint/toleration and taint have the same key and value, but "
        "different effects, and operator is Equal, expect not tolerated",
    ),
    # From the cosmoskitten/kubernetes copy.
    pytest.param(
        toleration("", "Exists", effect=""),
        taint("foo", "bar", NO_SCHEDULE),
        True,
        id="TestTolerationToleratesTaint/toleration have an empty key with operator Exists, "
        "expect tolerate everything",
    ),
]


@step_param
@pytest.mark.parametrize(("tol", "tnt", "expect_tolerated"), TOLERATES_TAINT)
def test_toleration_tolerates_taint(
    step: int, tol: client.V1Toleration, tnt: client.V1Taint, expect_tolerated: bool
) -> None:
    corev1 = step_module(step, "corev1")
    assert corev1.tolerates_taint(tol, tnt) is expect_tolerated
    # TolerationsTolerateTaint of the one toleration says the same.
    assert corev1.tolerations_tolerate_taint([tol], tnt) is expect_tolerated


# --- TestFindMatchingUntoleratedTaint ----------------------------------------------------------


def _all(t: client.V1Taint) -> bool:
    return True


def _none(t: client.V1Taint) -> bool:
    return False


def _no_execute(t: client.V1Taint) -> bool:
    return t.effect == NO_EXECUTE


FIND_MATCHING_UNTOLERATED_TAINT = [
    pytest.param(
        [],
        [],
        _all,
        True,
        id="TestFindMatchingUntoleratedTaint/empty tolerations tolerate empty taints",
    ),
    pytest.param(
        [toleration("foo", "Exists", effect=NO_SCHEDULE)],
        [],
        _all,
        True,
        id="TestFindMatchingUntoleratedTaint/non-empty tolerations tolerate empty taints",
    ),
    pytest.param(
        [toleration("foo", "Exists", effect=NO_SCHEDULE)],
        [taint("foo", effect=NO_SCHEDULE)],
        _all,
        True,
        id="TestFindMatchingUntoleratedTaint/tolerations match all taints, expect tolerated",
    ),
    pytest.param(
        [toleration("foo", "Exists", effect=NO_SCHEDULE)],
        [taint("bar", effect=NO_SCHEDULE)],
        _none,
        True,
        id="TestFindMatchingUntoleratedTaint/tolerations don't match taints, but no taints apply "
        "to the filter, expect tolerated",
    ),
    pytest.param(
        [toleration("foo", "Exists", effect=NO_SCHEDULE)],
        [taint("bar", effect=NO_SCHEDULE)],
        None,
        False,
        id="TestFindMatchingUntoleratedTaint/no filterFunc indicated, means all taints apply to "
        "the filter, tolerations don't match taints, expect untolerated",
    ),
    pytest.param(
        [toleration("foo", "Exists", effect=NO_EXECUTE)],
        [taint("foo", effect=NO_EXECUTE), taint("bar", effect=NO_SCHEDULE)],
        _no_execute,
        True,
        id="TestFindMatchingUntoleratedTaint/tolerations match taints, expect tolerated",
    ),
]


@step_param
@pytest.mark.parametrize(
    ("tolerations", "taints", "apply_filter", "expect_tolerated"), FIND_MATCHING_UNTOLERATED_TAINT
)
def test_find_matching_untolerated_taint(
    step: int,
    tolerations: list[client.V1Toleration],
    taints: list[client.V1Taint],
    apply_filter: Callable[[client.V1Taint], bool] | None,
    expect_tolerated: bool,
) -> None:
    corev1 = step_module(step, "corev1")
    found, untolerated = corev1.find_matching_untolerated_taint(taints, tolerations, apply_filter)
    assert untolerated is not expect_tolerated
    # v1.23 returns the first untolerated taint the filter keeps, or an empty one.
    if untolerated:
        kept = [t for t in taints if apply_filter is None or apply_filter(t)]
        assert found is kept[0]
