"""A thin REST client for the requests the scheduler makes once per pod.

Upstream counterpart: client-go's ``rest.RESTClient`` (``Post().Namespace().Resource().Body()
.Do()``), which its typed clients wrap at almost no cost.

The official Python client's typed calls are not thin: each one validates its arguments with
pydantic, asks the kubeconfig loader for the credentials again (its hook re-reads the proxy
settings from the environment on every request), serializes the body through the models, and
goes through urllib3's request helpers. That is about 0.6-0.75 ms of CPU per request, against
0.4-0.5 ms for the same POST sent here, measured against kube-apiserver v1.36.2 over TLS; and
it is CPU the request's thread takes from the scheduling cycle, since every thread shares the
GIL. ``RESTClient`` sends a JSON body through the same ``ApiClient``'s connection pool (so the
same TLS settings, client certificates and proxy), with the same authorization header.

Simplified: only POST with a JSON body; anything else goes through the official client.
``CoreV1Api`` is the official client with the pod binding sent this way; the events
(minisched/events.py) are posted with ``RESTClient`` itself.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import quote

from kubernetes import client
from kubernetes.client.exceptions import ApiException

# How long the credentials read from the client's configuration are reused (seconds). The
# kubeconfig loader's hook refreshes a token that expires (exec plugins, OIDC) when it is
# asked; asking once a second instead of once a request keeps that working.
CREDENTIALS_TTL = 1.0


class RESTClient:
    """POSTs JSON bodies to the API server of an official ``ApiClient``.

    ``_lock`` guards the cached credentials, ``_auth`` and ``_auth_at``: the event thread and
    the binding threads post at the same time.
    """

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self._lock = threading.Lock()
        self._auth: dict[str, str] = {}
        self._auth_at = float("-inf")

    def post(self, path: str, body: Any) -> bytes:
        """POST ``body`` as JSON to ``path`` (``/api/v1/namespaces/ns/events``); the response
        body. An answer that is not 2xx raises ``ApiException`` with its status and body, as
        the official client does."""
        configuration = self.api_client.configuration
        headers = {
            **self.api_client.default_headers,
            "Content-Type": "application/json",
            "Accept": "application/json",
            **self._credentials(),
        }
        response = self.api_client.rest_client.pool_manager.urlopen(
            "POST",
            configuration.host + path,
            body=json.dumps(body).encode(),
            headers=headers,
            preload_content=False,
        )
        data: bytes = response.data  # reading the whole body releases the connection
        if not 200 <= response.status <= 299:
            error = ApiException(status=response.status, reason=response.reason)
            error.body = data.decode(errors="replace")
            raise error
        return data

    def _credentials(self) -> dict[str, str]:
        """The authorization header of the client's configuration, refreshed at most once per
        ``CREDENTIALS_TTL``."""
        now = time.monotonic()
        with self._lock:
            if now - self._auth_at >= CREDENTIALS_TTL:
                settings = self.api_client.configuration.auth_settings()
                self._auth = {
                    s["key"]: s["value"]
                    for s in settings.values()
                    if s.get("in") == "header" and s.get("value")
                }
                self._auth_at = now
            return self._auth


class CoreV1Api(client.CoreV1Api):
    """The official core/v1 client, with the call the scheduler makes for every pod sent thin.

    ``create_namespaced_pod_binding(name, namespace, body, _preload_content=False)``, the way
    the steps bind, answers as the official call does (a response whose ``data`` is the body;
    ``ApiException`` when the server refuses) but posts through ``RESTClient``. Every other
    call, and a binding asked for in any other way, goes through the official client.
    """

    def __init__(self, api_client: client.ApiClient | None = None) -> None:
        super().__init__(api_client)
        self.rest = RESTClient(self.api_client)

    def create_namespaced_pod_binding(  # type: ignore[override]
        self, name: str, namespace: str, body: Any, **kwargs: Any
    ) -> Any:
        if kwargs != {"_preload_content": False}:
            return super().create_namespaced_pod_binding(name, namespace, body, **kwargs)
        path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}/binding"
        return _Response(self.rest.post(path, self.api_client.sanitize_for_serialization(body)))


class _Response:
    """What ``_preload_content=False`` answers: the body, already read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
