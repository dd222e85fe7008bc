"""kube-scheduler v1.23's configuration test tables, ported case by case, run against every step
from 14 on (ids ``step<N>/...``).

Ported from QuarfotPrice/sched.dev@448ef7a3cea647dce342c869b72c2c3483cf1c1f, a copy of the
scheduler tree of kubernetes v1.23.4 (its defaults.go, default_plugins.go and validation.go are
v1.23.10's, as kubernetes-sigs/scheduler-plugins v0.23.10 vendors them):

- pkg/scheduler/apis/config/v1beta3/defaults_test.go and v1beta2/defaults_test.go
  (TestSchedulerDefaults, TestPluginArgsDefaults);
- pkg/scheduler/apis/config/v1beta3/default_plugins_test.go and v1beta2/default_plugins_test.go
  (TestApplyFeatureGates, TestMergePlugins);
- pkg/scheduler/apis/config/validation/validation_test.go
  (TestValidateKubeSchedulerConfigurationV1beta2, TestValidateKubeSchedulerConfigurationV1beta3);
- pkg/scheduler/apis/config/scheme/scheme_test.go (TestCodecsDecodePluginConfig: its error
  cases, whose texts upstream compares).

The ids are ``<upstream test>/<case name>``, prefixed with the version where upstream has one
table per version (``v1beta3/TestSchedulerDefaults/empty config``).

The tables are written with step 14's types, and each test converts them to its step's
(``in_step``: the same dataclasses, by module and name).

How the cases are restricted: upstream's default profiles and default args name every in-tree
plugin; the steps name only their own (``STEP_PLUGINS``), so each expected profile here is
upstream's with the other plugins, and their args (InterPodAffinityArgs, PodTopologySpreadArgs,
VolumeBindingArgs), left out. The defaulting functions of those args are ported all the same
(the args of a plugin the step lacks are defaulted and kept), so their TestPluginArgsDefaults
cases run. The versioned objects are dicts of their JSON fields (a Go nil is a missing key),
durations in nanoseconds, as ``config.set_defaults_kube_scheduler_configuration`` takes them.

xfail (strict), with the reason: the cases that set feature gates (not implemented), and, for
step 14, validation's extender cases (extenders came with step 15). Left out:
TestCodecsDecodePluginConfig's
successful cases and TestCodecsEncodePluginConfig (tests/test_config_files.py checks decoding
and encoding against the real binary instead).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

import pytest
from _pytest.mark import ParameterSet

from steps.step14 import config
from steps.step14.config import (
    V1BETA2,
    V1BETA3,
    ClientConnectionConfiguration,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
    VersionedArgs,
)
from steps.step14.plugins.defaultpreemption import DefaultPreemptionArgs
from tests.conftest import built_steps, step_module

STEPS = built_steps(14)

# The in-tree plugins the steps have.
STEP_PLUGINS = frozenset(
    {
        "PrioritySort",
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "DefaultPreemption",
        "DefaultBinder",
    }
)

NOT_IMPLEMENTED_FEATURE_GATES = "Not implemented: feature gates (v1.23's defaults are fixed)"
NOT_IMPLEMENTED_EXTENDERS = "Not implemented in step 14: extenders (step 15)"


def in_step(value: Any, step: int) -> Any:
    """``value``, built with step 14's types, with the step's own types: every dataclass of a
    ``steps.step14`` module becomes the class of the same name in the step's module."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        module = type(value).__module__.replace("steps.step14.", f"steps.step{step}.", 1)
        cls = getattr(importlib.import_module(module), type(value).__name__)
        fields = dataclasses.fields(value)
        return cls(**{f.name: in_step(getattr(value, f.name), step) for f in fields if f.init})
    if isinstance(value, list):
        return [in_step(v, step) for v in value]
    if isinstance(value, tuple):
        return tuple(in_step(v, step) for v in value)
    if isinstance(value, dict):
        return {k: in_step(v, step) for k, v in value.items()}
    return value


def per_step(
    params: list[ParameterSet], step_marks: Callable[[int, str], list[Any]] | None = None
) -> list[ParameterSet]:
    """Each case once per step, the step first among its values, id ``step<N>/<case id>``."""
    return [
        pytest.param(
            step,
            *param.values,
            id=f"step{step}/{param.id}",
            marks=[*param.marks, *(step_marks(step, param.id or "") if step_marks else [])],
        )
        for step in STEPS
        for param in params
    ]


