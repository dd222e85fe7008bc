"""ValidateKubeSchedulerConfiguration: what a decoded, defaulted configuration must satisfy.

Upstream, at v1.23.10: pkg/scheduler/apis/config/validation/validation.go
(ValidateKubeSchedulerConfiguration, validateKubeSchedulerProfile, validatePluginConfig,
validateCommonQueueSort, validateExtenders, validateExtendedResourceName), with
pkg/apis/core/v1/helper's IsExtendedResourceName, and component-base's
config/validation/validation.go (ValidateClientConnectionConfiguration,
ValidateLeaderElectionConfiguration). The plugin args' own validators live with their
plugins (``plugins/``).

The whole error is upstream's: every field error, flattened, each distinct text once, in
brackets when there are several (``minisched.apimachinery.Aggregate``). A bad value that is a
Go struct is printed as Go's %#v prints it (``config.PluginSet{Enabled:...}``,
``v1.Duration{Duration:10000000000}``), since upstream's field errors fall back to that.

v1.23's quirk, ported: validatePluginConfig looks validators up by plugin name, but lists
NodeResourcesFit's under "NodeResourcesFitArgs", so NodeResourcesFit's args are never
validated here; bad ones fail later, when the plugin is built (NewFit validates them).
v1.24 fixed the key.
Differs from upstream: the duplicate scheduler name error prints a made-up address where Go
prints the *field.Path's own (``parent:(*field.Path)(0x...)``): no two runs agree on it.
Extenders: validateExtenders and validateExtendedResourceName, with their texts; a bad name's
IsQualifiedName errors print it unquoted (Go's v1.ResourceName is a Stringer), the others
quoted, as upstream's do.
Not implemented: the args of the plugins this scheduler lacks (InterPodAffinityArgs,
PodTopologySpreadArgs, VolumeBindingArgs) are not validated.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minisched.apimachinery import (
    ERROR_TYPE_DUPLICATE,
    Aggregate,
    FieldError,
    child_path,
    flatten,
    go_quote,
    index_path,
    invalid,
    is_qualified_name,
    new_aggregate,
    required,
    to_aggregate,
)

from .config import (
    Extender,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    PluginSet,
    parse_duration,
)


@dataclass(frozen=True)
class GoValue:
    """A bad value printed as it is: Go's %#v of a struct, which field errors fall back to
    for a value that is neither a simple type nor a Stringer."""

    text: str

    def __str__(self) -> str:
        return self.text


def _plugin_set_value(ps: PluginSet) -> GoValue:
    """%#v of an internal config.PluginSet (a nil slice for an empty list: the merge never
    leaves an empty, non-nil one)."""

    def plugins(items: list[Any]) -> str:
        if not items:
            return "[]config.Plugin(nil)"
        inner = ", ".join(
            f"config.Plugin{{Name:{go_quote(p.name)}, Weight:{p.weight or 0}}}" for p in items
        )
        return f"[]config.Plugin{{{inner}}}"

    return GoValue(
        f"config.PluginSet{{Enabled:{plugins(ps.enabled)}, Disabled:{plugins(ps.disabled)}}}"
    )


def _args_value(args: Any) -> Any:
    """A plugin's args as a field error prints them: null for none; a raw (runtime.Unknown)
    one as Go's %#v, its JSON as bytes; typed args by their repr (Differs from upstream:
    Go prints the internal struct)."""
    if args is None:
        return GoValue("null")
    if isinstance(args, (dict, list, str, int, float, bool)):
        raw = json.dumps(args, separators=(",", ":")).encode()
        data = ", ".join(f"0x{b:02x}" for b in raw)
        return GoValue(
            'runtime.Unknown{TypeMeta:runtime.TypeMeta{APIVersion:"", Kind:""}, '
            f'Raw:[]uint8{{{data}}}, ContentEncoding:"", ContentType:"application/json"}}'
        )
    return GoValue(repr(args))


def _duration_value(duration: str) -> GoValue:
    return GoValue(f"v1.Duration{{Duration:{parse_duration(duration)}}}")


def validate_client_connection_configuration(cc: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateClientConnectionConfiguration."""
    if cc.burst < 0:
        return [invalid(child_path(path, "burst"), cc.burst, "must be non-negative")]
    return []


