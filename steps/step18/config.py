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
  pkg/scheduler/apis/config/scheme/scheme.go (a strict codec) and apimachinery's versioning
  codec (decode, nested args, default, convert);
- pkg/scheduler/framework/runtime/framework.go (NewFramework's captured profile: what
  ``--write-config-to`` writes of each profile).

How a file becomes a configuration, as upstream's codec does it: YAML to JSON-like values
(a duplicate key is remembered, the last one wins); apiVersion and kind; a strict decode
against the version's schema (an unknown field is remembered, a value of the wrong type is
fatal); each pluginConfig's args decoded against its own kind (``<plugin name>Args``); then
the version's defaults; then the internal types. Decode errors raise ``ConfigError`` with
upstream's text; ``validation.validate_kube_scheduler_configuration`` checks the result.

Versions: v1beta2 and v1beta3 are what v1.23 reads; v1 is what kube-scheduler reads today
(v1.36). Differs from upstream: this scheduler reads all three (v1.23 rejects v1, v1.36 rejects the
betas, with ``no kind "KubeSchedulerConfiguration" is registered for version ...``), and reads
v1 with v1beta3's schema and defaults: the fields v1 added later (plugins.preEnqueue, the
placement extension points, InterPodAffinityArgs.ignorePreferredTermsOfExistingPods,
DynamicResourcesArgs, ...) are unknown fields in a v1 file here, and v1's later default plugins
(SchedulingGates, DynamicResources, NodeDeclaredFeatures) are not in its default profile.

Not implemented: the plugins this scheduler lacks (``NOT_IMPLEMENTED_PLUGINS``). They are left
out of the default profiles, so a pod's host ports, volumes, topology spread constraints and pod
(anti-)affinity are ignored, no node is preferred for having the pod's images, and the written
configuration lists none of them (nor their args). A file may name them in ``disabled``; naming
one in ``enabled`` fails when the framework is built (``FilterPlugin "X" does not exist``).
Not implemented: the args of those plugins (InterPodAffinityArgs, PodTopologySpreadArgs,
VolumeBindingArgs) are checked against their schema, defaulted and kept as plain dicts of
their fields, which ``--write-config-to`` shows; they have no effect, and nothing validates
them. Not implemented: feature gates (v1.23's defaults, with DefaultPodTopologySpread on and
VolumeCapacityPriority off, are fixed: SelectorSpread is never a default plugin).
Extenders (``extenders:``) are decoded into ``Extender`` and, as upstream, not defaulted by the
file's version: an httpTimeout left out stays 0 here, and becomes 5s only when the scheduler
builds its HTTPExtender (upstream: NewHTTPExtender sets it in the configuration itself, which
``--write-config-to`` then shows: ``encode_config`` shows it too).
Simplified: PodTopologySpreadArgs.defaultConstraints' items are not checked field by field.
The reading and writing of the text (YAML, the strict decode and its errors, durations) is
``minisched/codec.py``, as kube-scheduler imports it from apimachinery and sigs.k8s.io; two
pieces of it are here, which only extenders needed: Go's []byte (a tlsConfig's certData, keyData
and caData: base64, ``decode_base64``), and the sorted key order YAMLToJSON leaves, which orders
the decode and so its errors (``_sorted_keys``).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubernetes.client import ApiClient, V1NodeAffinity

from minisched.apimachinery import go_quote
from minisched.codec import (
    BOOL,
    DURATION,
    FLOAT32,
    INT32,
    INT64,
    STRING,
    TYPE_META,
    DecodeError,
    Decoder,
    ListOf,
    Raw,
    Scalar,
    Struct,
    Type,
    dump_yaml,
    format_duration,
    go_number,
    group_version,
    interpret,
    json_kind,
    parse_duration,
    yaml_to_json,
)

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