def only_step_plugins(plugins: list[Plugin]) -> list[Plugin]:
    return [p for p in plugins if p.name in STEP_PLUGINS]


def p(name: str, weight: int | None = None) -> Plugin:
    return Plugin(name, weight)


# --- TestApplyFeatureGates (v1beta3) ------------------------------------------------------

# Upstream's v1beta3 default profile, whole.
V1BETA3_MULTI_POINT = [
    p("PrioritySort"),
    p("NodeUnschedulable"),
    p("NodeName"),
    p("TaintToleration", 3),
    p("NodeAffinity", 2),
    p("NodePorts"),
    p("NodeResourcesFit", 1),
    p("VolumeRestrictions"),
    p("EBSLimits"),
    p("GCEPDLimits"),
    p("NodeVolumeLimits"),
    p("AzureDiskLimits"),
    p("VolumeBinding"),
    p("VolumeZone"),
    p("PodTopologySpread", 2),
    p("InterPodAffinity", 2),
    p("DefaultPreemption"),
    p("NodeResourcesBalancedAllocation", 1),
    p("ImageLocality", 1),
    p("DefaultBinder"),
]


def v1beta3_default_plugins() -> Plugins:
    return Plugins(multi_point=PluginSet(enabled=only_step_plugins(V1BETA3_MULTI_POINT)))


@pytest.mark.parametrize(
    "step,features,want",
    per_step(
        [
            pytest.param(
                {}, V1BETA3_MULTI_POINT, id="TestApplyFeatureGates/Feature gates disabled"
            ),
            pytest.param(
                {"DefaultPodTopologySpread": False},
                [*V1BETA3_MULTI_POINT, p("SelectorSpread", 1)],
                id="TestApplyFeatureGates/DefaultPodTopologySpread disabled",
                marks=pytest.mark.xfail(strict=True, reason=NOT_IMPLEMENTED_FEATURE_GATES),
            ),
        ]
    ),
)
def test_apply_feature_gates(step: int, features: dict[str, bool], want: list[Plugin]) -> None:
    if features:
        pytest.fail("feature gates cannot be set")
    got = step_module(step, "config").get_default_plugins(V1BETA3)
    assert got == in_step(Plugins(multi_point=PluginSet(enabled=only_step_plugins(want))), step)


# --- TestMergePlugins (v1beta3, v1beta2) --------------------------------------------------------


def filter_set(enabled: list[Plugin], disabled: list[Plugin] | None = None) -> Plugins:
    return Plugins(filter=PluginSet(enabled=enabled, disabled=disabled or []))