def validate_leader_election_configuration(
    le: LeaderElectionConfiguration, path: str
) -> list[FieldError]:
    """Upstream: ValidateLeaderElectionConfiguration; nothing when leader election is off."""
    if not le.leader_elect:
        return []
    errs: list[FieldError] = []
    lease = parse_duration(le.lease_duration)
    renew = parse_duration(le.renew_deadline)
    retry = parse_duration(le.retry_period)
    for name, value, text in (
        ("leaseDuration", lease, le.lease_duration),
        ("renewDeadline", renew, le.renew_deadline),
        ("retryPeriod", retry, le.retry_period),
    ):
        if value <= 0:
            errs.append(
                invalid(child_path(path, name), _duration_value(text), "must be greater than zero")
            )
    if lease < renew:
        # Upstream reports the renew deadline as the lease duration's bad value.
        errs.append(
            invalid(
                child_path(path, "leaseDuration"),
                _duration_value(le.renew_deadline),
                "LeaseDuration must be greater than RenewDeadline",
            )
        )
    for name, value in (
        ("resourceLock", le.resource_lock),
        ("resourceNamespace", le.resource_namespace),
        ("resourceName", le.resource_name),
    ):
        if not value:
            errs.append(invalid(child_path(path, name), value, f"{name} is required"))
    return errs


def _plugin_args_validators() -> dict[str, tuple[type, Callable[[str, Any], Aggregate | None]]]:
    """The args validators by plugin name, with the args type each takes (upstream:
    validatePluginConfig's map). "NodeResourcesFitArgs" is v1.23's key (a plugin of that
    name does not exist): NodeResourcesFit's args are not validated here."""
    # The plugin packages import the runtime, which imports config: imported here.
    from .plugins import defaultpreemption, nodeaffinity, noderesources

    return {
        "DefaultPreemption": (
            defaultpreemption.DefaultPreemptionArgs,
            defaultpreemption.validate_default_preemption_args,
        ),
        "NodeAffinity": (nodeaffinity.NodeAffinityArgs, nodeaffinity.validate_node_affinity_args),
        "NodeResourcesBalancedAllocation": (
            noderesources.NodeResourcesBalancedAllocationArgs,
            noderesources.validate_node_resources_balanced_allocation_args,
        ),
        "NodeResourcesFitArgs": (
            noderesources.NodeResourcesFitArgs,
            noderesources.validate_node_resources_fit_args,
        ),
    }


def _validate_plugin_config(path: str, profile: KubeSchedulerProfile) -> list[BaseException]:
    """Upstream: validatePluginConfig. (Its removed-plugins checks find nothing in v1.23: no
    plugin was removed in v1beta2 or v1beta3.)"""
    validators = _plugin_args_validators()
    errs: list[BaseException] = []
    seen: set[str] = set()
    for i, pc in enumerate(profile.plugin_config):
        pc_path = index_path(child_path(path, "pluginConfig"), i)
        if pc.name in seen:
            errs.append(FieldError(ERROR_TYPE_DUPLICATE, pc_path, pc.name, ""))
        else:
            seen.add(pc.name)
        if pc.name not in validators:
            continue
        args_type, validate = validators[pc.name]
        args_path = child_path(pc_path, "args")
        if not isinstance(pc.args, args_type):
            errs.append(invalid(args_path, _args_value(pc.args), "has to match plugin args"))
            continue
        agg = validate(args_path, pc.args)
        if agg is not None:
            errs.append(agg)
    return errs


def _plugin_set_key(ps: PluginSet) -> tuple[tuple[tuple[str, int], ...], ...]:
    """A PluginSet as the internal type compares: an unset weight is 0."""
    return tuple(
        tuple((p.name, p.weight or 0) for p in items) for items in (ps.enabled, ps.disabled)
    )


