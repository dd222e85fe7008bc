"""KubeSchedulerConfiguration: the file kube-scheduler reads with ``--config``, decoded, defaulted
and written back as ``--write-config-to`` writes it.

Upstream, at v1.23.10 (as kubernetes-sigs/scheduler-plugins v0.23.10 vendors it):

- pkg/scheduler/apis/config/types.go: the internal types (the dataclasses below);
- k8s.io/kube-scheduler/config/v1beta2 and v1beta3 (types.go, types_pluginargs.go): the
  versioned types, here the schemas ``_schema`` and ``_ARGS_SCHEMAS`` check a file against;
- pkg/scheduler/apis/config/v1beta3/defaults.go, default_plugins.go (getDefaultPlugins,
  mergePlugins, mergePluginSet) and their v1beta2 twins, with component-base's
  config/v1alpha1/defaults.go (RecommendedDefaultLeaderElectionConfiguration);
- cmd/kube-scheduler/app/options/configfile.go (loadConfig, encodeConfig, LogOrWriteConfig),
  pkg/scheduler/apis/config/scheme/scheme.go (a strict codec), and the apimachinery pieces the
  codec runs: runtime/serializer/json (Decode, strict unmarshal), versioning (the codec:
  decode, nested args, default, convert), sigs.k8s.io/yaml (YAMLToJSON, YAMLToJSONStrict),
  sigs.k8s.io/json (the strict, case-sensitive decoder and its errors);
- pkg/scheduler/framework/runtime/framework.go (NewFramework's captured profile: what
  ``--write-config-to`` writes of each profile).

How a file becomes a configuration, as upstream's codec does it: YAML to JSON-like values
(a duplicate key is remembered, the last one wins); apiVersion and kind; a strict decode
against the version's schema (an unknown field is remembered, a value of the wrong type is
fatal); each pluginConfig's args decoded against its own kind (``<plugin name>Args``); then
the version's defaults; then the internal types. Decode errors raise ``ConfigError`` with
upstream's text; ``validation.validate_kube_scheduler_configuration`` checks the result.

Versions: v1beta2 and v1beta3 are what v1.23 reads; v1 is what kube-scheduler reads today
(v1.36). Differs from upstream: step 14 reads all three (v1.23 rejects v1, v1.36 rejects the
betas, with ``no kind "KubeSchedulerConfiguration" is registered for version ...``), and reads
v1 with v1beta3's schema and defaults: the fields v1 added later (plugins.preEnqueue, the
placement extension points, InterPodAffinityArgs.ignorePreferredTermsOfExistingPods,
DynamicResourcesArgs, ...) are unknown fields in a v1 file here, and v1's later default plugins
(SchedulingGates, DynamicResources, NodeDeclaredFeatures) are not in its default profile.

Not implemented: the plugins step 14 lacks (``NOT_IMPLEMENTED_PLUGINS``). They are left out of
the default profiles, so a pod's host ports, volumes, topology spread constraints and pod
(anti-)affinity are ignored, no node is preferred for having the pod's images, and the written
configuration lists none of them (nor their args). A file may name them in ``disabled``; naming
one in ``enabled`` fails when the framework is built (``Filter plugin "X" does not exist``).
Not implemented: the args of those plugins (InterPodAffinityArgs, PodTopologySpreadArgs,
VolumeBindingArgs) are checked against their schema, defaulted and kept as plain dicts of
their fields, which ``--write-config-to`` shows; they have no effect, and nothing validates
them. Not implemented: feature gates (v1.23's defaults, with DefaultPodTopologySpread on and
VolumeCapacityPriority off, are fixed: SelectorSpread is never a default plugin).
Not implemented: extenders (step 15): a file's extenders are kept as given (dicts), neither
checked field by field nor defaulted.
Simplified: PodTopologySpreadArgs.defaultConstraints' items are not checked field by field.
Differs from upstream: a YAML syntax error reads ``yaml: line N: <PyYAML's problem>``; go-yaml
words its problems differently ("did not find expected node content").
Differs from upstream: PyYAML reads YAML 1.1 as go-yaml v2 does, but for timestamps (kept as
strings here, as a JSON round trip leaves them) and merge keys (``<<``, unsupported here).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml
from kubernetes.client import ApiClient, V1NodeAffinity

from minisched.apimachinery import go_quote

if TYPE_CHECKING:
    from .plugins import noderesources

GROUP = "kubescheduler.config.k8s.io"
V1BETA2 = f"{GROUP}/v1beta2"
V1BETA3 = f"{GROUP}/v1beta3"
V1 = f"{GROUP}/v1"
KIND = "KubeSchedulerConfiguration"
VERSIONS = (V1BETA2, V1BETA3, V1)
# The scheme's name in "no kind is registered" errors: where v1.23 builds it (upstream:
# runtime.NewScheme names a scheme after its caller's file and line).
SCHEME_NAME = "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme/scheme.go:30"
# The scheduler name of a lone profile that has none (upstream: v1.DefaultSchedulerName).
DEFAULT_SCHEDULER_NAME = "default-scheduler"


class ConfigError(ValueError):
    """A configuration file that cannot be decoded; its text is upstream's error."""


# --- internal types (pkg/scheduler/apis/config/types.go) -------------------------------------


@dataclass
class Plugin:
    """A plugin named at an extension point (upstream: Plugin). ``weight`` is None when the
    file does not give one (the versioned type's nil, the internal type's 0); only Score
    reads it."""

    name: str
    weight: int | None = None


@dataclass
class PluginSet:
    """The plugins to enable at an extension point, in order, and the defaults to disable
    there (``*``: all of them) (upstream: PluginSet)."""

    enabled: list[Plugin] = field(default_factory=list)
    disabled: list[Plugin] = field(default_factory=list)


@dataclass
class Plugins:
    """A profile's plugin sets, one per extension point, and multiPoint (upstream: Plugins)."""

    queue_sort: PluginSet = field(default_factory=PluginSet)
    pre_filter: PluginSet = field(default_factory=PluginSet)
    filter: PluginSet = field(default_factory=PluginSet)
    post_filter: PluginSet = field(default_factory=PluginSet)
    pre_score: PluginSet = field(default_factory=PluginSet)
    score: PluginSet = field(default_factory=PluginSet)
    reserve: PluginSet = field(default_factory=PluginSet)
    permit: PluginSet = field(default_factory=PluginSet)
    pre_bind: PluginSet = field(default_factory=PluginSet)
    bind: PluginSet = field(default_factory=PluginSet)
    post_bind: PluginSet = field(default_factory=PluginSet)
    multi_point: PluginSet = field(default_factory=PluginSet)