# (name, custom, default, expected in v1beta3); v1beta2's table has the first eight cases,
# with the same expectations less the disabled lists (its mergePluginSet drops them).
MERGE_CASES: list[tuple[str, Plugins | None, Plugins, Plugins]] = [
    (
        "AppendCustomPlugin",
        filter_set([p("CustomPlugin")]),
        filter_set([p("DefaultPlugin1"), p("DefaultPlugin2")]),
        filter_set([p("DefaultPlugin1"), p("DefaultPlugin2"), p("CustomPlugin")]),
    ),
    (
        "InsertAfterDefaultPlugins2",
        filter_set([p("CustomPlugin"), p("DefaultPlugin2")], [p("DefaultPlugin2")]),
        filter_set([p("DefaultPlugin1"), p("DefaultPlugin2")]),
        filter_set(
            [p("DefaultPlugin1"), p("CustomPlugin"), p("DefaultPlugin2")], [p("DefaultPlugin2")]
        ),
    ),
    (
        "InsertBeforeAllPlugins",
        filter_set([p("CustomPlugin"), p("DefaultPlugin1"), p("DefaultPlugin2")], [p("*")]),
        filter_set([p("DefaultPlugin1"), p("DefaultPlugin2")]),
        filter_set([p("CustomPlugin"), p("DefaultPlugin1"), p("DefaultPlugin2")], [p("*")]),
    ),
    (
        "ReorderDefaultPlugins",
        filter_set([p("DefaultPlugin2"), p("DefaultPlugin1")], [p("*")]),
        filter_set([p("DefaultPlugin1"), p("DefaultPlugin2")]),
        filter_set([p("DefaultPlugin2"), p("DefaultPlugin1")], [p("*")]),
    ),
    (
        "ApplyNilCustomPlugin",
        None,
        filter_set([p("DefaultPlugin1"), p("DefaultPlugin2")]),
        filter_set([p("DefaultPlugin1"), p("DefaultPlugin2")]),
    ),
    (
        "CustomPluginOverrideDefaultPlugin",
        filter_set([p("Plugin1", 2), p("Plugin3", 3)]),
        filter_set([p("Plugin1"), p("Plugin2"), p("Plugin3")]),
        filter_set([p("Plugin1", 2), p("Plugin2"), p("Plugin3", 3)]),
    ),
    (
        "OrderPreserveAfterOverride",
        filter_set([p("Plugin2", 2), p("Plugin1", 1)]),
        filter_set([p("Plugin1"), p("Plugin2"), p("Plugin3")]),
        filter_set([p("Plugin1", 1), p("Plugin2", 2), p("Plugin3")]),
    ),
    (
        "RepeatedCustomPlugin",
        filter_set([p("Plugin1"), p("Plugin2", 2), p("Plugin3"), p("Plugin2", 4)]),
        filter_set([p("Plugin1"), p("Plugin2"), p("Plugin3")]),
        filter_set([p("Plugin1"), p("Plugin2", 4), p("Plugin3"), p("Plugin2", 2)]),
    ),
    (
        "Append custom MultiPoint plugin",
        Plugins(multi_point=PluginSet([p("CustomPlugin")])),
        Plugins(multi_point=PluginSet([p("DefaultPlugin1"), p("DefaultPlugin2")])),
        Plugins(
            multi_point=PluginSet([p("DefaultPlugin1"), p("DefaultPlugin2"), p("CustomPlugin")])
        ),
    ),
    (
        "Append disabled Multipoint plugins",
        Plugins(
            multi_point=PluginSet([p("CustomPlugin"), p("CustomPlugin2")], [p("DefaultPlugin2")]),
            score=PluginSet(disabled=[p("CustomPlugin2")]),
        ),
        Plugins(multi_point=PluginSet([p("DefaultPlugin1"), p("DefaultPlugin2")])),
        Plugins(
            multi_point=PluginSet(
                [p("DefaultPlugin1"), p("CustomPlugin"), p("CustomPlugin2")], [p("DefaultPlugin2")]
            ),
            score=PluginSet(disabled=[p("CustomPlugin2")]),
        ),
    ),
    (
        "override default MultiPoint plugins with custom value",
        Plugins(multi_point=PluginSet([p("DefaultPlugin", 5)])),
        Plugins(multi_point=PluginSet([p("DefaultPlugin")])),
        Plugins(multi_point=PluginSet([p("DefaultPlugin", 5)])),
    ),
    (
        "disabled MultiPoint plugin in default set",
        Plugins(multi_point=PluginSet([p("CustomPlugin")])),
        Plugins(multi_point=PluginSet([p("DefaultPlugin")], [p("DefaultPlugin2")])),
        Plugins(
            multi_point=PluginSet([p("DefaultPlugin"), p("CustomPlugin")], [p("DefaultPlugin2")])
        ),
    ),
    (
        "disabled MultiPoint plugin in default set for specific extension point",
        Plugins(multi_point=PluginSet([p("CustomPlugin")])),
        Plugins(
            multi_point=PluginSet([p("DefaultPlugin")]),
            score=PluginSet(disabled=[p("DefaultPlugin2")]),
        ),
        Plugins(
            multi_point=PluginSet([p("DefaultPlugin"), p("CustomPlugin")]),
            score=PluginSet(disabled=[p("DefaultPlugin2")]),
        ),
    ),
    (
        "multipoint with only disabled gets merged",
        Plugins(multi_point=PluginSet(disabled=[p("DefaultPlugin")])),
        Plugins(multi_point=PluginSet([p("DefaultPlugin")])),
        Plugins(multi_point=PluginSet(disabled=[p("DefaultPlugin")])),
    ),
]


def without_disabled(plugins: Plugins) -> Plugins:
    out = copy.deepcopy(plugins)
    for point, _ in config.EXTENSION_POINTS:
        getattr(out, point).disabled = []
    return out


@pytest.mark.parametrize(
    "step,custom,default,want",
    per_step(
        [pytest.param(c, d, w, id=f"v1beta3/TestMergePlugins/{n}") for n, c, d, w in MERGE_CASES]
    ),
)
def test_merge_plugins_v1beta3(
    step: int, custom: Plugins | None, default: Plugins, want: Plugins
) -> None:
    merged = step_module(step, "config").merge_plugins(
        in_step(default, step), in_step(custom, step), V1BETA3
    )
    assert merged == in_step(want, step)