def _validate_common_queue_sort(
    path: str, profiles: list[KubeSchedulerProfile]
) -> list[FieldError]:
    """Every profile must sort its queue as the first does (there is one queue): the same
    queueSort set, compared as given (upstream: cmp.Equal), and the same args for its plugin
    (upstream: validateCommonQueueSort)."""
    errs: list[FieldError] = []
    canon = PluginSet()
    queue_sort_name = ""
    first = profiles[0]
    if first.plugins is not None:
        canon = first.plugins.queue_sort
        if canon.enabled:
            queue_sort_name = canon.enabled[0].name
        if len(canon.enabled) > 1:
            errs.append(
                invalid(
                    f"{index_path(path, 0)}.plugins.queueSort.Enabled",
                    len(canon.enabled),
                    "only one queue sort plugin can be enabled",
                )
            )
    queue_sort_args = None
    for pc in first.plugin_config:
        if queue_sort_name and pc.name == queue_sort_name:
            queue_sort_args = pc.args
    for i in range(1, len(profiles)):
        curr = PluginSet() if profiles[i].plugins is None else profiles[i].plugins.queue_sort
        if _plugin_set_key(curr) != _plugin_set_key(canon):
            errs.append(
                invalid(
                    f"{index_path(path, i)}.plugins.queueSort",
                    _plugin_set_value(curr),
                    "has to match for all profiles",
                )
            )
        for pc in profiles[i].plugin_config:
            if pc.name == queue_sort_name and pc.args != queue_sort_args:
                errs.append(
                    invalid(
                        f"{index_path(path, i)}.pluginConfig.args",
                        _args_value(pc.args),
                        "has to match for all profiles",
                    )
                )
    return errs


def _split_host_int_port(address: str) -> tuple[str, int]:
    """Go's net.SplitHostPort, then strconv.Atoi on the port; ValueError with Go's text."""
    missing = f"address {address}: missing port in address"
    if address.startswith("["):
        end = address.find("]")
        if end < 0:
            raise ValueError(f"address {address}: missing ']' in address")
        host, rest = address[1:end], address[end + 1 :]
        if not rest.startswith(":"):
            raise ValueError(missing)
        port = rest[1:]
    else:
        if ":" not in address:
            raise ValueError(missing)
        host, port = address.rsplit(":", 1)
        if ":" in host:
            raise ValueError(f"address {address}: too many colons in address")
    # strconv.Atoi: an optional sign and ASCII digits.
    if not re.fullmatch(r"[+-]?[0-9]+", port):
        raise ValueError(f"strconv.Atoi: parsing {go_quote(port)}: invalid syntax")
    return host, int(port)


def _validate_bind_address(name: str, address: str) -> list[FieldError]:
    """healthzBindAddress and metricsBindAddress (v1beta2 only): empty, or an IP with port 0."""
    if not address:
        return []
    try:
        host, port = _split_host_int_port(address)
    except ValueError as e:
        return [invalid(name, address, str(e))]
    errs: list[FieldError] = []
    try:
        ipaddress.ip_address(host)
    except ValueError:
        errs.append(
            invalid(
                name,
                address,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            )
        )
    if port != 0:
        errs.append(invalid(name, address, "must be empty or with an explicit 0 port"))
    return errs


# A resource named ``requests.<name>`` is the quota of <name> (upstream:
# v1.DefaultResourceRequestsPrefix); "*kubernetes.io/" names are Kubernetes' own
# (v1.ResourceDefaultNamespacePrefix).
DEFAULT_RESOURCE_REQUESTS_PREFIX = "requests."
RESOURCE_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"


def is_native_resource(name: str) -> bool:
    """An unprefixed name, or one in the *kubernetes.io/ namespace (upstream:
    v1helper.IsNativeResource)."""
    return "/" not in name or RESOURCE_DEFAULT_NAMESPACE_PREFIX in name


def is_extended_resource_name(name: str) -> bool:
    """A prefixed, non-native name whose quota name (``requests.<name>``) is a qualified
    name too (upstream: v1helper.IsExtendedResourceName)."""
    if is_native_resource(name) or name.startswith(DEFAULT_RESOURCE_REQUESTS_PREFIX):
        return False
    return not is_qualified_name(DEFAULT_RESOURCE_REQUESTS_PREFIX + name)