# A configuration file that cannot be decoded; its text is upstream's error. The codec's
# errors (YAML, the strict decode, durations) are of the same class.
ConfigError = DecodeError


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
    for the args of a plugin this scheduler lacks, or of a plugin without an args type (upstream:
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
class ExtenderManagedResource:
    """An extended resource an extender manages (upstream: ExtenderManagedResource). With
    ``ignored_by_scheduler``, NodeResourcesFit leaves it to the extender."""

    name: str = ""
    ignored_by_scheduler: bool = False


@dataclass
class ExtenderTLSConfig:
    """How to reach an extender over TLS (upstream: ExtenderTLSConfig). The ``*_data`` fields
    are the PEM bytes themselves (base64 in a file) and win over the ``*_file`` ones."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass
class Extender:
    """A scheduler extender, called over HTTP (upstream: Extender). An empty verb is a call the
    extender does not take. ``http_timeout`` is a Go duration, as ``parse_duration`` reads it
    ("0s": the scheduler's default, DEFAULT_EXTENDER_TIMEOUT in extender.py)."""

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: str = "0s"
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = field(default_factory=list)
    ignorable: bool = False


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
    extenders: list[Extender] = field(default_factory=list)


# --- default plugins (v1beta3/default_plugins.go, v1beta2/default_plugins.go) ---------------

# The in-tree plugins of v1.23's default profiles that this scheduler does not have.
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
# plugin's weight the one it scores with. Listed whole, then restricted to this scheduler's plugins.
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
    """The plugins a profile of that version enables by default, restricted to this scheduler's
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


# --- the versioned schemas (k8s.io/kube-scheduler/config/<version>, k8s.io/api/core/v1) ---------

_node_selector_requirement = Struct(
    "NodeSelectorRequirement",
    "v1",
    {
        "key": STRING,
        "operator": Scalar("string", "v1.NodeSelectorOperator"),
        "values": ListOf(STRING),
    },
)
_node_selector_term = Struct(
    "NodeSelectorTerm",
    "v1",
    {
        "matchExpressions": ListOf(_node_selector_requirement),
        "matchFields": ListOf(_node_selector_requirement),
    },
)
_NODE_AFFINITY = Struct(
    "NodeAffinity",
    "v1",
    {
        "requiredDuringSchedulingIgnoredDuringExecution": Struct(
            "NodeSelector", "v1", {"nodeSelectorTerms": ListOf(_node_selector_term)}
        ),
        "preferredDuringSchedulingIgnoredDuringExecution": ListOf(
            Struct(
                "PreferredSchedulingTerm",
                "v1",
                {"weight": INT32, "preference": _node_selector_term},
            )
        ),
    },
)


def _package(api_version: str) -> str:
    return api_version.rsplit("/", 1)[1]


def _args_schemas(api_version: str) -> dict[str, Struct]:
    """The plugin args kinds the version registers, and their schemas
    (types_pluginargs.go)."""
    pkg = _package(api_version)
    resource_spec = Struct("ResourceSpec", pkg, {"name": STRING, "weight": INT64})
    shape_point = Struct("UtilizationShapePoint", pkg, {"utilization": INT32, "score": INT32})
    kinds: dict[str, dict[str, Type]] = {
        "DefaultPreemptionArgs": {
            "minCandidateNodesPercentage": INT32,
            "minCandidateNodesAbsolute": INT32,
        },
        "InterPodAffinityArgs": {"hardPodAffinityWeight": INT32},
        "NodeAffinityArgs": {"addedAffinity": _NODE_AFFINITY},
        "NodeResourcesBalancedAllocationArgs": {"resources": ListOf(resource_spec)},
        "NodeResourcesFitArgs": {
            "ignoredResources": ListOf(STRING),
            "ignoredResourceGroups": ListOf(STRING),
            "scoringStrategy": Struct(
                "ScoringStrategy",
                pkg,
                {
                    "type": Scalar("string", f"{pkg}.ScoringStrategyType"),
                    "resources": ListOf(resource_spec),
                    "requestedToCapacityRatio": Struct(
                        "RequestedToCapacityRatioParam", pkg, {"shape": ListOf(shape_point)}
                    ),
                },
            ),
        },
        "PodTopologySpreadArgs": {
            "defaultConstraints": ListOf(Raw("v1.TopologySpreadConstraint")),
            "defaultingType": Scalar("string", f"{pkg}.PodTopologySpreadConstraintsDefaulting"),
        },
        "VolumeBindingArgs": {"bindTimeoutSeconds": INT64, "shape": ListOf(shape_point)},
    }
    # scheduler-plugins v0.23.10 registers its args in the same scheme, for v1beta2 and
    # v1beta3 only (apis/config/v1beta2, v1beta3: types.go); v1beta3 dropped the unused
    # deniedPGExpirationTimeSeconds. It registers them through kube-scheduler's own
    # SchemeBuilder (register.go: localSchemeBuilder = &schedschemev1beta2.SchemeBuilder), so
    # they are in the plugin-args scheme too (GetPluginArgConversionScheme): an enabled
    # Coscheduling without a pluginConfig gets default args, as an in-tree plugin does (seen
    # with v1.23.10's binary: permitWaitingTimeSeconds 60 in its --write-config-to).
    if pkg == "v1beta2":
        kinds["CoschedulingArgs"] = {
            "permitWaitingTimeSeconds": INT64,
            "deniedPGExpirationTimeSeconds": INT64,
        }
    elif pkg == "v1beta3":
        kinds["CoschedulingArgs"] = {"permitWaitingTimeSeconds": INT64}
    return {kind: Struct(kind, pkg, {**TYPE_META, **fields}) for kind, fields in kinds.items()}


# Go's []byte: a base64 string in JSON (or an array of numbers); ``_ConfigDecoder`` reads it.
BYTES = Scalar("bytes", "[]uint8")
_UINT8 = Scalar("uint8", "uint8")


def _extender_schema(pkg: str) -> Struct:
    """The versioned Extender (types.go: the same in v1beta2 and v1beta3)."""
    tls = Struct(
        "ExtenderTLSConfig",
        pkg,
        {
            "insecure": BOOL,
            "serverName": STRING,
            "certFile": STRING,
            "keyFile": STRING,
            "caFile": STRING,
            "certData": BYTES,
            "keyData": BYTES,
            "caData": BYTES,
        },
    )
    managed = Struct("ExtenderManagedResource", pkg, {"name": STRING, "ignoredByScheduler": BOOL})
    return Struct(
        "Extender",
        pkg,
        {
            "urlPrefix": STRING,
            "filterVerb": STRING,
            "preemptVerb": STRING,
            "prioritizeVerb": STRING,
            "weight": INT64,
            "bindVerb": STRING,
            "enableHTTPS": BOOL,
            "tlsConfig": tls,
            "httpTimeout": DURATION,
            "nodeCacheCapable": BOOL,
            "managedResources": ListOf(managed),
            "ignorable": BOOL,
        },
    )


_BASE64_ALPHABET = {
    c: i for i, c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}


def decode_base64(text: str) -> bytes:
    """``text`` as Go's base64.StdEncoding.Decode reads it (the one encoding/json uses for a
    []byte): padding required, CR and LF skipped anywhere; a ValueError with Go's text,
    ``illegal base64 data at input byte N``, where Go's decodeQuantum stops."""
    src = text.encode()
    out = bytearray()
    si = 0

    def corrupt(at: int) -> ValueError:
        return ValueError(f"illegal base64 data at input byte {at}")

    while si < len(src):
        quantum = [0, 0, 0, 0]
        length = 4
        trailing: int | None = None
        j = 0
        while j < 4:
            if si == len(src):
                if j == 0:
                    return bytes(out)
                raise corrupt(si - j)
            c = src[si]
            si += 1
            if c in _BASE64_ALPHABET:
                quantum[j] = _BASE64_ALPHABET[c]
                j += 1
                continue
            if c in b"\r\n":
                continue
            if c != ord("=") or j < 2:
                raise corrupt(si - 1)
            if j == 2:  # a second "=" must follow, maybe after newlines
                while si < len(src) and src[si] in b"\r\n":
                    si += 1
                if si == len(src):
                    raise corrupt(len(src))
                if src[si] != ord("="):
                    raise corrupt(si - 1)
                si += 1
            while si < len(src) and src[si] in b"\r\n":
                si += 1
            if si < len(src):
                trailing = si
            length = j
            break
        value = quantum[0] << 18 | quantum[1] << 12 | quantum[2] << 6 | quantum[3]
        out.extend(value.to_bytes(3, "big")[: length - 1])
        if trailing is not None:
            raise corrupt(trailing)
    return bytes(out)


class _ConfigDecoder(Decoder):
    """The codec's strict decoder, with Go's []byte (``BYTES``) added: a base64 string, or an
    array of numbers 0-255, as encoding/json reads them. A base64 error is saved as a type
    error is (encoding/json's saveError: the first one stops the decode, with no prefix)."""

    def _scalar(self, value: Any, typ: Scalar, struct: str, path: list[str]) -> Any:
        if typ.kind != "bytes":
            return super()._scalar(value, typ, struct, path)
        if isinstance(value, str):
            try:
                return decode_base64(value)
            except ValueError as e:
                if self.type_error is None:
                    self.type_error = str(e)
                return None
        if not isinstance(value, list):
            self._wrong_type(json_kind(value), typ, struct, path)
            return None
        out = bytearray()
        for item in value:
            if item is None:
                out.append(0)
            elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= 255:
                out.append(item)
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                self._wrong_type(f"number {go_number(item)}", _UINT8, struct, path)
            else:
                self._wrong_type(json_kind(item), _UINT8, struct, path)
        return bytes(out)


def _sorted_keys(value: Any) -> Any:
    """Every mapping's keys in sorted order, as sigs.k8s.io/yaml's YAMLToJSON leaves them (it
    marshals Go maps): the decode, and so the order of its errors, follows that order."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def _schema(api_version: str) -> Struct:
    """KubeSchedulerConfiguration's schema in that version (types.go)."""
    pkg = _package(api_version)
    plugin_set = Struct(
        "PluginSet",
        pkg,
        {
            "enabled": ListOf(Struct("Plugin", pkg, {"name": STRING, "weight": INT32})),
            "disabled": ListOf(Struct("Plugin", pkg, {"name": STRING, "weight": INT32})),
        },
    )
    plugins = Struct("Plugins", pkg, {json: plugin_set for _, json in EXTENSION_POINTS})
    profile = Struct(
        "KubeSchedulerProfile",
        pkg,
        {
            "schedulerName": STRING,
            "plugins": plugins,
            "pluginConfig": ListOf(Struct("PluginConfig", pkg, {"name": STRING, "args": Raw()})),
        },
    )
    fields: dict[str, Type] = {
        **TYPE_META,
        "parallelism": INT32,
        "leaderElection": Struct(
            "LeaderElectionConfiguration",
            "v1alpha1",
            {
                "leaderElect": BOOL,
                "leaseDuration": DURATION,
                "renewDeadline": DURATION,
                "retryPeriod": DURATION,
                "resourceLock": STRING,
                "resourceName": STRING,
                "resourceNamespace": STRING,
            },
        ),
        "clientConnection": Struct(
            "ClientConnectionConfiguration",
            "v1alpha1",
            {
                "kubeconfig": STRING,
                "acceptContentTypes": STRING,
                "contentType": STRING,
                "qps": FLOAT32,
                "burst": INT32,
            },
        ),
        "enableProfiling": BOOL,
        "enableContentionProfiling": BOOL,
        "percentageOfNodesToScore": INT32,
        "podInitialBackoffSeconds": INT64,
        "podMaxBackoffSeconds": INT64,
        "profiles": ListOf(profile),
        "extenders": ListOf(_extender_schema(pkg)),
    }
    if api_version == V1BETA2:
        fields["healthzBindAddress"] = STRING
        fields["metricsBindAddress"] = STRING
    return Struct(KIND, pkg, fields)


def _not_registered(group: str, version: str, kind: str) -> ConfigError:
    return ConfigError(
        f"no kind {go_quote(kind)} is registered for version "
        f"{go_quote(group_version(group, version))} in scheme {go_quote(SCHEME_NAME)}"
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
        group, version, kind = interpret(raw)
        default_group, default_version = api_version.split("/")
        # The kind and version the args leave out are the expected ones (upstream:
        # gvkWithDefaults).
        kind = kind or expected
        if not version and group in ("", default_group):
            group, version = default_group, default_version
        gv = group_version(group, version)
        if gv not in VERSIONS or kind not in _args_schemas(gv):
            raise _not_registered(group, version, kind)
        decoder = Decoder()
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


def set_defaults_coscheduling_args(obj: dict[str, Any], api_version: str = "") -> None:
    """Upstream: scheduler-plugins' SetDefaults_CoschedulingArgs (v1beta2 also defaults the
    deniedPGExpirationTimeSeconds it declares)."""
    obj.setdefault("permitWaitingTimeSeconds", 60)
    if api_version.endswith("/v1beta2"):
        obj.setdefault("deniedPGExpirationTimeSeconds", 20)


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
    if args.kind == "CoschedulingArgs":
        set_defaults_coscheduling_args(args.fields, args.api_version)
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


def _with_zero_values(value: Any, typ: Type) -> Any:
    """A decoded core/v1 value with Go's zero values in its required fields left out."""
    if isinstance(typ, ListOf) and isinstance(value, list):
        return [_with_zero_values(item, typ.elem) for item in value]
    if isinstance(typ, Struct) and isinstance(value, dict):
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
    from .plugins import coscheduling, defaultpreemption, nodeaffinity, noderesources

    if args is None:
        return None
    if isinstance(args, UnknownArgs):
        return args.raw
    f = args.fields
    if args.kind == "CoschedulingArgs":
        return coscheduling.CoschedulingArgs(
            permit_waiting_time_seconds=f.get("permitWaitingTimeSeconds", 0)
        )
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
    # Not implemented: the args of a plugin this scheduler lacks: its fields, as a plain dict.
    return copy.deepcopy(f)


def _resources_out(items: tuple[noderesources.ResourceSpec, ...]) -> list[dict[str, Any]]:
    # ResourceSpec.weight is omitempty.
    return [{"name": r.name, **({"weight": r.weight} if r.weight else {})} for r in items]


def versioned_args_fields(args: Any) -> dict[str, Any]:
    """The fields of internal args as the versioned type writes them, omitempty applied
    (upstream: the conversion to the versioned args, then JSON)."""
    from .plugins import coscheduling, defaultpreemption, nodeaffinity, noderesources

    out: dict[str, Any] = {}
    if isinstance(args, coscheduling.CoschedulingArgs):
        out["permitWaitingTimeSeconds"] = args.permit_waiting_time_seconds
    elif isinstance(args, defaultpreemption.DefaultPreemptionArgs):
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
        kind = name + "Args"
        if name in existing or kind not in _args_schemas(api_version):
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
    # enableContentionProfiling defaults to enableProfiling's value.
    if obj["enableProfiling"]:
        obj.setdefault("enableContentionProfiling", True)


# --- decoding a file (options/configfile.go: loadConfig) -----------------------------------


def decode_versioned(data: str | bytes) -> tuple[str, dict[str, Any]]:
    """The file's version and its fields, strictly decoded, args included, not defaulted
    (upstream: the codec's Decode up to DecodeNestedObjects)."""
    try:
        text = data.decode() if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise ConfigError("yaml: invalid leading UTF-8 octet") from None
    value, duplicates = yaml_to_json(text)
    group, version, kind = interpret(value)
    if not kind:
        raise ConfigError(f"Object 'Kind' is missing in '{text}'")
    if not version:
        raise ConfigError(f"Object 'apiVersion' is missing in '{text}'")
    gv = group_version(group, version)
    if gv not in VERSIONS:
        raise _not_registered(group, version, kind)
    if kind != KIND:
        if kind not in _args_schemas(gv):
            raise _not_registered(group, version, kind)
        # A registered args kind decodes, and loadConfig refuses what it is.
        raise ConfigError(f"couldn't decode as KubeSchedulerConfiguration, got {gv}, Kind={kind}: ")
    decoder = _ConfigDecoder()
    obj = decoder.decode(_sorted_keys(value), _schema(gv), KIND, [])
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
        extenders=[_extender_to_internal(e) for e in obj.get("extenders", [])],
    )


def _extender_to_internal(ext: dict[str, Any]) -> Extender:
    """A decoded versioned Extender as the internal type (upstream: the generated
    conversion); a field left out is Go's zero value."""
    tls = ext.get("tlsConfig")
    return Extender(
        url_prefix=ext.get("urlPrefix", ""),
        filter_verb=ext.get("filterVerb", ""),
        preempt_verb=ext.get("preemptVerb", ""),
        prioritize_verb=ext.get("prioritizeVerb", ""),
        weight=ext.get("weight", 0),
        bind_verb=ext.get("bindVerb", ""),
        enable_https=ext.get("enableHTTPS", False),
        tls_config=None
        if tls is None
        else ExtenderTLSConfig(
            insecure=tls.get("insecure", False),
            server_name=tls.get("serverName", ""),
            cert_file=tls.get("certFile", ""),
            key_file=tls.get("keyFile", ""),
            ca_file=tls.get("caFile", ""),
            cert_data=tls.get("certData", b""),
            key_data=tls.get("keyData", b""),
            ca_data=tls.get("caData", b""),
        ),
        http_timeout=format_duration(ext.get("httpTimeout", 0)),
        node_cache_capable=ext.get("nodeCacheCapable", False),
        managed_resources=[
            ExtenderManagedResource(r.get("name", ""), r.get("ignoredByScheduler", False))
            for r in ext.get("managedResources", [])
        ],
        ignorable=ext.get("ignorable", False),
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
        out["extenders"] = [_extender_to_versioned(e) for e in cfg.extenders]
    return out


def _extender_to_versioned(ext: Extender) -> dict[str, Any]:
    """An Extender as the versioned type writes it: omitempty applied, but for urlPrefix (no
    omitempty) and httpTimeout (a struct, never omitted); bytes in base64, as Go writes a
    []byte."""
    out: dict[str, Any] = {"urlPrefix": ext.url_prefix}
    for key, value in (
        ("filterVerb", ext.filter_verb),
        ("preemptVerb", ext.preempt_verb),
        ("prioritizeVerb", ext.prioritize_verb),
        ("weight", ext.weight),
        ("bindVerb", ext.bind_verb),
        ("enableHTTPS", ext.enable_https),
    ):
        if value:
            out[key] = value
    tls = ext.tls_config
    if tls is not None:
        out["tlsConfig"] = {
            key: base64.b64encode(value).decode() if isinstance(value, bytes) else value
            for key, value in (
                ("insecure", tls.insecure),
                ("serverName", tls.server_name),
                ("certFile", tls.cert_file),
                ("keyFile", tls.key_file),
                ("caFile", tls.ca_file),
                ("certData", tls.cert_data),
                ("keyData", tls.key_data),
                ("caData", tls.ca_data),
            )
            if value
        }
    out["httpTimeout"] = format_duration(parse_duration(ext.http_timeout))
    if ext.node_cache_capable:
        out["nodeCacheCapable"] = True
    if ext.managed_resources:
        out["managedResources"] = [
            {"name": r.name, **({"ignoredByScheduler": True} if r.ignored_by_scheduler else {})}
            for r in ext.managed_resources
        ]
    if ext.ignorable:
        out["ignorable"] = True
    return out


def extender_ignored_resources(extenders: list[Extender]) -> list[str]:
    """The managed resources the extenders take over from the scheduler (ignoredByScheduler),
    in the extenders' order (upstream: Configurator.create's ignoredExtendedResources)."""
    return [r.name for ext in extenders for r in ext.managed_resources if r.ignored_by_scheduler]


def set_extender_ignored_resources(
    profiles: list[KubeSchedulerProfile], extenders: list[Extender]
) -> None:
    """Make every profile's NodeResourcesFit args ignore the resources the extenders take
    over, replacing the file's ignoredResources (upstream: Configurator.create, in place,
    before the profiles' frameworks are built; nothing when no extender takes one). Raises
    ValueError with upstream's text for a profile without NodeResourcesFit args (one that
    does not enable the plugin: its args are only defaulted for the plugins it enables)."""
    from .plugins import noderesources

    names = tuple(extender_ignored_resources(extenders))
    if not names:
        return
    for profile in profiles:
        pc = next((pc for pc in profile.plugin_config if pc.name == "NodeResourcesFit"), None)
        if pc is None:
            raise ValueError("can't find NodeResourcesFitArgs in plugin config")
        if not isinstance(pc.args, noderesources.NodeResourcesFitArgs):
            # Differs from upstream: Python's name of the args' type where Go prints %T.
            raise ValueError(
                f"want args to be of type NodeResourcesFitArgs, got {type(pc.args).__name__}"
            )
        pc.args = dataclasses.replace(pc.args, ignored_resources=names)


def encode_config(cfg: KubeSchedulerConfiguration) -> str:
    """The YAML ``--write-config-to`` writes (upstream: LogOrWriteConfig, encodeConfig): the
    configuration in its own version, each profile as its framework captures it
    (``completed_profile``), with what building the scheduler changes in it: each extender's
    httpTimeout defaulted (upstream: NewHTTPExtender) and the resources the extenders take
    over in every NodeResourcesFit's ignoredResources (``set_extender_ignored_resources``).

    Simplified: the capture is done here, from the profile alone; upstream's framework does
    it as it builds the profile. Differs from upstream: kube-scheduler writes the file only
    once its scheduler is built, so a configuration it cannot build a scheduler from (a
    plugin that fails, an extender's unreadable TLS file, a profile without NodeResourcesFit
    while an extender takes a resource over) is written here, and refused only when the
    scheduler is built."""
    from .extender import DEFAULT_EXTENDER_TIMEOUT

    completed = copy.copy(cfg)
    profiles = cfg.profiles
    if extender_ignored_resources(cfg.extenders):
        profiles = copy.deepcopy(cfg.profiles)
        try:
            set_extender_ignored_resources(profiles, cfg.extenders)
        except ValueError:
            pass  # upstream writes nothing then; see above
    completed.profiles = [completed_profile(p) for p in profiles]
    completed.extenders = [
        dataclasses.replace(ext, http_timeout=DEFAULT_EXTENDER_TIMEOUT)
        if parse_duration(ext.http_timeout) == 0
        else ext
        for ext in cfg.extenders
    ]
    return dump_yaml(to_versioned(completed))