@pytest.mark.parametrize(
    "step,custom,default,want",
    per_step(
        [
            pytest.param(c, d, without_disabled(w), id=f"v1beta2/TestMergePlugins/{n}")
            for n, c, d, w in MERGE_CASES[:8]
        ]
    ),
)
def test_merge_plugins_v1beta2(
    step: int, custom: Plugins | None, default: Plugins, want: Plugins
) -> None:
    merged = step_module(step, "config").merge_plugins(
        in_step(default, step), in_step(custom, step), V1BETA2
    )
    assert merged == in_step(want, step)


# --- TestSchedulerDefaults (v1beta3, v1beta2) -----------------------------------------------

# Upstream's v1beta2 default profile, whole.
V1BETA2_DEFAULT_PLUGINS = {
    "queue_sort": [p("PrioritySort")],
    "pre_filter": [
        p("NodeResourcesFit"),
        p("NodePorts"),
        p("VolumeRestrictions"),
        p("PodTopologySpread"),
        p("InterPodAffinity"),
        p("VolumeBinding"),
        p("NodeAffinity"),
    ],
    "filter": [
        p("NodeUnschedulable"),
        p("NodeName"),
        p("TaintToleration"),
        p("NodeAffinity"),
        p("NodePorts"),
        p("NodeResourcesFit"),
        p("VolumeRestrictions"),
        p("EBSLimits"),
        p("GCEPDLimits"),
        p("NodeVolumeLimits"),
        p("AzureDiskLimits"),
        p("VolumeBinding"),
        p("VolumeZone"),
        p("PodTopologySpread"),
        p("InterPodAffinity"),
    ],
    "post_filter": [p("DefaultPreemption")],
    "pre_score": [
        p("InterPodAffinity"),
        p("PodTopologySpread"),
        p("TaintToleration"),
        p("NodeAffinity"),
    ],
    "score": [
        p("NodeResourcesBalancedAllocation", 1),
        p("ImageLocality", 1),
        p("InterPodAffinity", 1),
        p("NodeResourcesFit", 1),
        p("NodeAffinity", 1),
        p("PodTopologySpread", 2),
        p("TaintToleration", 1),
    ],
    "reserve": [p("VolumeBinding")],
    "pre_bind": [p("VolumeBinding")],
    "bind": [p("DefaultBinder")],
}


def v1beta2_default_plugins() -> Plugins:
    return Plugins(
        **{
            point: PluginSet(enabled=only_step_plugins(items))
            for point, items in V1BETA2_DEFAULT_PLUGINS.items()
        }
    )


