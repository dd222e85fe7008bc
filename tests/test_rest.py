"""minisched.rest: the scheduler's per-pod POSTs, sent as JSON through the official client's
connection pool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from minisched import rest
from minisched.rest import CoreV1Api, RESTClient


def _event(name: str, namespace: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "pod1", "namespace": namespace},
        "reason": "Scheduled",
        "message": "Successfully assigned",
        "type": "Normal",
    }


def test_a_post_creates_the_object_and_returns_the_servers_answer(
    api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "rest-post"}})
    body = _event("e1", "rest-post")
    answer = json.loads(RESTClient(api_client).post("/api/v1/namespaces/rest-post/events", body))
    assert answer["kind"] == "Event" and answer["metadata"]["name"] == "e1"
    (event,) = core.list_namespaced_event("rest-post").items
    assert (event.metadata.name, event.reason) == ("e1", "Scheduled")


def test_a_refusal_raises_api_exception_with_the_status_and_its_body(
    api_client: client.ApiClient,
) -> None:
    client.CoreV1Api(api_client).create_namespace({"metadata": {"name": "rest-refused"}})
    body = _event("twice", "rest-refused")
    poster = RESTClient(api_client)
    poster.post("/api/v1/namespaces/rest-refused/events", body)
    with pytest.raises(ApiException) as refused:
        poster.post("/api/v1/namespaces/rest-refused/events", body)
    assert refused.value.status == 409
    assert json.loads(refused.value.body)["reason"] == "AlreadyExists"


class _Answer:
    status, reason, data = 201, "Created", b"{}"


class _Pool:
    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []

    def urlopen(self, method: str, url: str, **kw: Any) -> _Answer:
        self.headers.append(kw["headers"])
        return _Answer()


def test_the_credentials_are_asked_for_once_a_second_not_once_a_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(rest.time, "monotonic", lambda: now[0])
    configuration = client.Configuration(host="https://cluster.example")
    refreshes: list[int] = []

    def refresh(conf: client.Configuration) -> None:
        # As the kubeconfig loader's hook does: a new token when the old one expired.
        refreshes.append(1)
        conf.api_key["BearerToken"] = f"Bearer token-{len(refreshes)}"

    configuration.api_key["BearerToken"] = "Bearer token-0"
    configuration.refresh_api_key_hook = refresh
    api_client = client.ApiClient(configuration)
    pool = _Pool()
    api_client.rest_client.pool_manager = pool
    poster = RESTClient(api_client)
    for _ in range(3):
        poster.post("/api/v1/namespaces/ns/events", {})
    now[0] += rest.CREDENTIALS_TTL
    poster.post("/api/v1/namespaces/ns/events", {})
    assert len(refreshes) == 2
    tokens = [h["authorization"] for h in pool.headers]
    assert tokens == ["Bearer token-1"] * 3 + ["Bearer token-2"]
    assert all(h["Content-Type"] == "application/json" for h in pool.headers)


def test_the_thin_binding_binds_and_a_second_one_is_refused_as_the_official_call_is(
    api_client: client.ApiClient,
) -> None:
    official = client.CoreV1Api(api_client)
    official.create_namespace({"metadata": {"name": "rest-bind"}})
    for name in ("pod1", "pod2"):
        body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        official.create_namespaced_pod("rest-bind", body)
    thin = CoreV1Api(api_client)

    def binding(pod: str, node: str) -> client.V1Binding:
        return client.V1Binding(
            metadata=client.V1ObjectMeta(name=pod, namespace="rest-bind"),
            target=client.V1ObjectReference(kind="Node", api_version="v1", name=node),
        )

    answer = thin.create_namespaced_pod_binding(
        "pod1", "rest-bind", binding("pod1", "node1"), _preload_content=False
    )
    assert json.loads(answer.data)["status"] == "Success"
    assert official.read_namespaced_pod("pod1", "rest-bind").spec.node_name == "node1"
    refusals = []
    for api in (thin, official):
        with pytest.raises(ApiException) as refused:
            api.create_namespaced_pod_binding(
                "pod1", "rest-bind", binding("pod1", "node2"), _preload_content=False
            )
        refusals.append((refused.value.status, json.loads(refused.value.body)["message"]))
    assert refusals[0] == refusals[1]
    assert refusals[0][0] == 409


def test_a_binding_asked_for_in_any_other_way_is_the_official_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[dict[str, Any]] = []

    def official(self: Any, name: str, namespace: str, body: Any, **kwargs: Any) -> str:
        calls.append(kwargs)
        return "official"

    monkeypatch.setattr(client.CoreV1Api, "create_namespaced_pod_binding", official)
    thin = CoreV1Api(client.ApiClient(client.Configuration(host="http://unused.invalid")))
    assert thin.create_namespaced_pod_binding("p", "ns", {}, dry_run="All") == "official"
    assert thin.create_namespaced_pod_binding("p", "ns", {}) == "official"
    assert calls == [{"dry_run": "All"}, {}]
