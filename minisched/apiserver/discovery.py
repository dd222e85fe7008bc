"""Discovery documents: ``/api``, ``/api/v1``, ``/apis`` and ``/version``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/endpoints/discovery`` (``legacy.go``, ``root.go``,
``version.go``) and ``staging/src/k8s.io/apimachinery/pkg/version`` (``Info``).

Aggregated discovery (``staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated``):
kubectl 1.30+ asks ``/api`` and ``/apis`` for an ``APIGroupDiscoveryList`` (apidiscovery.k8s.io
v2, or v2beta1) and gets every group, version and resource in one answer per path.

The groups under ``/apis`` are the built-in ones, then those of established CRDs
(``apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go``): callers
pass them merged (``Groups``); custom resources list their verbs in upstream's order, not
sorted, and name their group and version in aggregated discovery.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

from .registry import GROUPS, RESOURCES, Resource

JSON = dict[str, Any]
Groups = dict[str, dict[str, dict[str, Resource]]]  # group -> version -> plural -> Resource

# The Kubernetes version whose behaviour this server reproduces (the recorded conformance
# cases come from v1.36.2).
KUBE_MAJOR, KUBE_MINOR, KUBE_PATCH = "1", "36", "2"


def version_info() -> JSON:
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": str(int(KUBE_MINOR) - 1),
        "gitVersion": f"v{KUBE_MAJOR}.{KUBE_MINOR}.{KUBE_PATCH}+minisched",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": f"python{sys.version.split()[0]}",
        "compiler": "minisched",
        "platform": f"{sys.platform}/{platform.machine().lower().replace('x86_64', 'amd64')}",
    }


def api_versions(server_address: str) -> JSON:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group(name: str, groups: Groups = GROUPS) -> JSON:
    """``/apis/{group}``: the ``APIGroup`` with its versions (the first is preferred)."""
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups[name]]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def api_groups(groups: Groups = GROUPS) -> JSON:
    """``/apis``: the groups served besides the core group (``/api/v1``)."""
    listed = [
        {k: v for k, v in api_group(g, groups).items() if k not in ("kind", "apiVersion")}
        for g in groups
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}


def merged(custom: Groups) -> Groups:
    """The built-in groups with the custom resources' added: built-in groups first (a CRD may
    add resources or versions to one), then the others in the order given."""
    out: Groups = {g: dict(versions) for g, versions in GROUPS.items()}
    for group, versions in custom.items():
        into = out.setdefault(group, {})
        for version, served in versions.items():
            into[version] = {**into.get(version, {}), **served}
    return out


def _verbs(res: Resource) -> list[str]:
    return list(res.verbs) if res.custom is not None else sorted(res.verbs)


def _entry(name: str, singular: str, namespaced: bool, kind: str, verbs: list[str]) -> JSON:
    return {
        "name": name,
        "singularName": singular,
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    }


def api_resource_list() -> JSON:
    """``/api/v1``: every resource and subresource we serve, sorted by name as upstream does."""
    entries: list[JSON] = [_entry("bindings", "binding", True, "Binding", ["create"])]
    for res in RESOURCES.values():
        entry = _entry(res.name, res.singular, res.namespaced, res.kind, sorted(res.verbs))
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        if res.categories:
            entry["categories"] = list(res.categories)
        entry["storageVersionHash"] = res.storage_version_hash
        entries.append(entry)
        if res.has_status:
            entries.append(
                _entry(
                    f"{res.name}/status", "", res.namespaced, res.kind, ["get", "patch", "update"]
                )
            )
    entries.append(_entry("pods/binding", "", True, "Binding", ["create"]))
    entries.sort(key=lambda e: e["name"])
    return {"kind": "APIResourceList", "groupVersion": "v1", "resources": entries}


def group_resource_list(group: str, version: str, groups: Groups = GROUPS) -> JSON:
    """``/apis/{group}/{version}``: its ``APIResourceList``."""
    entries = []
    for res in groups[group][version].values():
        entry = _entry(res.name, res.singular, res.namespaced, res.kind, _verbs(res))
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        if res.categories:
            entry["categories"] = list(res.categories)
        entry["storageVersionHash"] = res.storage_version_hash
        entries.append(entry)
        if res.has_status:
            entries.append(
                _entry(
                    f"{res.name}/status", "", res.namespaced, res.kind, ["get", "patch", "update"]
                )
            )
    entries.sort(key=lambda e: e["name"])
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}",
        "resources": entries,
    }


# --------------------------------------------------------------------------------------------
# Aggregated discovery (apidiscovery.k8s.io/v2)
# --------------------------------------------------------------------------------------------


def _kind(kind: str, res: Resource | None = None) -> JSON:
    if res is not None and res.custom is not None:
        return {"group": res.group, "version": res.version, "kind": kind}
    return {"group": "", "version": "", "kind": kind}


def _aggregated_resource(res: Resource) -> JSON:
    entry: JSON = {
        "resource": res.name,
        "responseKind": _kind(res.kind, res),
        "scope": "Namespaced" if res.namespaced else "Cluster",
        "singularResource": res.singular,
        "verbs": _verbs(res),
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    if res.categories:
        entry["categories"] = list(res.categories)
    subs = []
    if res.name == "pods":
        subs.append(
            {"subresource": "binding", "responseKind": _kind("Binding"), "verbs": ["create"]}
        )
    if res.has_status:
        subs.append(
            {
                "subresource": "status",
                "responseKind": _kind(res.kind, res),
                "verbs": ["get", "patch", "update"],
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated(core: bool, version: str = "v2", groups: Groups = GROUPS) -> JSON:
    """``/api`` (the core group) or ``/apis`` (every other group) as an APIGroupDiscoveryList."""
    if core:
        resources = [
            {
                "resource": "bindings",
                "responseKind": _kind("Binding"),
                "scope": "Namespaced",
                "singularResource": "binding",
                "verbs": ["create"],
            }
        ]
        resources += [_aggregated_resource(r) for r in RESOURCES.values()]
        resources.sort(key=lambda r: r["resource"])
        items = [
            {
                "metadata": {},
                "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}],
            }
        ]
    else:
        items = [
            {
                "metadata": {"name": group},
                "versions": [
                    {
                        "version": v,
                        "resources": sorted(
                            (_aggregated_resource(r) for r in served.values()),
                            key=lambda r: r["resource"],
                        ),
                        "freshness": "Current",
                    }
                    for v, served in versions.items()
                ],
            }
            for group, versions in groups.items()
        ]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }
