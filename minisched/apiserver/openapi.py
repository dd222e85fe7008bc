"""A minimal OpenAPI v3 document: just enough for kubectl's field-validation check.

Upstream: ``staging/src/k8s.io/kube-openapi`` serves ``/openapi/v3`` (an index of group
versions) and ``/openapi/v3/api/v1`` (the full schema of core/v1, several MiB).

Why we serve anything: before ``kubectl create``/``apply`` sends an object it checks, through
OpenAPI, whether the server validates fields itself (a PATCH operation with a ``fieldValidation``
query parameter, ``kubectl/pkg/util/openapi`` ``supportsQueryParamV3``). Without any OpenAPI
document it refuses with "failed to download openapi". This document declares that support for
our kinds and nothing more; it has no schemas, so ``kubectl apply`` computes its strategic merge
patch from the types compiled into kubectl, as it does for servers without OpenAPI v3.

Simplified: the ``fieldValidation`` parameter is accepted and ignored (unknown fields are kept),
except for custom resources, whose unknown fields ``Strict`` refuses (``crd.py``).
"""

from __future__ import annotations

from typing import Any

from .registry import GROUPS, RESOURCES, Resource

JSON = dict[str, Any]
Groups = dict[str, dict[str, dict[str, Resource]]]

HASH = "minisched0"


def index(groups: Groups = GROUPS) -> JSON:
    """``/openapi/v3``: one entry per group version (custom resources' included, so kubectl
    finds its field-validation support for them too)."""
    paths = {"api/v1": {"serverRelativeURL": f"/openapi/v3/api/v1?hash={HASH}"}}
    for group, versions in groups.items():
        for version in versions:
            paths[f"apis/{group}/{version}"] = {
                "serverRelativeURL": f"/openapi/v3/apis/{group}/{version}?hash={HASH}"
            }
    return {"paths": paths}


def core_v1() -> JSON:
    return _document("", "v1", list(RESOURCES.values()))


def group_version(group: str, version: str, groups: Groups = GROUPS) -> JSON | None:
    """``/openapi/v3/apis/{group}/{version}``, or None for a group version not served."""
    served = groups.get(group, {}).get(version)
    if served is None:
        return None
    return _document(group, version, list(served.values()))


def _document(group: str, version: str, resources: list[Resource]) -> JSON:
    paths: JSON = {}
    prefix = f"/apis/{group}/{version}/" if group else "/api/v1/"
    for res in resources:
        scope = "namespaces/{namespace}/" if res.namespaced else ""
        words = "".join(w.capitalize() for w in group.split(".")[0:1]) if group else "Core"
        paths[f"{prefix}{scope}{res.name}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{words}{version.capitalize()}"
                f"{'Namespaced' if res.namespaced else ''}{res.kind}",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": group,
                    "version": version,
                    "kind": res.kind,
                },
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (minisched)", "version": "v1.36.2"},
        "paths": paths,
        "components": {"schemas": {}},
    }