def plugin_configs(version: str) -> list[dict[str, Any]]:
    """Upstream's pluginConfigs, restricted to the steps' plugins (InterPodAffinity,
    PodTopologySpread and VolumeBinding are not enabled, so get no default args)."""
    two = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    return [
        {
            "name": "DefaultPreemption",
            "args": VersionedArgs(
                "DefaultPreemptionArgs",
                version,
                {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
            ),
        },
        {"name": "NodeAffinity", "args": VersionedArgs("NodeAffinityArgs", version)},
        {
            "name": "NodeResourcesBalancedAllocation",
            "args": VersionedArgs(
                "NodeResourcesBalancedAllocationArgs", version, {"resources": copy.deepcopy(two)}
            ),
        },
        {
            "name": "NodeResourcesFit",
            "args": VersionedArgs(
                "NodeResourcesFitArgs",
                version,
                {"scoringStrategy": {"type": "LeastAllocated", "resources": copy.deepcopy(two)}},
            ),
        },
    ]


def defaulted(parallelism: int, profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """The expected configuration around its profiles: every other field defaulted."""
    return {
        "parallelism": parallelism,
        "enableProfiling": True,
        "enableContentionProfiling": True,
        "leaderElection": {
            "leaderElect": True,
            "leaseDuration": 15_000_000_000,
            "renewDeadline": 10_000_000_000,
            "retryPeriod": 2_000_000_000,
            "resourceLock": "leases",
            "resourceNamespace": "kube-system",
            "resourceName": "kube-scheduler",
        },
        "clientConnection": {
            "qps": 50.0,
            "burst": 100,
            "contentType": "application/vnd.kubernetes.protobuf",
        },
        "percentageOfNodesToScore": 0,
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 10,
        "profiles": profiles,
    }


def scheduler_defaults_cases(version: str) -> list[Any]:
    default_plugins = v1beta3_default_plugins if version == V1BETA3 else v1beta2_default_plugins

    def default_profile() -> dict[str, Any]:
        return {
            "schedulerName": "default-scheduler",
            "plugins": default_plugins(),
            "pluginConfig": plugin_configs(version),
        }

    custom_plugins = default_plugins()
    if version == V1BETA3:
        # v1beta3 keeps the disabled DefaultBinder (multiPoint still enables it: the
        # framework's expansion skips it at Bind).
        custom_plugins.bind = PluginSet([p("BarPlugin")], [p("DefaultBinder")])
    else:
        custom_plugins.bind = PluginSet([p("BarPlugin")])
    cases = [
        ("empty config", {}, defaulted(16, [default_profile()])),
        ("no scheduler name", {"profiles": [{}]}, defaulted(16, [default_profile()])),
        (
            "two profiles",
            {
                "parallelism": 16,
                "profiles": [
                    {"pluginConfig": [{"name": "FooPlugin"}]},
                    {
                        "schedulerName": "custom-scheduler",
                        "plugins": {
                            "bind": {
                                "enabled": [{"name": "BarPlugin"}],
                                "disabled": [{"name": "DefaultBinder"}],
                            }
                        },
                    },
                ],
            },
            defaulted(
                16,
                [
                    {
                        "plugins": default_plugins(),
                        "pluginConfig": [{"name": "FooPlugin"}, *plugin_configs(version)],
                    },
                    {
                        "schedulerName": "custom-scheduler",
                        "plugins": custom_plugins,
                        "pluginConfig": plugin_configs(version),
                    },
                ],
            ),
        ),
        ("set non default parallelism", {"parallelism": 8}, defaulted(8, [default_profile()])),
    ]
    if version == V1BETA3:
        cases.insert(
            3, ("Prallelism with no port", {"parallelism": 16}, defaulted(16, [default_profile()]))
        )
    pkg = version.rsplit("/", 1)[1]
    return [
        pytest.param(version, given, want, id=f"{pkg}/TestSchedulerDefaults/{name}")
        for name, given, want in cases
    ]


@pytest.mark.parametrize(
    "step,version,given,want",
    per_step(scheduler_defaults_cases(V1BETA3) + scheduler_defaults_cases(V1BETA2)),
)
def test_scheduler_defaults(
    step: int, version: str, given: dict[str, Any], want: dict[str, Any]
) -> None:
    obj = copy.deepcopy(given)
    step_module(step, "config").set_defaults_kube_scheduler_configuration(obj, version)
    assert obj == in_step(want, step)


# --- TestPluginArgsDefaults (v1beta3; v1beta2's table is the same) ------------------------------

ARGS_DEFAULTS_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], str | None]] = [
    (
        "DefaultPreemptionArgs empty",
        "DefaultPreemptionArgs",
        {},
        {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
        None,
    ),
    (
        "DefaultPreemptionArgs with value",
        "DefaultPreemptionArgs",
        {"minCandidateNodesPercentage": 50},
        {"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 100},
        None,
    ),
    ("InterPodAffinityArgs empty", "InterPodAffinityArgs", {}, {"hardPodAffinityWeight": 1}, None),
    (
        "InterPodAffinityArgs explicit 0",
        "InterPodAffinityArgs",
        {"hardPodAffinityWeight": 0},
        {"hardPodAffinityWeight": 0},
        None,
    ),
    (
        "InterPodAffinityArgs with value",
        "InterPodAffinityArgs",
        {"hardPodAffinityWeight": 5},
        {"hardPodAffinityWeight": 5},
        None,
    ),
    (
        "NodeResourcesBalancedAllocationArgs resources empty",
        "NodeResourcesBalancedAllocationArgs",
        {},
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]},
        None,
    ),
    (
        "NodeResourcesBalancedAllocationArgs with scalar resource",
        "NodeResourcesBalancedAllocationArgs",
        {"resources": [{"name": "scalar.io/scalar1", "weight": 1}]},
        {"resources": [{"name": "scalar.io/scalar1", "weight": 1}]},
        None,
    ),
    (
        "NodeResourcesBalancedAllocationArgs with mixed resources",
        "NodeResourcesBalancedAllocationArgs",
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "scalar.io/scalar1", "weight": 1}]},
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "scalar.io/scalar1", "weight": 1}]},
        None,
    ),
    (
        "NodeResourcesBalancedAllocationArgs have resource no weight",
        "NodeResourcesBalancedAllocationArgs",
        {
            "resources": [
                {"name": "cpu"},
                {"name": "scalar.io/scalar0"},
                {"name": "scalar.io/scalar1", "weight": 1},
            ]
        },
        {
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "scalar.io/scalar0", "weight": 1},
                {"name": "scalar.io/scalar1", "weight": 1},
            ]
        },
        None,
    ),
    (
        "PodTopologySpreadArgs resources empty",
        "PodTopologySpreadArgs",
        {},
        {"defaultingType": "System"},
        None,
    ),
    (
        "PodTopologySpreadArgs resources with value",
        "PodTopologySpreadArgs",
        {
            "defaultConstraints": [
                {"topologyKey": "planet", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 2}
            ]
        },
        {
            "defaultConstraints": [
                {"topologyKey": "planet", "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 2}
            ],
            "defaultingType": "System",
        },
        None,
    ),
    (
        "PodTopologySpreadArgs empty, DefaultPodTopologySpread feature disabled",
        "PodTopologySpreadArgs",
        {},
        {"defaultingType": "List"},
        NOT_IMPLEMENTED_FEATURE_GATES,
    ),
    (
        "NodeResourcesFitArgs not set",
        "NodeResourcesFitArgs",
        {},
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            }
        },
        None,
    ),
    (
        "NodeResourcesFitArgs Resources empty",
        "NodeResourcesFitArgs",
        {"scoringStrategy": {"type": "MostAllocated"}},
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            }
        },
        None,
    ),
    (
        "VolumeBindingArgs empty, VolumeCapacityPriority disabled",
        "VolumeBindingArgs",
        {},
        {"bindTimeoutSeconds": 600},
        None,
    ),
    (
        "VolumeBindingArgs empty, VolumeCapacityPriority enabled",
        "VolumeBindingArgs",
        {},
        {
            "bindTimeoutSeconds": 600,
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
        },
        NOT_IMPLEMENTED_FEATURE_GATES,
    ),
]


