"""The two writes a scheduler makes per pod (its binding and its event), through the official
client's own request path without the generated method's per-call work.

Upstream counterpart: client-go's REST client, under the typed clientset
(``clientset.CoreV1().Pods(ns).Bind``, the events sink's ``Create``).

The generated ``CoreV1Api`` methods validate every argument with pydantic (``validate_call``),
turn a model into a dict, then call ``ApiClient.param_serialize`` and ``ApiClient.call_api``.
``LeanCoreV1Api`` keeps the last two, the same URL, headers, authentication, TLS and
connection pool, and skips the first: the body is already a dict, or a model whose dict the
client's own ``sanitize_for_serialization`` makes. The answer comes back as
``_preload_content=False`` gives it (a urllib3 response; ``.data`` reads it); a status outside
2xx raises the same ``ApiException``. Every other method is CoreV1Api's.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from kubernetes import client
from kubernetes.client.exceptions import ApiException

_JSON_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}


class LeanCoreV1Api(client.CoreV1Api):
    """CoreV1Api whose ``create_namespaced_pod_binding`` and ``create_namespaced_event`` skip
    the per-call validation."""

    def create_namespaced_pod_binding(  # type: ignore[override]
        self, name: str, namespace: str, body: Any, **_: Any
    ) -> Any:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/binding"
        return self._post(path, body)

    def create_namespaced_event(  # type: ignore[override]
        self, namespace: str, body: Any, **_: Any
    ) -> Any:
        return self._post(f"/api/v1/namespaces/{quote(namespace, safe='')}/events", body)

    def _post(self, path: str, body: Any) -> Any:
        api = self.api_client
        if not isinstance(body, dict):
            body = api.sanitize_for_serialization(body)
        method, url, headers, body, post_params = api.param_serialize(
            method="POST",
            resource_path=path,
            header_params=dict(_JSON_HEADERS),
            body=body,
            auth_settings=["BearerToken"],
        )
        response = api.call_api(method, url, headers, body, post_params)
        if not 200 <= response.status <= 299:
            response.read()
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response