# The Plugins fields and their names in a file, in the versioned type's order.
EXTENSION_POINTS: tuple[tuple[str, str], ...] = (
    ("queue_sort", "queueSort"),
    ("pre_filter", "preFilter"),
    ("filter", "filter"),
    ("post_filter", "postFilter"),
    ("pre_score", "preScore"),
    ("score", "score"),
    ("reserve", "reserve"),
    ("permit", "permit"),
    ("pre_bind", "preBind"),
    ("bind", "bind"),
    ("post_bind", "postBind"),
    ("multi_point", "multiPoint"),
)


@dataclass
class PluginConfig:
    """A plugin's arguments (upstream: PluginConfig). ``args`` is the plugin's own args type
    (for example ``noderesources.NodeResourcesFitArgs``), decoded and defaulted; a plain dict
    for the args of a plugin step 14 lacks, or of a plugin without an args type (upstream:
    runtime.Unknown), as the file gave it; None for none."""

    name: str
    args: Any = None


@dataclass
class KubeSchedulerProfile:
    """One scheduler name and the framework it runs (upstream: KubeSchedulerProfile)."""

    scheduler_name: str = ""
    plugins: Plugins | None = None
    plugin_config: list[PluginConfig] = field(default_factory=list)


@dataclass
class LeaderElectionConfiguration:
    """Upstream: component-base's LeaderElectionConfiguration, with kube-scheduler's
    defaults. The durations are Go durations as Duration.String writes them ("15s",
    "1m30s"); ``parse_duration`` reads them."""

    leader_elect: bool = True
    lease_duration: str = "15s"
    renew_deadline: str = "10s"
    retry_period: str = "2s"
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass
class ClientConnectionConfiguration:
    """Upstream: component-base's ClientConnectionConfiguration, with kube-scheduler's
    defaults."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


@dataclass
class KubeSchedulerConfiguration:
    """Upstream: KubeSchedulerConfiguration, as its defaults leave it. ``api_version`` is the
    version the file was read in (upstream: TypeMeta.APIVersion, which loadConfig sets), the
    one ``encode_config`` writes. ``healthz_bind_address`` and ``metrics_bind_address`` exist
    in v1beta2 files only (v1.23's v1beta3 dropped them)."""

    api_version: str = V1BETA3
    parallelism: int = 16
    leader_election: LeaderElectionConfiguration = field(
        default_factory=LeaderElectionConfiguration
    )
    client_connection: ClientConnectionConfiguration = field(
        default_factory=ClientConnectionConfiguration
    )
    healthz_bind_address: str = ""
    metrics_bind_address: str = ""
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[KubeSchedulerProfile] = field(default_factory=list)
    extenders: list[Any] = field(default_factory=list)


# --- default plugins (v1beta3/default_plugins.go, v1beta2/default_plugins.go) ---------------

# The in-tree plugins of v1.23's default profiles that step 14 does not have.
NOT_IMPLEMENTED_PLUGINS: frozenset[str] = frozenset(
    {
        "NodeName",
        "NodePorts",
        "VolumeRestrictions",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "ImageLocality",
        "SelectorSpread",
    }
)

# v1beta3's default profile (upstream: getDefaultPlugins): every plugin at multiPoint, each
# plugin's weight the one it scores with. Listed whole, then restricted to step 14's plugins.
_V1BETA3_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("EBSLimits", None),
    ("GCEPDLimits", None),
    ("NodeVolumeLimits", None),
    ("AzureDiskLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

# v1beta2's default profile: a list per extension point, Score's weights all 1 but
# PodTopologySpread's 2.
_V1BETA2_POINTS: dict[str, tuple[tuple[str, int | None], ...]] = {
    "queue_sort": (("PrioritySort", None),),
    "pre_filter": (
        ("NodeResourcesFit", None),
        ("NodePorts", None),
        ("VolumeRestrictions", None),
        ("PodTopologySpread", None),
        ("InterPodAffinity", None),
        ("VolumeBinding", None),
        ("NodeAffinity", None),
    ),
    "filter": (
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", None),
        ("NodeAffinity", None),
        ("NodePorts", None),
        ("NodeResourcesFit", None),
        ("VolumeRestrictions", None),
        ("EBSLimits", None),
        ("GCEPDLimits", None),
        ("NodeVolumeLimits", None),
        ("AzureDiskLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", None),
        ("InterPodAffinity", None),
    ),
    "post_filter": (("DefaultPreemption", None),),
    "pre_score": (
        ("InterPodAffinity", None),
        ("PodTopologySpread", None),
        ("TaintToleration", None),
        ("NodeAffinity", None),
    ),
    "score": (
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("InterPodAffinity", 1),
        ("NodeResourcesFit", 1),
        ("NodeAffinity", 1),
        ("PodTopologySpread", 2),
        ("TaintToleration", 1),
    ),
    "reserve": (("VolumeBinding", None),),
    "pre_bind": (("VolumeBinding", None),),
    "bind": (("DefaultBinder", None),),
}


def _step_plugins(upstream: tuple[tuple[str, int | None], ...]) -> list[Plugin]:
    return [Plugin(n, w) for n, w in upstream if n not in NOT_IMPLEMENTED_PLUGINS]


def get_default_plugins(api_version: str) -> Plugins:
    """The plugins a profile of that version enables by default, restricted to step 14's
    (upstream: getDefaultPlugins; v1 as v1beta3)."""
    if api_version == V1BETA2:
        return Plugins(
            **{point: PluginSet(enabled=_step_plugins(p)) for point, p in _V1BETA2_POINTS.items()}
        )
    return Plugins(multi_point=PluginSet(enabled=_step_plugins(_V1BETA3_MULTI_POINT)))


def merge_plugin_set(
    default_set: PluginSet, custom_set: PluginSet, api_version: str = V1BETA3
) -> PluginSet:
    """The defaults with the file's changes (upstream: mergePluginSet).

    A default plugin the file disables (or all, with ``*``) is dropped; one the file enables
    again is replaced in place (keeping the default's position, taking the file's weight);
    the file's other plugins follow, in the file's order, duplicates included (the framework
    rejects them). v1beta3 keeps the disabled plugins, the file's then the defaults', so the
    framework's multiPoint expansion can see them; v1beta2 forgets them.
    """
    disabled_names = {p.name for p in custom_set.disabled}
    disabled: list[Plugin] = []
    if api_version != V1BETA2:
        disabled = [Plugin(p.name) for p in custom_set.disabled]
        disabled += [Plugin(p.name) for p in default_set.disabled]
        disabled_names |= {p.name for p in default_set.disabled}
    # The index of the file's (last) entry for each name: the one that replaces a default.
    custom_index = {p.name: i for i, p in enumerate(custom_set.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    if "*" not in disabled_names:
        for plugin in default_set.enabled:
            if plugin.name in disabled_names:
                continue
            if plugin.name in custom_index:
                i = custom_index[plugin.name]
                plugin = custom_set.enabled[i]
                replaced.add(i)
            enabled.append(copy.copy(plugin))
    enabled += [copy.copy(p) for i, p in enumerate(custom_set.enabled) if i not in replaced]
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(defaults: Plugins, custom: Plugins | None, api_version: str = V1BETA3) -> Plugins:
    """Each extension point's defaults merged with the file's (upstream: mergePlugins).

    Differs from upstream: a copy; upstream updates the defaults in place. In v1beta2 the
    file's multiPoint is dropped without a word (v1.23's v1beta2 type has the field, but
    v1beta2's mergePlugins does not merge it), as v1.23 does.
    """
    if custom is None:
        return copy.deepcopy(defaults)
    merged = copy.deepcopy(defaults)
    for point, _ in EXTENSION_POINTS:
        if point == "multi_point" and api_version == V1BETA2:
            continue
        setattr(
            merged,
            point,
            merge_plugin_set(getattr(defaults, point), getattr(custom, point), api_version),
        )
    return merged


def plugins_needed(plugins: Plugins | None) -> set[str]:
    """The names enabled at any extension point, multiPoint included (upstream:
    frameworkImpl.pluginsNeeded, and defaults.go's pluginsNames)."""
    if plugins is None:
        return set()
    return {p.name for point, _ in EXTENSION_POINTS for p in getattr(plugins, point).enabled}


# --- Go durations (time.ParseDuration, Duration.String) --------------------------------------

_DURATION_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # µ, the micro sign
    "\u03bcs": 1_000,  # μ, the Greek letter
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_INT64 = 2**63 - 1


def parse_duration(s: str) -> int:
    """Nanoseconds, as Go's time.ParseDuration reads ``s`` ("1h2m0.5s", "-3ms"); raises
    ConfigError with Go's text."""
    orig = s
    invalid = ConfigError(f"time: invalid duration {go_quote(orig)}")
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    total = 0
    while s:
        if not (s[0] == "." or s[0].isascii() and s[0].isdigit()):
            raise invalid
        i = 0
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        pre = i > 0
        whole = int(s[:i]) if pre else 0
        s = s[i:]
        frac, scale, post = 0, 1, False
        if s.startswith("."):
            s = s[1:]
            i = 0
            while i < len(s) and "0" <= s[i] <= "9":
                i += 1
            post = i > 0
            # Go keeps the digits that fit, as Python's ints need not.
            digits = s[:i]
            frac, scale = (int(digits), 10 ** len(digits)) if digits else (0, 1)
            s = s[i:]
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise ConfigError(f"time: missing unit in duration {go_quote(orig)}")
        unit_name, s = s[:i], s[i:]
        if unit_name not in _DURATION_UNITS:
            raise ConfigError(
                f"time: unknown unit {go_quote(unit_name)} in duration {go_quote(orig)}"
            )
        unit = _DURATION_UNITS[unit_name]
        value = whole * unit + int(frac * (unit / scale))
        total += value
        if total > 2**63:
            raise invalid
    if neg:
        return -total
    if total > _MAX_INT64:
        raise invalid
    return total


def _fmt_frac(v: int, prec: int) -> tuple[str, int]:
    """The fraction of ``v`` below 10**prec, as ".5" (no trailing zeros; "" when zero), and
    the rest (upstream: fmtFrac)."""
    frac = v % 10**prec
    digits = f"{frac:0{prec}d}".rstrip("0") if prec else ""
    return ("." + digits if digits else ""), v // 10**prec


def format_duration(ns: int) -> str:
    """``ns`` nanoseconds as Go's Duration.String writes them: "15s", "1m30s", "1.5ms"."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        unit, prec = ("ns", 0) if u < 1_000 else ("\u00b5s", 3) if u < 1_000_000 else ("ms", 6)
        frac, whole = _fmt_frac(u, prec)
        return f"{sign}{whole}{frac}{unit}"
    frac, secs = _fmt_frac(u, 9)
    text = f"{secs % 60}{frac}s"
    minutes = secs // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


# --- YAML to JSON-like values (sigs.k8s.io/yaml) ----------------------------------------------


class _Loader(yaml.SafeLoader):
    """A SafeLoader that leaves timestamps as strings (what a JSON round trip makes of
    them)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _json_key(value: Any) -> str:
    """A mapping key as YAMLToJSON writes it: a string (true, 1, 1.5 as text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _node_to_json(node: yaml.Node, loader: _Loader, duplicates: list[str]) -> Any:
    """A YAML node as JSON-like Python values; each key set twice in a mapping is added to
    ``duplicates`` as go-yaml's strict mode words it, and the last value wins."""
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _json_key(loader.construct_object(key_node, deep=True))
            if key in out:
                duplicates.append(
                    f"line {key_node.start_mark.line + 1}: key {go_quote(key)} already set in map"
                )
                del out[key]  # the last one wins, and takes the last place
            out[key] = _node_to_json(value_node, loader, duplicates)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_node_to_json(n, loader, duplicates) for n in node.value]
    value = loader.construct_object(node, deep=True)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        # YAMLToJSON writes 10.0 as 10: an int field takes it.
        return int(value)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def _yaml_to_json(text: str) -> tuple[Any, list[str]]:
    """The first YAML document of ``text`` as JSON-like values, and its duplicate keys."""
    loader = _Loader(text)
    try:
        node = loader.get_node() if loader.check_node() else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise ConfigError(f"yaml: line {line}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"yaml: {e}") from None
    finally:
        loader.dispose()
    if node is None:
        return None, []
    duplicates: list[str] = []
    return _node_to_json(node, _Loader(""), duplicates), duplicates


# --- the versioned schemas (k8s.io/kube-scheduler/config/<version>, k8s.io/api/core/v1) ---------


@dataclass(frozen=True)
class _Scalar:
    """A scalar field; ``go_type`` is how Go's json errors name its type."""

    kind: str  # "string", "bool", "int32", "int64", "float32", "duration"
    go_type: str


@dataclass(frozen=True)
class _List:
    elem: _Type

    @property
    def go_type(self) -> str:
        return "[]" + self.elem.go_type


@dataclass(frozen=True)
class _Struct:
    """A Go struct: its name, its package (for the type's name in errors) and its fields by
    JSON name."""

    name: str
    package: str
    fields: Mapping[str, _Type]

    @property
    def go_type(self) -> str:
        return f"{self.package}.{self.name}"


@dataclass(frozen=True)
class _Raw:
    """Any JSON value, kept as it is (upstream: runtime.RawExtension)."""

    go_type: str = "runtime.RawExtension"


_Type = _Scalar | _List | _Struct | _Raw

_STRING = _Scalar("string", "string")
_BOOL = _Scalar("bool", "bool")
_INT32 = _Scalar("int32", "int32")
_INT64 = _Scalar("int64", "int64")
_FLOAT32 = _Scalar("float32", "float32")
# metav1.Duration: a string Go's time.ParseDuration reads.
_DURATION = _Scalar("duration", "string")
_TYPE_META: dict[str, _Type] = {"apiVersion": _STRING, "kind": _STRING}

_node_selector_requirement = _Struct(
    "NodeSelectorRequirement",
    "v1",
    {
        "key": _STRING,
        "operator": _Scalar("string", "v1.NodeSelectorOperator"),
        "values": _List(_STRING),
    },
)
_node_selector_term = _Struct(
    "NodeSelectorTerm",
    "v1",
    {
        "matchExpressions": _List(_node_selector_requirement),
        "matchFields": _List(_node_selector_requirement),
    },
)
_NODE_AFFINITY = _Struct(
    "NodeAffinity",
    "v1",
    {
        "requiredDuringSchedulingIgnoredDuringExecution": _Struct(
            "NodeSelector", "v1", {"nodeSelectorTerms": _List(_node_selector_term)}
        ),
        "preferredDuringSchedulingIgnoredDuringExecution": _List(
            _Struct(
                "PreferredSchedulingTerm",
                "v1",
                {"weight": _INT32, "preference": _node_selector_term},
            )
        ),
    },
)


def _package(api_version: str) -> str:
    return api_version.rsplit("/", 1)[1]


def _args_schemas(api_version: str) -> dict[str, _Struct]:
    """The plugin args kinds the version registers, and their schemas
    (types_pluginargs.go)."""
    pkg = _package(api_version)
    resource_spec = _Struct("ResourceSpec", pkg, {"name": _STRING, "weight": _INT64})
    shape_point = _Struct("UtilizationShapePoint", pkg, {"utilization": _INT32, "score": _INT32})
    kinds: dict[str, dict[str, _Type]] = {
        "DefaultPreemptionArgs": {
            "minCandidateNodesPercentage": _INT32,
            "minCandidateNodesAbsolute": _INT32,
        },
        "InterPodAffinityArgs": {"hardPodAffinityWeight": _INT32},
        "NodeAffinityArgs": {"addedAffinity": _NODE_AFFINITY},
        "NodeResourcesBalancedAllocationArgs": {"resources": _List(resource_spec)},
        "NodeResourcesFitArgs": {
            "ignoredResources": _List(_STRING),
            "ignoredResourceGroups": _List(_STRING),
            "scoringStrategy": _Struct(
                "ScoringStrategy",
                pkg,
                {
                    "type": _Scalar("string", f"{pkg}.ScoringStrategyType"),
                    "resources": _List(resource_spec),
                    "requestedToCapacityRatio": _Struct(
                        "RequestedToCapacityRatioParam", pkg, {"shape": _List(shape_point)}
                    ),
                },
            ),
        },
        "PodTopologySpreadArgs": {
            "defaultConstraints": _List(_Raw("v1.TopologySpreadConstraint")),
            "defaultingType": _Scalar("string", f"{pkg}.PodTopologySpreadConstraintsDefaulting"),
        },
        "VolumeBindingArgs": {"bindTimeoutSeconds": _INT64, "shape": _List(shape_point)},
    }
    return {kind: _Struct(kind, pkg, {**_TYPE_META, **fields}) for kind, fields in kinds.items()}


def _schema(api_version: str) -> _Struct:
    """KubeSchedulerConfiguration's schema in that version (types.go)."""
    pkg = _package(api_version)
    plugin_set = _Struct(
        "PluginSet",
        pkg,
        {
            "enabled": _List(_Struct("Plugin", pkg, {"name": _STRING, "weight": _INT32})),
            "disabled": _List(_Struct("Plugin", pkg, {"name": _STRING, "weight": _INT32})),
        },
    )
    plugins = _Struct("Plugins", pkg, {json: plugin_set for _, json in EXTENSION_POINTS})
    profile = _Struct(
        "KubeSchedulerProfile",
        pkg,
        {
            "schedulerName": _STRING,
            "plugins": plugins,
            "pluginConfig": _List(_Struct("PluginConfig", pkg, {"name": _STRING, "args": _Raw()})),
        },
    )
    fields: dict[str, _Type] = {
        **_TYPE_META,
        "parallelism": _INT32,
        "leaderElection": _Struct(
            "LeaderElectionConfiguration",
            "v1alpha1",
            {
                "leaderElect": _BOOL,
                "leaseDuration": _DURATION,
                "renewDeadline": _DURATION,
                "retryPeriod": _DURATION,
                "resourceLock": _STRING,
                "resourceName": _STRING,
                "resourceNamespace": _STRING,
            },
        ),
        "clientConnection": _Struct(
            "ClientConnectionConfiguration",
            "v1alpha1",
            {
                "kubeconfig": _STRING,
                "acceptContentTypes": _STRING,
                "contentType": _STRING,
                "qps": _FLOAT32,
                "burst": _INT32,
            },
        ),
        "enableProfiling": _BOOL,
        "enableContentionProfiling": _BOOL,
        "percentageOfNodesToScore": _INT32,
        "podInitialBackoffSeconds": _INT64,
        "podMaxBackoffSeconds": _INT64,
        "profiles": _List(profile),
        # Not implemented: extenders (step 15); kept as given.
        "extenders": _List(_Raw("v1beta3.Extender")),
    }
    if api_version == V1BETA2:
        fields["healthzBindAddress"] = _STRING
        fields["metricsBindAddress"] = _STRING
    return _Struct(KIND, pkg, fields)


# --- strict decoding (sigs.k8s.io/json, as the json serializer runs it) ---------------------


def _json_kind(value: Any) -> str:
    """How Go's json errors name a JSON value's kind."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_number(value: int | float) -> str:
    """A JSON number as YAMLToJSON writes it (and Go's json errors quote it): Python's repr
    and Go's shortest 'g' format agree for the finite floats YAML gives."""
    return repr(value) if isinstance(value, float) else str(value)


_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@dataclass
class _Decoder:
    """One strict decode: the unknown fields it met (upstream: saveStrictError, each text
    once) and the first value of the wrong type (upstream: saveError, fatal at the end)."""

    strict: list[str] = field(default_factory=list)
    type_error: str | None = None

    def _wrong_type(self, what: str, typ: _Type, struct: str, path: list[str]) -> None:
        if self.type_error is None:
            where = f"Go struct field {struct}.{'.'.join(path)}" if path else "Go value"
            self.type_error = f"json: cannot unmarshal {what} into {where} of type {typ.go_type}"

    def decode(self, value: Any, typ: _Type, struct: str, path: list[str]) -> Any:
        """``value`` as ``typ`` (fields checked, ints as ints); None for JSON's null, which
        leaves the Go field unset."""
        if isinstance(typ, _Raw):
            return value
        if isinstance(typ, _Scalar) and typ.kind == "duration":
            return self._duration(value, struct, path)
        if value is None:
            return None
        if isinstance(typ, _Struct):
            if not isinstance(value, dict):
                self._wrong_type(_json_kind(value), typ, struct, path)
                return None
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key not in typ.fields:
                    text = f"unknown field {go_quote(key)}"
                    if text not in self.strict:
                        self.strict.append(text)
                    continue
                decoded = self.decode(item, typ.fields[key], typ.name, [*path, key])
                if decoded is not None:
                    out[key] = decoded
            return out
        if isinstance(typ, _List):
            if not isinstance(value, list):
                self._wrong_type(_json_kind(value), typ, struct, path)
                return None
            items = [self.decode(item, typ.elem, struct, path) for item in value]
            # A null item is the element type's zero value.
            return [_zero(typ.elem) if item is None else item for item in items]
        return self._scalar(value, typ, struct, path)

    def _scalar(self, value: Any, typ: _Scalar, struct: str, path: list[str]) -> Any:
        if typ.kind == "string":
            if isinstance(value, str):
                return value
        elif typ.kind == "bool":
            if isinstance(value, bool):
                return value
        elif typ.kind == "float32":
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = _INT_RANGES[typ.kind]
            if isinstance(value, int) and low <= value <= high:
                return value
            self._wrong_type(f"number {_go_number(value)}", typ, struct, path)
            return None
        self._wrong_type(_json_kind(value), typ, struct, path)
        return None

    def _duration(self, value: Any, struct: str, path: list[str]) -> int:
        """metav1.Duration.UnmarshalJSON: a string, parsed; its errors stop the decode (a
        JSON null reads as "", which does not parse)."""
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ConfigError(
                f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                f"{struct}.{'.'.join(path)} of type string"
            )
        return parse_duration(value)


def _zero(typ: _Type) -> Any:
    if isinstance(typ, _Struct):
        return {}
    if isinstance(typ, _Scalar):
        return {"string": "", "bool": False, "float32": 0.0, "duration": 0}.get(typ.kind, 0)
    return None


# --- apiVersion and kind (runtime/serializer/json: Interpret; schema.ParseGroupVersion) -------

_FIND_KIND_TYPE = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


def _interpret(value: Any) -> tuple[str, str, str]:
    """The (group, version, kind) a JSON-like document names (upstream: SimpleMetaFactory's
    Interpret)."""
    if value is None:
        return "", "", ""
    if not isinstance(value, dict):
        raise ConfigError(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{_json_kind(value)} into Go value of type {_FIND_KIND_TYPE}"
        )
    found: dict[str, str] = {}
    for key in ("apiVersion", "kind"):
        item = value.get(key)
        if item is not None and not isinstance(item, str):
            raise ConfigError(
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{_json_kind(item)} into Go struct field .{key} of type string"
            )
        found[key] = item or ""
    api_version = found["apiVersion"]
    parts = api_version.split("/")
    if api_version == "":
        group, version = "", ""
    elif len(parts) == 1:
        group, version = "", parts[0]
    elif len(parts) == 2:
        group, version = parts
    else:
        raise ConfigError(f"unexpected GroupVersion string: {api_version}")
    return group, version, found["kind"]


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _not_registered(group: str, version: str, kind: str) -> ConfigError:
    return ConfigError(
        f"no kind {go_quote(kind)} is registered for version "
        f"{go_quote(_group_version(group, version))} in scheme {go_quote(SCHEME_NAME)}"
    )


# --- plugin args: decoded (versioned), defaulted, converted ---------------------------------


@dataclass
class VersionedArgs:
    """Plugin args of a kind the scheme knows, as the file's version has them (upstream: the
    typed object in a PluginConfig's RawExtension): the fields given or defaulted, by JSON
    name."""

    kind: str
    api_version: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class UnknownArgs:
    """The args of a plugin without an args kind, as the file gave them (upstream:
    runtime.Unknown)."""

    raw: Any


def _decode_plugin_args(
    name: str, raw: Any, api_version: str, i: int, j: int
) -> VersionedArgs | UnknownArgs | None:
    """One pluginConfig's args, decoded as ``<name>Args`` of the file's version (upstream:
    PluginConfig.decodeNestedObjects)."""
    expected = name + "Args"
    schemas = _args_schemas(api_version)
    if expected not in schemas:
        # "This plugin is out-of-tree or doesn't require configuration."
        return None if raw is None else UnknownArgs(raw)
    where = f"decoding .profiles[{i}].pluginConfig[{j}]"
    try:
        group, version, kind = _interpret(raw)
        default_group, default_version = api_version.split("/")
        # The kind and version the args leave out are the expected ones (upstream:
        # gvkWithDefaults).
        kind = kind or expected
        if not version and group in ("", default_group):
            group, version = default_group, default_version
        gv = _group_version(group, version)
        if gv not in VERSIONS or kind not in _args_schemas(gv):
            raise _not_registered(group, version, kind)
        decoder = _Decoder()
        fields = decoder.decode(raw or {}, _args_schemas(gv)[kind], kind, [])
        if decoder.type_error is not None:
            raise ConfigError(decoder.type_error)
        if decoder.strict:
            raise ConfigError("strict decoding error: " + ", ".join(decoder.strict))
    except ConfigError as e:
        raise ConfigError(f"{where}: decoding args for plugin {name}: {e}") from None
    if kind != expected:
        raise ConfigError(
            f"{where}: args for plugin {name} were not of type {expected}.{GROUP}, "
            f"got {kind}.{group}"
        )
    fields.pop("apiVersion", None)
    fields.pop("kind", None)
    return VersionedArgs(kind, gv, fields)


def set_defaults_default_preemption_args(obj: dict[str, Any]) -> None:
    """Upstream: SetDefaults_DefaultPreemptionArgs."""
    obj.setdefault("minCandidateNodesPercentage", 10)
    obj.setdefault("minCandidateNodesAbsolute", 100)


def set_defaults_inter_pod_affinity_args(obj: dict[str, Any]) -> None:
    """Upstream: SetDefaults_InterPodAffinityArgs."""
    obj.setdefault("hardPodAffinityWeight", 1)


def set_defaults_volume_binding_args(obj: dict[str, Any]) -> None:
    """Upstream: SetDefaults_VolumeBindingArgs, with the VolumeCapacityPriority feature gate
    off (its v1.23 default): no default shape."""
    obj.setdefault("bindTimeoutSeconds", 600)


def set_defaults_node_resources_balanced_allocation_args(obj: dict[str, Any]) -> None:
    """Upstream: SetDefaults_NodeResourcesBalancedAllocationArgs: cpu and memory when no
    resource is given; a weight left out (or 0) is 1."""
    if not obj.get("resources"):
        obj["resources"] = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    for resource in obj["resources"]:
        if not resource.get("weight"):
            resource["weight"] = 1


def set_defaults_pod_topology_spread_args(obj: dict[str, Any]) -> None:
    """Upstream: SetDefaults_PodTopologySpreadArgs, with the DefaultPodTopologySpread feature
    gate on (its v1.23 default): System defaulting."""
    if not obj.get("defaultingType"):
        obj["defaultingType"] = "System"


def set_defaults_node_resources_fit_args(obj: dict[str, Any]) -> None:
    """Upstream: SetDefaults_NodeResourcesFitArgs: LeastAllocated over cpu and memory when no
    strategy is given; cpu and memory when the strategy names no resource; a weight left out
    (or 0) is 1."""
    if obj.get("scoringStrategy") is None:
        obj["scoringStrategy"] = {"type": "LeastAllocated"}
    strategy = obj["scoringStrategy"]
    if not strategy.get("resources"):
        strategy["resources"] = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    for resource in strategy["resources"]:
        if not resource.get("weight"):
            resource["weight"] = 1


# The args defaulting functions by kind (upstream: the scheme's registered defaulters;
# NodeAffinityArgs has none).
ARGS_DEFAULTERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "DefaultPreemptionArgs": set_defaults_default_preemption_args,
    "InterPodAffinityArgs": set_defaults_inter_pod_affinity_args,
    "NodeResourcesBalancedAllocationArgs": set_defaults_node_resources_balanced_allocation_args,
    "NodeResourcesFitArgs": set_defaults_node_resources_fit_args,
    "PodTopologySpreadArgs": set_defaults_pod_topology_spread_args,
    "VolumeBindingArgs": set_defaults_volume_binding_args,
}


def default_args(args: VersionedArgs) -> None:
    """The scheme's defaults for the args' kind, in place (upstream: scheme.Default)."""
    defaulter = ARGS_DEFAULTERS.get(args.kind)
    if defaulter is not None:
        defaulter(args.fields)


def _resources(items: list[dict[str, Any]]) -> tuple[noderesources.ResourceSpec, ...]:
    from .plugins import noderesources

    return tuple(noderesources.ResourceSpec(r.get("name", ""), r.get("weight", 0)) for r in items)


def _shape(items: list[dict[str, Any]]) -> tuple[noderesources.UtilizationShapePoint, ...]:
    from .plugins import noderesources

    return tuple(
        noderesources.UtilizationShapePoint(p.get("utilization", 0), p.get("score", 0))
        for p in items
    )


# The core/v1 fields the client's models require, and the zero value Go leaves in them when a
# file leaves them out (validation then reports them, as upstream's does).
_REQUIRED_ZERO_VALUES: dict[str, dict[str, Any]] = {
    "NodeSelector": {"nodeSelectorTerms": []},
    "NodeSelectorRequirement": {"key": "", "operator": ""},
    "PreferredSchedulingTerm": {"weight": 0, "preference": {}},
}


def _with_zero_values(value: Any, typ: _Type) -> Any:
    """A decoded core/v1 value with Go's zero values in its required fields left out."""
    if isinstance(typ, _List) and isinstance(value, list):
        return [_with_zero_values(item, typ.elem) for item in value]
    if isinstance(typ, _Struct) and isinstance(value, dict):
        out = {**_REQUIRED_ZERO_VALUES.get(typ.name, {}), **value}
        return {k: _with_zero_values(v, typ.fields[k]) for k, v in out.items()}
    return value


def _deserialize_node_affinity(data: dict[str, Any]) -> V1NodeAffinity:
    # The kubernetes client's own model deserialization (private, as the client exposes no
    # public one for plain dicts).
    return ApiClient()._ApiClient__deserialize(
        _with_zero_values(data, _NODE_AFFINITY), "V1NodeAffinity"
    )


def _internal_args(args: VersionedArgs | UnknownArgs | None) -> Any:
    """The internal args the plugins take (upstream: the args' conversion to the internal
    types)."""
    # The plugin packages import the runtime, which imports this module: imported here.
    from .plugins import defaultpreemption, nodeaffinity, noderesources

    if args is None:
        return None
    if isinstance(args, UnknownArgs):
        return args.raw
    f = args.fields
    if args.kind == "DefaultPreemptionArgs":
        return defaultpreemption.DefaultPreemptionArgs(
            min_candidate_nodes_percentage=f.get("minCandidateNodesPercentage", 0),
            min_candidate_nodes_absolute=f.get("minCandidateNodesAbsolute", 0),
        )
    if args.kind == "NodeAffinityArgs":
        added = f.get("addedAffinity")
        return nodeaffinity.NodeAffinityArgs(
            added_affinity=None if added is None else _deserialize_node_affinity(added)
        )
    if args.kind == "NodeResourcesBalancedAllocationArgs":
        return noderesources.NodeResourcesBalancedAllocationArgs(
            resources=_resources(f.get("resources", []))
        )
    if args.kind == "NodeResourcesFitArgs":
        strategy = f.get("scoringStrategy")
        scoring = None
        if strategy is not None:
            ratio = strategy.get("requestedToCapacityRatio")
            scoring = noderesources.ScoringStrategy(
                type=strategy.get("type", ""),
                resources=_resources(strategy.get("resources", [])),
                requested_to_capacity_ratio=None
                if ratio is None
                else noderesources.RequestedToCapacityRatioParam(
                    shape=_shape(ratio.get("shape", []))
                ),
            )
        return noderesources.NodeResourcesFitArgs(
            ignored_resources=tuple(f.get("ignoredResources", [])),
            ignored_resource_groups=tuple(f.get("ignoredResourceGroups", [])),
            scoring_strategy=scoring,
        )
    # Not implemented: the args of a plugin step 14 lacks: its fields, as a plain dict.
    return copy.deepcopy(f)


def _resources_out(items: tuple[noderesources.ResourceSpec, ...]) -> list[dict[str, Any]]:
    # ResourceSpec.weight is omitempty.
    return [{"name": r.name, **({"weight": r.weight} if r.weight else {})} for r in items]


def versioned_args_fields(args: Any) -> dict[str, Any]:
    """The fields of internal args as the versioned type writes them, omitempty applied
    (upstream: the conversion to the versioned args, then JSON)."""
    from .plugins import defaultpreemption, nodeaffinity, noderesources

    out: dict[str, Any] = {}
    if isinstance(args, defaultpreemption.DefaultPreemptionArgs):
        out["minCandidateNodesPercentage"] = args.min_candidate_nodes_percentage
        out["minCandidateNodesAbsolute"] = args.min_candidate_nodes_absolute
    elif isinstance(args, nodeaffinity.NodeAffinityArgs):
        if args.added_affinity is not None:
            out["addedAffinity"] = ApiClient().sanitize_for_serialization(args.added_affinity)
    elif isinstance(args, noderesources.NodeResourcesBalancedAllocationArgs):
        if args.resources:
            out["resources"] = _resources_out(args.resources)
    elif isinstance(args, noderesources.NodeResourcesFitArgs):
        if args.ignored_resources:
            out["ignoredResources"] = list(args.ignored_resources)
        if args.ignored_resource_groups:
            out["ignoredResourceGroups"] = list(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        if strategy is not None:
            s: dict[str, Any] = {}
            if strategy.type:
                s["type"] = strategy.type
            if strategy.resources:
                s["resources"] = _resources_out(strategy.resources)
            ratio = strategy.requested_to_capacity_ratio
            if ratio is not None:
                s["requestedToCapacityRatio"] = (
                    {
                        "shape": [
                            {"utilization": p.utilization, "score": p.score} for p in ratio.shape
                        ]
                    }
                    if ratio.shape
                    else {}
                )
            out["scoringStrategy"] = s
    elif isinstance(args, dict):
        out = copy.deepcopy(args)
    return out


# --- defaults (v1beta3/defaults.go, v1beta2/defaults.go) --------------------------------------


def _plugins_from_versioned(obj: dict[str, Any] | None) -> Plugins | None:
    if obj is None:
        return None

    def plugin_set(s: dict[str, Any] | None) -> PluginSet:
        s = s or {}
        return PluginSet(
            enabled=[Plugin(p.get("name", ""), p.get("weight")) for p in s.get("enabled", [])],
            disabled=[Plugin(p.get("name", ""), p.get("weight")) for p in s.get("disabled", [])],
        )

    return Plugins(**{point: plugin_set(obj.get(json)) for point, json in EXTENSION_POINTS})


def _plugins_to_versioned(plugins: Plugins) -> dict[str, Any]:
    """Plugins as the versioned type writes them: every extension point (a struct, so never
    omitted), each plugin with its weight (the internal type's int32: 0 when unset)."""
    out: dict[str, Any] = {}
    for point, json in EXTENSION_POINTS:
        s: PluginSet = getattr(plugins, point)
        entry: dict[str, Any] = {}
        for key, items in (("enabled", s.enabled), ("disabled", s.disabled)):
            if items:
                entry[key] = [{"name": p.name, "weight": p.weight or 0} for p in items]
        out[json] = entry
    return out


def set_defaults_kube_scheduler_profile(prof: dict[str, Any], api_version: str) -> None:
    """A profile's default plugins merged in, and default args for each enabled plugin
    without any (upstream: setDefaults_KubeSchedulerProfile)."""
    merged = merge_plugins(
        get_default_plugins(api_version), _plugins_from_versioned(prof.get("plugins")), api_version
    )
    prof["plugins"] = merged
    configs = prof.setdefault("pluginConfig", [])
    existing = set()
    for pc in configs:
        existing.add(pc.get("name", ""))
        if isinstance(pc.get("args"), VersionedArgs):
            default_args(pc["args"])
    # v1beta2's pluginsNames leaves out multiPoint (its merge dropped the file's anyway).
    for name in sorted(plugins_needed(merged)):
        if name in existing or name + "Args" not in _args_schemas(api_version):
            continue
        args = VersionedArgs(name + "Args", api_version)
        default_args(args)
        configs.append({"name": name, "args": args})


def set_defaults_kube_scheduler_configuration(obj: dict[str, Any], api_version: str) -> None:
    """The version's defaults, in place, on a decoded file (upstream:
    SetDefaults_KubeSchedulerConfiguration). ``obj`` holds the fields by JSON name, a field
    left out being Go's nil; durations in nanoseconds; each profile's plugins become a
    ``Plugins``."""
    obj.setdefault("parallelism", 16)
    profiles = obj.get("profiles") or [{}]
    obj["profiles"] = profiles
    # Only a lone profile gets a default name; validation wants every profile named.
    if len(profiles) == 1 and profiles[0].get("schedulerName") is None:
        profiles[0]["schedulerName"] = DEFAULT_SCHEDULER_NAME
    for prof in profiles:
        set_defaults_kube_scheduler_profile(prof, api_version)
    obj.setdefault("percentageOfNodesToScore", 0)
    le = obj.setdefault("leaderElection", {})
    if not le.get("resourceLock"):
        le["resourceLock"] = "leases"
    if not le.get("resourceNamespace"):
        le["resourceNamespace"] = "kube-system"
    if not le.get("resourceName"):
        le["resourceName"] = "kube-scheduler"
    cc = obj.setdefault("clientConnection", {})
    if not cc.get("contentType"):
        cc["contentType"] = "application/vnd.kubernetes.protobuf"
    if not cc.get("qps"):
        cc["qps"] = 50.0
    if not cc.get("burst"):
        cc["burst"] = 100
    # Upstream: component-base's RecommendedDefaultLeaderElectionConfiguration; a zero
    # duration is unset.
    for key, ns in (
        ("leaseDuration", 15_000_000_000),
        ("renewDeadline", 10_000_000_000),
        ("retryPeriod", 2_000_000_000),
    ):
        if not le.get(key):
            le[key] = ns
    le.setdefault("leaderElect", True)
    obj.setdefault("podInitialBackoffSeconds", 1)
    obj.setdefault("podMaxBackoffSeconds", 10)
    obj.setdefault("enableProfiling", True)
    # Contention profiling defaults on only with profiling on.
    if obj["enableProfiling"]:
        obj.setdefault("enableContentionProfiling", True)


# --- decoding a file (options/configfile.go: loadConfig) -----------------------------------


def decode_versioned(data: str | bytes) -> tuple[str, dict[str, Any]]:
    """The file's version and its fields, strictly decoded, args included, not defaulted
    (upstream: the codec's Decode up to DecodeNestedObjects)."""
    text = data.decode() if isinstance(data, bytes) else data
    value, duplicates = _yaml_to_json(text)
    group, version, kind = _interpret(value)
    if not kind:
        raise ConfigError(f"Object 'Kind' is missing in '{text}'")
    if not version:
        raise ConfigError(f"Object 'apiVersion' is missing in '{text}'")
    gv = _group_version(group, version)
    if gv not in VERSIONS:
        raise _not_registered(group, version, kind)
    if kind != KIND:
        if kind not in _args_schemas(gv):
            raise _not_registered(group, version, kind)
        # A registered args kind decodes, and loadConfig refuses what it is.
        raise ConfigError(f"couldn't decode as KubeSchedulerConfiguration, got {gv}, Kind={kind}: ")
    decoder = _Decoder()
    obj = decoder.decode(value, _schema(gv), KIND, [])
    if decoder.type_error is not None:
        raise ConfigError(decoder.type_error)
    strict: list[str] = []
    if duplicates:
        strict.append("yaml: unmarshal errors:\n  " + "\n  ".join(duplicates))
    strict += decoder.strict
    # The args are decoded before the strict errors are reported: theirs come first.
    for i, prof in enumerate(obj.get("profiles", [])):
        for j, pc in enumerate(prof.get("pluginConfig", [])):
            pc["args"] = _decode_plugin_args(pc.get("name", ""), pc.get("args"), gv, i, j)
    if strict:
        raise ConfigError("strict decoding error: " + ", ".join(strict))
    obj.pop("apiVersion", None)
    obj.pop("kind", None)
    return gv, obj


def _to_internal(api_version: str, obj: dict[str, Any]) -> KubeSchedulerConfiguration:
    """The defaulted versioned fields as the internal types (upstream: the generated
    conversions)."""
    le = obj["leaderElection"]
    cc = obj["clientConnection"]
    return KubeSchedulerConfiguration(
        api_version=api_version,
        parallelism=obj["parallelism"],
        leader_election=LeaderElectionConfiguration(
            leader_elect=le["leaderElect"],
            lease_duration=format_duration(le["leaseDuration"]),
            renew_deadline=format_duration(le["renewDeadline"]),
            retry_period=format_duration(le["retryPeriod"]),
            resource_lock=le["resourceLock"],
            resource_name=le["resourceName"],
            resource_namespace=le["resourceNamespace"],
        ),
        client_connection=ClientConnectionConfiguration(
            kubeconfig=cc.get("kubeconfig", ""),
            accept_content_types=cc.get("acceptContentTypes", ""),
            content_type=cc["contentType"],
            qps=cc["qps"],
            burst=cc["burst"],
        ),
        healthz_bind_address=obj.get("healthzBindAddress", ""),
        metrics_bind_address=obj.get("metricsBindAddress", ""),
        enable_profiling=obj["enableProfiling"],
        enable_contention_profiling=obj.get("enableContentionProfiling", False),
        percentage_of_nodes_to_score=obj["percentageOfNodesToScore"],
        pod_initial_backoff_seconds=obj["podInitialBackoffSeconds"],
        pod_max_backoff_seconds=obj["podMaxBackoffSeconds"],
        profiles=[
            KubeSchedulerProfile(
                scheduler_name=prof.get("schedulerName", ""),
                plugins=prof["plugins"],
                plugin_config=[
                    PluginConfig(pc.get("name", ""), _internal_args(pc.get("args")))
                    for pc in prof["pluginConfig"]
                ],
            )
            for prof in obj["profiles"]
        ],
        extenders=list(obj.get("extenders", [])),
    )


def load_config(data: str | bytes) -> KubeSchedulerConfiguration:
    """A configuration file's text, decoded strictly and defaulted as its version does
    (upstream: loadConfig); raises ConfigError with upstream's text. Not validated: see
    ``validation.validate_kube_scheduler_configuration``."""
    api_version, obj = decode_versioned(data)
    set_defaults_kube_scheduler_configuration(obj, api_version)
    return _to_internal(api_version, obj)


def load_config_from_file(path: str) -> KubeSchedulerConfiguration:
    """Upstream: loadConfigFromFile. An unreadable file raises OSError."""
    with open(path, "rb") as f:
        return load_config(f.read())


def default_config(api_version: str = V1BETA3) -> KubeSchedulerConfiguration:
    """What that version's defaults make of a file that sets nothing."""
    return load_config(f"apiVersion: {api_version}\nkind: {KIND}\n")


# --- writing a configuration (configfile.go: encodeConfig, LogOrWriteConfig) ------------------


def completed_profile(profile: KubeSchedulerProfile) -> KubeSchedulerProfile:
    """The profile as the framework built from it captures it (upstream: NewFramework's
    outputProfile): the args of the plugins it enables only, sorted by plugin name."""
    needed = plugins_needed(profile.plugins)
    configs = sorted(
        (pc for pc in profile.plugin_config if pc.name in needed and pc.args is not None),
        key=lambda pc: pc.name,
    )
    return KubeSchedulerProfile(profile.scheduler_name, profile.plugins, configs)


def _args_out(name: str, args: Any, api_version: str) -> Any:
    kind = name + "Args"
    if kind not in _args_schemas(api_version):
        return copy.deepcopy(args)  # upstream: runtime.Unknown, written as it was read
    return {"apiVersion": api_version, "kind": kind, **versioned_args_fields(args)}


def to_versioned(cfg: KubeSchedulerConfiguration) -> dict[str, Any]:
    """The configuration as its version's JSON fields, omitempty applied (upstream: the
    conversion to the versioned type, then JSON)."""
    version = cfg.api_version if cfg.api_version in VERSIONS else V1BETA3
    le = cfg.leader_election
    cc = cfg.client_connection
    out: dict[str, Any] = {
        "apiVersion": version,
        "kind": KIND,
        "parallelism": cfg.parallelism,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(parse_duration(le.lease_duration)),
            "renewDeadline": format_duration(parse_duration(le.renew_deadline)),
            "retryPeriod": format_duration(parse_duration(le.retry_period)),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
        "enableProfiling": cfg.enable_profiling,
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
    }
    if version == V1BETA2:
        out["healthzBindAddress"] = cfg.healthz_bind_address
        out["metricsBindAddress"] = cfg.metrics_bind_address
    profiles = []
    for prof in cfg.profiles:
        p: dict[str, Any] = {"schedulerName": prof.scheduler_name}
        if prof.plugins is not None:
            p["plugins"] = _plugins_to_versioned(prof.plugins)
        if prof.plugin_config:
            p["pluginConfig"] = [
                {
                    "name": pc.name,
                    **({} if pc.args is None else {"args": _args_out(pc.name, pc.args, version)}),
                }
                for pc in prof.plugin_config
            ]
        profiles.append(p)
    if profiles:
        out["profiles"] = profiles
    if cfg.extenders:
        out["extenders"] = copy.deepcopy(cfg.extenders)
    return out


class _Dumper(yaml.SafeDumper):
    """Writes YAML as go-yaml v2 does from JSON: keys sorted, block style, a string that
    would read as another type double-quoted."""


def _represent_str(dumper: _Dumper, value: str) -> yaml.ScalarNode:
    # PyYAML's "yaml" tag (a value of "=", "*", "&"...) is a str to go-yaml: quoted only if
    # plain is not allowed, which the emitter decides (single quotes, as go-yaml's does).
    tag = dumper.resolve(yaml.ScalarNode, value, (True, False))
    if value == "" or tag not in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:yaml"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _represent_float(dumper: _Dumper, value: float) -> yaml.ScalarNode:
    # JSON has one number type; go-yaml writes an integral one as an int.
    if value.is_integer():
        return dumper.represent_int(int(value))
    return dumper.represent_scalar("tag:yaml.org,2002:float", repr(value))


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(float, _represent_float)


def dump_yaml(obj: Any) -> str:
    """JSON-like values as kube-scheduler writes them (sigs.k8s.io/yaml's JSONToYAML)."""
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True
    )


def encode_config(cfg: KubeSchedulerConfiguration) -> str:
    """The YAML ``--write-config-to`` writes (upstream: LogOrWriteConfig, encodeConfig): the
    configuration in its own version, each profile as its framework captures it
    (``completed_profile``). Simplified: the capture is done here, from the profile alone;
    upstream's framework does it as it builds the profile (a profile whose framework fails
    is never written)."""
    completed = copy.copy(cfg)
    completed.profiles = [completed_profile(p) for p in cfg.profiles]
    return dump_yaml(to_versioned(completed))