@pytest.mark.parametrize(
    "step,kind,given,want",
    per_step(
        [
            pytest.param(
                kind,
                given,
                want,
                id=f"TestPluginArgsDefaults/{name}",
                marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [],
            )
            for name, kind, given, want, reason in ARGS_DEFAULTS_CASES
        ]
    ),
)
def test_plugin_args_defaults(
    step: int, kind: str, given: dict[str, Any], want: dict[str, Any]
) -> None:
    step_config = step_module(step, "config")
    args = step_config.VersionedArgs(kind, V1BETA3, copy.deepcopy(given))
    step_config.default_args(args)
    assert args.fields == want


# --- TestValidateKubeSchedulerConfigurationV1beta2, ...V1beta3 -------------------------------


def valid_config(version: str) -> KubeSchedulerConfiguration:
    return KubeSchedulerConfiguration(
        api_version=version,
        parallelism=8,
        client_connection=ClientConnectionConfiguration(
            accept_content_types="application/json",
            content_type="application/json",
            qps=10,
            burst=10,
        ),
        leader_election=LeaderElectionConfiguration(
            resource_lock="configmap",
            leader_elect=True,
            lease_duration="30s",
            renew_deadline="15s",
            retry_period="5s",
            resource_namespace="name",
            resource_name="name",
        ),
        pod_initial_backoff_seconds=1,
        pod_max_backoff_seconds=1,
        percentage_of_nodes_to_score=35,
        profiles=[
            KubeSchedulerProfile(
                scheduler_name="me",
                plugins=Plugins(
                    queue_sort=PluginSet([p("CustomSort")]),
                    score=PluginSet(disabled=[p("*")]),
                ),
                plugin_config=[PluginConfig("DefaultPreemption", DefaultPreemptionArgs(10, 100))],
            ),
            KubeSchedulerProfile(
                scheduler_name="other",
                plugins=Plugins(
                    queue_sort=PluginSet([p("CustomSort")]),
                    bind=PluginSet([p("CustomBind")]),
                ),
            ),
        ],
        # As the file's dicts, as step 14 keeps them; ``config_in_step`` makes them the
        # step's Extenders from step 15 on.
        extenders=[{"prioritizeVerb": "prioritize", "weight": 1}],
    )


def config_in_step(cfg: KubeSchedulerConfiguration, step: int) -> Any:
    """``cfg`` with the step's types; its extenders as the step's Extender where it has one."""
    out = in_step(cfg, step)
    step_config = step_module(step, "config")
    if hasattr(step_config, "Extender"):
        out.extenders = [
            step_config.Extender(
                prioritize_verb=e.get("prioritizeVerb", ""),
                weight=e.get("weight", 0),
                bind_verb=e.get("bindVerb", ""),
                managed_resources=[
                    step_config.ExtenderManagedResource(r["name"], r["ignoredByScheduler"])
                    for r in e.get("managedResources", [])
                ],
            )
            for e in out.extenders
        ]
    return out


def set_parallelism(c: KubeSchedulerConfiguration) -> None:
    c.parallelism = 0


def unset_resource_name(c: KubeSchedulerConfiguration) -> None:
    c.leader_election.resource_name = ""


def unset_resource_namespace(c: KubeSchedulerConfiguration) -> None:
    c.leader_election.resource_namespace = ""


def set_metrics_bind_address(c: KubeSchedulerConfiguration) -> None:
    c.metrics_bind_address = "0.0.0.0:9090"


def set_healthz_bind_address(c: KubeSchedulerConfiguration) -> None:
    c.healthz_bind_address = "0.0.0.0:9090"


def set_percentage_101(c: KubeSchedulerConfiguration) -> None:
    c.percentage_of_nodes_to_score = 101


def unset_scheduler_name(c: KubeSchedulerConfiguration) -> None:
    c.profiles[1].scheduler_name = ""


def repeat_scheduler_name(c: KubeSchedulerConfiguration) -> None:
    c.profiles[0].scheduler_name = "other"


def different_queue_sort(c: KubeSchedulerConfiguration) -> None:
    c.profiles[1].plugins.queue_sort.enabled[0].name = "AnotherSort"


def one_empty_queue_sort(c: KubeSchedulerConfiguration) -> None:
    c.profiles[0].plugins = None


def extender_negative_weight(c: KubeSchedulerConfiguration) -> None:
    c.extenders[0]["weight"] = -1


def extender_duplicate_managed_resource(c: KubeSchedulerConfiguration) -> None:
    c.extenders[0]["managedResources"] = [
        {"name": "foo", "ignoredByScheduler": False},
        {"name": "foo", "ignoredByScheduler": False},
    ]


def extender_duplicate_bind(c: KubeSchedulerConfiguration) -> None:
    c.extenders[0]["bindVerb"] = "foo"
    c.extenders.append({"prioritizeVerb": "prioritize", "bindVerb": "bar"})


def invalid_node_percentage(c: KubeSchedulerConfiguration) -> None:
    c.profiles[0].plugin_config = [
        PluginConfig("DefaultPreemption", DefaultPreemptionArgs(200, 100))
    ]


def invalid_plugin_args(c: KubeSchedulerConfiguration) -> None:
    # Upstream: an InterPodAffinityArgs, which the steps keep as a plain dict of its fields.
    c.profiles[0].plugin_config = [PluginConfig("DefaultPreemption", {})]


def duplicated_plugin_config(c: KubeSchedulerConfiguration) -> None:
    c.profiles[0].plugin_config = [PluginConfig("config"), PluginConfig("config")]


def mismatch_queue_sort(c: KubeSchedulerConfiguration) -> None:
    c.profiles = [
        KubeSchedulerProfile(
            "me",
            Plugins(queue_sort=PluginSet([p("PrioritySort")])),
            [PluginConfig("PrioritySort")],
        ),
        KubeSchedulerProfile(
            "other",
            Plugins(queue_sort=PluginSet([p("CustomSort")])),
            [PluginConfig("CustomSort")],
        ),
    ]


def good_removed_plugins_2(c: KubeSchedulerConfiguration) -> None:
    c.profiles[0].plugins.score.enabled.append(p("PodTopologySpread", 2))


