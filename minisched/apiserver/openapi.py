"""A minimal OpenAPI v3 document: just enough for kubectl's field-validation check.

Upstream: ``staging/src/k8s.io/kube-openapi`` serves ``/openapi/v3`` (an index of group
versions) and ``/openapi/v3/api/v1`` (the full schema of core/v1, several MiB).

Why we serve anything: before ``kubectl create``/``apply`` sends an object it checks, through
OpenAPI, whether the server validates fields itself (a PATCH operation with a ``fieldValidation``
query parameter, ``kubectl/pkg/util/openapi`` ``supportsQueryParamV3``). Without any OpenAPI
document it refuses with "failed to download openapi". This document declares that support for
our kinds and nothing more; it has no schemas, so ``kubectl apply`` computes its strategic merge
patch from the types compiled into kubectl, as it does for servers without OpenAPI v3.

Simplified: the ``fieldValidation`` parameter is accepted and ignored (unknown fields are kept).
"""

from __future__ import annotations

from typing import Any

from .registry import RESOURCES

JSON = dict[str, Any]

HASH = "minisched0"


def index() -> JSON:
    return {"paths": {"api/v1": {"serverRelativeURL": f"/openapi/v3/api/v1?hash={HASH}"}}}


def core_v1() -> JSON:
    paths: JSON = {}
    for res in RESOURCES.values():
        prefix = "/api/v1/namespaces/{namespace}/" if res.namespaced else "/api/v1/"
        paths[f"{prefix}{res.name}/{{name}}"] = {
            "patch": {
                "operationId": f"patchCoreV1{'Namespaced' if res.namespaced else ''}{res.kind}",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": res.kind},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (minisched)", "version": "v1.36.2"},
        "paths": paths,
        "components": {"schemas": {}},
    }
