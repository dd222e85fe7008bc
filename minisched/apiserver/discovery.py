"""Discovery documents: ``/api``, ``/api/v1``, ``/apis`` and ``/version``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/endpoints/discovery`` (``legacy.go``, ``root.go``,
``version.go``) and ``staging/src/k8s.io/apimachinery/pkg/version`` (``Info``).

Simplified: only the legacy (unaggregated) discovery format is served. kubectl asks for the
aggregated ``APIGroupDiscoveryList`` first, sees a plain ``application/json`` answer and falls
back to the legacy documents, which is what it does against older servers too.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

from .registry import RESOURCES

JSON = dict[str, Any]

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


def api_groups() -> JSON:
    """No API groups are served: only the core group (``/api/v1``) exists here."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}


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