VALIDATION_SCENARIOS: list[
    tuple[str, Callable[[KubeSchedulerConfiguration], None] | None, bool]
] = [
    ("good", None, False),
    ("bad-parallelism-invalid-value", set_parallelism, True),
    ("bad-resource-name-not-set", unset_resource_name, True),
    ("bad-resource-namespace-not-set", unset_resource_namespace, True),
    ("non-empty-metrics-bind-addr", set_metrics_bind_address, True),
    ("non-empty-healthz-bind-addr", set_healthz_bind_address, True),
    ("bad-percentage-of-nodes-to-score", set_percentage_101, True),
    ("scheduler-name-not-set", unset_scheduler_name, True),
    ("repeated-scheduler-name", repeat_scheduler_name, True),
    ("different-queue-sort", different_queue_sort, True),
    ("one-empty-queue-sort", one_empty_queue_sort, True),
    ("extender-negative-weight", extender_negative_weight, True),
    ("extender-duplicate-managed-resources", extender_duplicate_managed_resource, True),
    ("extender-duplicate-bind", extender_duplicate_bind, True),
    ("invalid-node-percentage", invalid_node_percentage, True),
    ("invalid-plugin-args", invalid_plugin_args, True),
    ("duplicated-plugin-config", duplicated_plugin_config, True),
    ("mismatch-queue-sort", mismatch_queue_sort, True),
    ("good-removed-plugins-2", good_removed_plugins_2, False),
]


def validation_cases() -> list[Any]:
    out = []
    for test, version in (
        ("TestValidateKubeSchedulerConfigurationV1beta2", V1BETA2),
        ("TestValidateKubeSchedulerConfigurationV1beta3", V1BETA3),
    ):
        for name, mutate, fails in VALIDATION_SCENARIOS:
            out.append(pytest.param(version, mutate, fails, id=f"{test}/{name}"))

    def extenders_in_step_15(step: int, case_id: str) -> list[Any]:
        if step < 15 and "/extender-" in case_id:
            return [pytest.mark.xfail(strict=True, reason=NOT_IMPLEMENTED_EXTENDERS)]
        return []

    return per_step(out, extenders_in_step_15)


@pytest.mark.parametrize("step,version,mutate,expected_to_fail", validation_cases())
def test_validate_kube_scheduler_configuration(
    step: int,
    version: str,
    mutate: Callable[[KubeSchedulerConfiguration], None] | None,
    expected_to_fail: bool,
) -> None:
    cfg = valid_config(version)
    if mutate is not None:
        mutate(cfg)
    validation = step_module(step, "validation")
    errs = validation.validate_kube_scheduler_configuration(config_in_step(cfg, step))
    assert (errs is not None) == expected_to_fail, str(errs)


# --- TestCodecsDecodePluginConfig (its error cases) ----------------------------------------

DECODE_ERROR_CASES = [
    (
        "plugin group and kind should match the type",
        """
apiVersion: kubescheduler.config.k8s.io/{version}
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: DefaultPreemption
    args:
      apiVersion: kubescheduler.config.k8s.io/{version}
      kind: InterPodAffinityArgs
""",
        "decoding .profiles[0].pluginConfig[0]: args for plugin DefaultPreemption were not of "
        "type DefaultPreemptionArgs.kubescheduler.config.k8s.io, got "
        "InterPodAffinityArgs.kubescheduler.config.k8s.io",
    ),
    (
        "{version} NodResourcesFitArgs shape encoding is strict",
        """
apiVersion: kubescheduler.config.k8s.io/{version}
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        requestedToCapacityRatio:
          shape:
          - Score: 2
            Utilization: 1
""",
        "decoding .profiles[0].pluginConfig[0]: decoding args for plugin NodeResourcesFit: "
        'strict decoding error: unknown field "Score", unknown field "Utilization"',
    ),
    (
        "{version} NodeResourcesFitArgs resources encoding is strict",
        """
apiVersion: kubescheduler.config.k8s.io/{version}
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        resources:
        - Name: cpu
          Weight: 1
""",
        "decoding .profiles[0].pluginConfig[0]: decoding args for plugin NodeResourcesFit: "
        'strict decoding error: unknown field "Name", unknown field "Weight"',
    ),
]


@pytest.mark.parametrize(
    "step,data,want",
    per_step(
        [
            pytest.param(
                data.format(version=version),
                want,
                id=f"TestCodecsDecodePluginConfig/{name.format(version=version)}"
                + ("" if "{version}" in name else f" ({version})"),
            )
            for version in ("v1beta2", "v1beta3")
            for name, data, want in DECODE_ERROR_CASES
        ]
    ),
)
def test_codecs_decode_plugin_config_errors(step: int, data: str, want: str) -> None:
    step_config = step_module(step, "config")
    with pytest.raises(step_config.ConfigError) as e:
        step_config.load_config(data)
    assert str(e.value) == want
