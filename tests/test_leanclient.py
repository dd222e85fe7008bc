"""minisched/leanclient.py: the binding's and the event's POSTs on kept http.client
connections answer as the official client's do, over plain HTTP and over TLS with a token;
minisched/cluster.py's token refresh runs at most once a second."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from minisched import cluster
from minisched.cluster import EmbeddedServer
from minisched.leanclient import LeanCoreV1Api


@pytest.fixture(scope="module", params=["http", "tls"])
def lean(request: pytest.FixtureRequest) -> Iterator[tuple[LeanCoreV1Api, client.CoreV1Api]]:
    args = ("--tls",) if request.param == "tls" else ()
    with EmbeddedServer(*args) as server:
        api = cluster.new_api_client(server.kubeconfig)
        lean_core = LeanCoreV1Api(api)
        assert lean_core._connections is not None  # the lean path, not the client's
        yield lean_core, client.CoreV1Api(api)
        lean_core._connections.close()
        api.close()


def pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="pause")]),
    )


def binding(name: str, node: str) -> client.V1Binding:
    return client.V1Binding(
        metadata=client.V1ObjectMeta(name=name),
        target=client.V1ObjectReference(kind="Node", api_version="v1", name=node),
    )


def test_a_binding_binds_and_answers_201(lean: Any) -> None:
    core, official = lean
    official.create_namespaced_pod("default", pod("lean-bound"))
    response = core.create_namespaced_pod_binding(
        "lean-bound", "default", binding("lean-bound", "n1"), _preload_content=False
    )
    assert response.status == 201
    assert json.loads(response.data)["kind"] == "Status"
    assert official.read_namespaced_pod("lean-bound", "default").spec.node_name == "n1"
    # The connection was kept: the next POST goes on it.
    assert len(core._connections._idle) == 1


def test_a_refused_binding_raises_the_clients_api_exception(lean: Any) -> None:
    core, official = lean
    with pytest.raises(client.ApiException) as missing:
        core.create_namespaced_pod_binding("lean-missing", "default", binding("lean-missing", "n1"))
    assert missing.value.status == 404
    assert json.loads(missing.value.body)["reason"] == "NotFound"
    official.create_namespaced_pod("default", pod("lean-twice"))
    core.create_namespaced_pod_binding("lean-twice", "default", binding("lean-twice", "n1"))
    with pytest.raises(client.ApiException) as conflict:
        core.create_namespaced_pod_binding("lean-twice", "default", binding("lean-twice", "n2"))
    assert conflict.value.status == 409
    assert "already" in json.loads(conflict.value.body)["message"]


def test_an_event_is_created(lean: Any) -> None:
    core, official = lean
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    event = {
        "metadata": {"name": "lean-event", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "Scheduled",
        "message": "lean",
        "type": "Normal",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    assert core.create_namespaced_event("default", event).status == 201
    assert official.read_namespaced_event("lean-event", "default").message == "lean"


def test_a_proxy_takes_the_clients_own_path() -> None:
    configuration = client.Configuration()
    configuration.host = "https://127.0.0.1:6443"
    configuration.proxy = "http://proxy.invalid:3128"
    assert LeanCoreV1Api(client.ApiClient(configuration))._connections is None


def test_the_token_refresh_runs_at_most_once_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(cluster.time, "monotonic", lambda: now[0])
    calls: list[Any] = []
    configuration = client.Configuration()
    configuration.refresh_api_key_hook = calls.append
    cluster.throttle_token_refresh(configuration)
    for _ in range(5):
        configuration.refresh_api_key_hook(configuration)
    assert len(calls) == 1
    now[0] += cluster.REFRESH_INTERVAL
    configuration.refresh_api_key_hook(configuration)
    assert len(calls) == 2


@pytest.mark.parametrize("tls", [False, True], ids=["http", "tls"])
def test_a_kept_connection_to_a_restarted_server_is_opened_again(tls: bool, tmp_path: Any) -> None:
    # Over TLS the server keeps its certificate across the restart (--state-dir), as a real
    # one does; a new self-signed one would fail verification, as with the official client.
    args = ("--tls", "--state-dir", str(tmp_path)) if tls else ()
    with EmbeddedServer(*args) as server:
        api = cluster.new_api_client(server.kubeconfig)
        core = LeanCoreV1Api(api)
        event = {
            "metadata": {"generateName": "lean.", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
            "reason": "Scheduled",
            "message": "before",
            "type": "Normal",
        }
        assert core.create_namespaced_event("default", event).status == 201
        assert core._connections is not None and len(core._connections._idle) == 1
        server.restart()  # the kept connection now leads nowhere
        assert core.create_namespaced_event("default", event).status == 201
        core._connections.close()
        api.close()
