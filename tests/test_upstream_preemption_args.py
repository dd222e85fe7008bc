"""kube-scheduler v1.23's own tests of DefaultPreemption's args, ported case by case and run
against every step from 14, the step whose DefaultPreemption factory reads and validates its
args.

Ported from kubernetes v1.23.4's scheduler as vendored into QuarfotPrice/sched.dev (read at
commit 448ef7a3cea647dce342c869b72c2c3483cf1c1f; the same at
bd78f932b5685f63c0bbe4aeffd822663695557b), checked against v1.23.10's
validation_pluginargs.go and default_preemption.go (kubernetes-sigs/scheduler-plugins v0.23.10's
vendor tree), which are the same:

- pkg/scheduler/apis/config/validation/validation_pluginargs_test.go:
  TestValidateDefaultPreemptionArgs. Its errors are compared as upstream compares them (cmp
  with ``ignoreBadValueDetail``: each error's type and field); their texts, and that New
  returns the same error, are this project's checks.
- pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go: the
  TestDryRunPreemption cases that set DefaultPreemptionArgs. Upstream builds the plugin
  directly, as tests/test_upstream_preemption.py does on steps 11 and 12; here the step's
  framework builds it from a profile whose pluginConfig carries the args (the path a
  configuration file takes), so the factory ``new`` (upstream: New) validates and keeps them.
  The tables and fakes are that module's.

Left out: nothing else of these files reads the args (v1.23 has no test of
calculateNumCandidates of its own; TestPostFilter, TestSelectBestCandidate and TestPreempt use
the default args). The case that needs PDBs stays an expected failure, as there.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from minisched.clock import FakeClock
from tests import test_upstream_preemption as up
from tests.conftest import built_steps, step_module
from tests.fakes import FakeCoreV1Api, FakeEventRecorder, ListRecorder

STEPS = built_steps(14)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

INVALID = "FieldValueInvalid"
PERCENTAGE, ABSOLUTE = "minCandidateNodesPercentage", "minCandidateNodesAbsolute"


# --- validation_pluginargs_test.go: TestValidateDefaultPreemptionArgs -------------------------

VALIDATE_DEFAULT_PREEMPTION_ARGS = [
    pytest.param(10, 100, None, id="TestValidateDefaultPreemptionArgs/valid args (default)"),
    pytest.param(
        -1,
        100,
        [(INVALID, PERCENTAGE)],
        id="TestValidateDefaultPreemptionArgs/negative minCandidateNodesPercentage",
    ),
    pytest.param(
        900,
        100,
        [(INVALID, PERCENTAGE)],
        id="TestValidateDefaultPreemptionArgs/minCandidateNodesPercentage over 100",
    ),
    pytest.param(
        20,
        -1,
        [(INVALID, ABSOLUTE)],
        id="TestValidateDefaultPreemptionArgs/negative minCandidateNodesAbsolute",
    ),
    pytest.param(
        0,
        0,
        [(INVALID, PERCENTAGE), (INVALID, ABSOLUTE)],
        id="TestValidateDefaultPreemptionArgs/all zero",
    ),
    pytest.param(
        -1,
        -1,
        [(INVALID, PERCENTAGE), (INVALID, ABSOLUTE)],
        id="TestValidateDefaultPreemptionArgs/both negative",
    ),
]


@step_param
@pytest.mark.parametrize(("percentage", "absolute", "want_errs"), VALIDATE_DEFAULT_PREEMPTION_ARGS)
def test_validate_default_preemption_args(
    step: int, percentage: int, absolute: int, want_errs: list[tuple[str, str]] | None
) -> None:
    dp = step_module(step, "plugins.defaultpreemption")
    args = dp.DefaultPreemptionArgs(percentage, absolute)
    err = dp.validate_default_preemption_args(None, args)
    got = None if err is None else [(e.type, e.field) for e in err.errors()]
    assert got == want_errs
    if err is None:
        assert dp.new(args, None).args == args
    else:
        # Upstream: New validates the args and returns the error as it is.
        with pytest.raises(ValueError) as raised:
            dp.new(args, None)
        assert str(raised.value) == str(err)


@step_param
def test_default_preemption_args_texts(step: int) -> None:
    """The messages of ValidateDefaultPreemptionArgs, under a path."""
    dp = step_module(step, "plugins.defaultpreemption")

    def texts(percentage: int, absolute: int) -> list[str]:
        err = dp.validate_default_preemption_args(
            "args", dp.DefaultPreemptionArgs(percentage, absolute)
        )
        return [str(e) for e in err.errors()]

    assert texts(101, -1) == [
        "args.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
        "args.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
    ]
    assert texts(0, 0) == [
        "args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
        "minCandidateNodesAbsolute",
        "args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as "
        "minCandidateNodesPercentage",
    ]


@step_param
def test_new_takes_none_as_the_defaults_and_refuses_other_types(step: int) -> None:
    dp = step_module(step, "plugins.defaultpreemption")
    assert dp.new(None, None).args == dp.DefaultPreemptionArgs(10, 100)
    with pytest.raises(TypeError, match="want DefaultPreemptionArgs"):
        dp.new({"minCandidateNodesPercentage": 10}, None)


@step_param
@pytest.mark.parametrize(
    ("num_nodes", "percentage", "absolute", "want"),
    [
        (5, 40, 1, 2),  # 40 % of 5 nodes
        (5, 10, 100, 5),  # the defaults: at least 100, at most every node
        (2000, 10, 100, 200),
        (5, 0, 3, 3),
        (9, 50, 1, 4),  # 4.5 rounds down
    ],
)
def test_calculate_num_candidates(
    step: int, num_nodes: int, percentage: int, absolute: int, want: int
) -> None:
    """This project's check of calculateNumCandidates, which v1.23 tests only through
    TestDryRunPreemption below."""
    dp = step_module(step, "plugins.defaultpreemption")
    plugin = dp.new(dp.DefaultPreemptionArgs(percentage, absolute), None)
    assert plugin.calculate_num_candidates(num_nodes) == want


# --- default_preemption_test.go: TestDryRunPreemption, the cases that set the args ------------

DRY_RUN_WITH_ARGS = [p for p in up.DRY_RUN_CASES if p.values[0].args is not None]


def framework_with_args(
    step: int,
    registry: dict[str, Any],
    pre_filter: list[str],
    filter: list[str],
    args: Any,
    snapshot: Any,
    listed: list[client.V1Pod],
    offsets: list[int],
) -> Any:
    """The framework of up.harness, built from a KubeSchedulerProfile (step 14's runtime takes
    the configuration's profile) whose pluginConfig carries DefaultPreemption's args: the
    framework calls the factory with them, as kube-scheduler does. Like upstream's
    st.NewFramework in these tests, the profile also has PrioritySort and DefaultBinder, which
    a framework needs."""
    config = step_module(step, "config")
    plugins = step_module(step, "plugins")
    dp = step_module(step, "plugins.defaultpreemption")

    def enabled(*names: str) -> Any:
        return config.PluginSet(enabled=[config.Plugin(n) for n in names])

    profile = config.KubeSchedulerProfile(
        scheduler_name="default-scheduler",
        plugins=config.Plugins(
            queue_sort=enabled("PrioritySort"),
            pre_filter=enabled(*pre_filter),
            filter=enabled(*filter),
            post_filter=enabled(dp.NAME),
            bind=enabled("DefaultBinder"),
        ),
        plugin_config=[config.PluginConfig(dp.NAME, args)],
    )
    full = plugins.new_registry()
    store = up.Store(*listed)
    return step_module(step, "runtime").Framework(
        {
            **{n: full[n] for n in ("PrioritySort", "DefaultBinder", dp.NAME)},
            **registry,
        },
        profile,
        FakeClock(),
        ListRecorder(),
        client_set=FakeCoreV1Api(),
        snapshot_shared_lister=snapshot,
        event_recorder=lambda: FakeEventRecorder(),
        pod_lister=lambda: store,
        pod_nominator=step_module(step, "scheduling_queue").Nominator(lambda: store),
        rng=up.ReplayedRand(offsets),
    )


@step_param
@pytest.mark.parametrize("case", DRY_RUN_WITH_ARGS)
def test_dry_run_preemption_with_args(step: int, case: Any) -> None:
    """As tests/test_upstream_preemption.py's test_dry_run_preemption, with the plugin the
    framework builds from the profile's pluginConfig."""
    fw = step_module(step, "framework")
    preemption = step_module(step, "preemption")
    dp = step_module(step, "plugins.defaultpreemption")
    fake = up.FakeFilter(fw, {n: fw.Code[case.fake_filter_rc] for n in case.node_names})
    registry, pre_filter, filters = up.filter_plugins(step, case.plugins)
    nodes = [up.make_node(n, up.VERY_LARGE_RES, labels={"hostname": n}) for n in case.node_names]
    snapshot = up.new_snapshot(step, case.init_pods, nodes)
    fwk = framework_with_args(
        step,
        {"FakeFilter": lambda _a, _h: fake, **registry},
        pre_filter,
        ["FakeFilter", *filters],
        dp.DefaultPreemptionArgs(*case.args),
        snapshot,
        [*case.test_pods, *case.init_pods],
        case.offsets,
    )
    [plugin] = fwk.post_filter_plugins
    assert plugin.args == dp.DefaultPreemptionArgs(*case.args)
    node_infos = sorted(snapshot.list(), key=lambda ni: ni.node().metadata.name)
    prev = 0
    for cycle, pod in enumerate(case.test_pods):
        state = step_module(step, "cycle_state").CycleState()
        assert fwk.run_pre_filter_plugins(state, pod).is_success()
        ev = preemption.Evaluator(dp.NAME, fwk, state, plugin)
        offset, num_candidates = plugin.get_offset_and_num_candidates(len(node_infos))
        got, _, _ = ev.dry_run_preemption(pod, node_infos, case.pdbs, offset, num_candidates)
        called, prev = fake.num_filter_called - prev, fake.num_filter_called
        assert (cycle, up.candidates(got)) == (cycle, case.expected[cycle])
        assert (cycle, called) == (cycle, case.expected_num_filter_called[cycle])


@step_param
def test_invalid_args_fail_the_framework(step: int) -> None:
    """The framework reports the factory's validation error, naming the plugin."""
    dp = step_module(step, "plugins.defaultpreemption")
    with pytest.raises(ValueError) as err:
        framework_with_args(
            step, {}, [], [], dp.DefaultPreemptionArgs(0, 0), up.new_snapshot(step, [], []), [], []
        )
    assert "cannot be zero at the same time as minCandidateNodesAbsolute" in str(err.value)