def validate_extended_resource_name(path: str, name: str) -> list[FieldError]:
    """Upstream: validateExtendedResourceName. The IsQualifiedName errors print the name as
    Go prints a v1.ResourceName (its String(): unquoted); the last check prints it as a
    string (quoted)."""
    errs = [invalid(path, GoValue(name), msg) for msg in is_qualified_name(name)]
    if errs:
        return errs
    if not is_extended_resource_name(name):
        errs.append(invalid(path, name, "is an invalid extended resource name"))
    return errs


def validate_extenders(path: str, extenders: list[Extender]) -> list[FieldError]:
    """Upstream: validateExtenders. A prioritizing extender needs a positive weight; each
    managed resource must be an extended resource, named by one extender only; at most one
    extender may bind."""
    errs: list[FieldError] = []
    binders = 0
    managed: set[str] = set()
    for i, extender in enumerate(extenders):
        ext_path = index_path(path, i)
        if extender.prioritize_verb and extender.weight <= 0:
            errs.append(
                invalid(
                    child_path(ext_path, "weight"),
                    extender.weight,
                    "must have a positive weight applied to it",
                )
            )
        if extender.bind_verb:
            binders += 1
        for j, resource in enumerate(extender.managed_resources):
            name_path = child_path(index_path(child_path(ext_path, "managedResources"), j), "name")
            errs.extend(validate_extended_resource_name(name_path, resource.name))
            if resource.name in managed:
                errs.append(
                    invalid(name_path, resource.name, "duplicate extender managed resource name")
                )
            managed.add(resource.name)
    if binders > 1:
        errs.append(
            invalid(
                path,
                f"found {binders} extenders implementing bind",
                "only one extender can implement bind",
            )
        )
    return errs


def validate_kube_scheduler_configuration(cfg: KubeSchedulerConfiguration) -> Aggregate | None:
    """Every error of the configuration, as one Aggregate (a ValueError), or None (upstream:
    ValidateKubeSchedulerConfiguration)."""
    errs: list[BaseException | None] = [
        to_aggregate(
            validate_client_connection_configuration(cfg.client_connection, "clientConnection")
        ),
        to_aggregate(validate_leader_election_configuration(cfg.leader_election, "leaderElection")),
    ]
    if cfg.parallelism <= 0:
        errs.append(
            invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero")
        )
    if not cfg.profiles:
        errs.append(required("profiles", ""))
    else:
        existing: dict[str, int] = {}
        for i, profile in enumerate(cfg.profiles):
            path = index_path("profiles", i)
            if not profile.scheduler_name:
                errs.append(required(child_path(path, "schedulerName"), ""))
            errs.extend(_validate_plugin_config(path, profile))
            if profile.scheduler_name in existing:
                # Upstream's bad value is the first profile's *field.Path, printed by %#v.
                errs.append(
                    FieldError(
                        ERROR_TYPE_DUPLICATE,
                        child_path(path, "schedulerName"),
                        GoValue(
                            'field.Path{name:"schedulerName", index:"", '
                            f"parent:(*field.Path)(0x{id(profile):x})}}"
                        ),
                        "",
                    )
                )
            existing[profile.scheduler_name] = i
        errs.extend(_validate_common_queue_sort("profiles", cfg.profiles))
    errs.extend(_validate_bind_address("healthzBindAddress", cfg.healthz_bind_address))
    errs.extend(_validate_bind_address("metricsBindAddress", cfg.metrics_bind_address))
    if not 0 <= cfg.percentage_of_nodes_to_score <= 100:
        errs.append(
            invalid(
                "percentageOfNodesToScore",
                cfg.percentage_of_nodes_to_score,
                "not in valid range [0-100]",
            )
        )
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.append(
            invalid(
                "podInitialBackoffSeconds",
                cfg.pod_initial_backoff_seconds,
                "must be greater than 0",
            )
        )
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errs.append(
            invalid(
                "podMaxBackoffSeconds",
                cfg.pod_max_backoff_seconds,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    errs.extend(validate_extenders("extenders", cfg.extenders))
    return flatten(new_aggregate(errs))
