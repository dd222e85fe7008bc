"""The framework's vocabulary: codes, Status, merging, and the FitError message (steps 2+)."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.conftest import built_steps, step_module
from tests.fakes import make_pod

STEPS = built_steps(2)


@pytest.fixture(params=STEPS, ids=lambda n: f"step{n}")
def fw(request: pytest.FixtureRequest) -> ModuleType:
    """The step's framework module."""
    return step_module(request.param, "framework")


def test_codes_have_upstreams_values(fw: ModuleType) -> None:
    assert [(c.name, int(c)) for c in fw.Code] == [
        ("SUCCESS", 0),
        ("ERROR", 1),
        ("UNSCHEDULABLE", 2),
        ("UNSCHEDULABLE_AND_UNRESOLVABLE", 3),
        ("WAIT", 4),
        ("SKIP", 5),
    ]


def test_status_basics(fw: ModuleType) -> None:
    Code, Status = fw.Code, fw.Status
    assert Status().is_success() and Status().as_error() is None
    s = Status(Code.UNSCHEDULABLE, ["a", "b"])
    assert s.message() == "a, b"
    assert s.is_unschedulable() and not s.is_success()
    assert str(s.as_error()) == "a, b"
    assert Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE).is_unschedulable()
    assert not Status(Code.ERROR).is_unschedulable()
    assert not Status(Code.WAIT).is_unschedulable()
    assert s.with_failed_plugin("P") is s and s.failed_plugin == "P"
    err = ValueError("boom")
    wrapped = fw.as_status(err)
    assert wrapped.code == Code.ERROR and wrapped.as_error() is err and wrapped.message() == "boom"


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (["SUCCESS"], "SUCCESS"),
        (["WAIT", "SUCCESS"], "WAIT"),
        (["SKIP", "UNSCHEDULABLE"], "UNSCHEDULABLE"),
        (
            ["UNSCHEDULABLE", "UNSCHEDULABLE_AND_UNRESOLVABLE", "WAIT"],
            "UNSCHEDULABLE_AND_UNRESOLVABLE",
        ),
        (["UNSCHEDULABLE_AND_UNRESOLVABLE", "ERROR", "UNSCHEDULABLE"], "ERROR"),
        (["ERROR", "UNSCHEDULABLE_AND_UNRESOLVABLE"], "ERROR"),
    ],
)
def test_merge_keeps_the_strongest_code_its_plugin_and_every_reason(
    fw: ModuleType,
    codes: list[str],
    expected: str,
) -> None:
    statuses = fw.PluginToStatus(
        {
            f"P{i}": fw.Status(fw.Code[c], [f"r{i}"]).with_failed_plugin(f"P{i}")
            for i, c in enumerate(codes)
        }
    )
    merged = statuses.merge()
    assert merged.code == fw.Code[expected]
    assert merged.reasons == [f"r{i}" for i in range(len(codes))]
    if expected != "SUCCESS":
        assert merged.failed_plugin == f"P{codes.index(expected)}"
    if expected == "ERROR":
        assert merged.as_error() is not None


def test_merge_of_nothing_is_success(fw: ModuleType) -> None:
    assert fw.PluginToStatus().merge().is_success()


def test_merge_of_nothing_is_a_fresh_status(fw: ModuleType) -> None:
    # Every node that passes Filter merges an empty map: each gets an empty Success of its own,
    # never a shared one that a caller's change would reach.
    first = fw.PluginToStatus().merge()
    assert first == fw.Status()
    assert first.failed_plugin == "" and first.err is None
    first.reasons.append("changed")
    assert fw.PluginToStatus().merge() == fw.Status()


def _fit_error(fw: ModuleType, statuses: dict[str, list[str]], num_all_nodes: int) -> Exception:
    diagnosis = fw.Diagnosis()
    for node, reasons in statuses.items():
        diagnosis.node_to_status_map[node] = fw.Status(fw.Code.UNSCHEDULABLE, reasons)
    return fw.FitError(make_pod("pod1"), num_all_nodes, diagnosis)


def test_fit_error_message_is_upstreams(fw: ModuleType) -> None:
    err = _fit_error(fw, {f"node{i}": ["node(s) were unschedulable"] for i in range(10)}, 11)
    assert str(err) == "0/11 nodes are available: 10 node(s) were unschedulable."


def test_fit_error_histogram_is_sorted_as_strings_and_counts_every_reason(fw: ModuleType) -> None:
    statuses = {f"a{i}": ["node(s) were unschedulable"] for i in range(10)}
    statuses |= {"b0": ["Insufficient cpu", "Insufficient memory"], "b1": ["Insufficient cpu"]}
    err = _fit_error(fw, statuses, 13)
    # "10 ..." sorts before "2 ...": a string sort, as upstream's sort.Strings.
    assert str(err) == (
        "0/13 nodes are available: 1 Insufficient memory, 10 node(s) were unschedulable, "
        "2 Insufficient cpu."
    )
