"""minisched.rest: the scheduler's per-pod POSTs, sent as JSON through the official client's
connection pool."""

from __future__ import annotations

import json
import socket
import threading
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


class _Connections:
    """Stands in for the connections: keeps each request's headers, answers 201."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []

    def post(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        self.headers.append(headers)
        return 201, "Created", b"{}"


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
    pool = _Connections()
    poster = RESTClient(api_client)
    poster._connections = pool  # type: ignore[assignment]
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


# --- the connections, against a server that answers as told ----------------------------------


class _Server:
    """A loopback HTTP server whose answers are scripted: each accepted connection reads
    requests and writes the next scripted answer (raw bytes) for each; ``None`` closes the
    connection instead of answering."""

    def __init__(self, answers: list[bytes | None]) -> None:
        self.answers = list(answers)
        self.requests: list[bytes] = []
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn, conn.makefile("rb") as f:
                while self.answers:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = f.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                    self.requests.append(head + f.read(length))
                    answer = self.answers.pop(0)
                    if answer is None:
                        break
                    conn.sendall(answer)

    def close(self) -> None:
        self.listener.close()


def _ok(body: bytes = b'{"ok":1}', extra: str = "") -> bytes:
    return f"HTTP/1.1 201 Created\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


@pytest.fixture
def scripted() -> Any:
    servers: list[_Server] = []

    def start(answers: list[bytes | None]) -> tuple[_Server, RESTClient]:
        server = _Server(answers)
        servers.append(server)
        configuration = client.Configuration(host=f"http://127.0.0.1:{server.port}")
        return server, RESTClient(client.ApiClient(configuration))

    yield start
    for server in servers:
        server.close()


def test_requests_share_one_keep_alive_connection(scripted: Any) -> None:
    server, poster = scripted([_ok(b'{"n":1}'), _ok(b'{"n":2}'), _ok(b'{"n":3}')])
    answers = [json.loads(poster.post("/api/v1/namespaces/ns/events", {"i": i})) for i in range(3)]
    assert answers == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert server.connections == 1
    first = server.requests[0].decode()
    assert first.startswith("POST /api/v1/namespaces/ns/events HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}\r\n" in first
    assert "Content-Type: application/json\r\n" in first
    assert first.endswith('\r\n\r\n{"i": 0}')


def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_again(
    scripted: Any,
) -> None:
    # The second request reaches a connection the server closes without answering: it is
    # sent again, once, on a new connection.
    server, poster = scripted([_ok(), None, _ok(b'{"again":1}')])
    poster.post("/p", {})
    assert json.loads(poster.post("/p", {})) == {"again": 1}
    assert server.connections == 2
    assert len(server.requests) == 3


def test_a_new_connection_that_fails_is_not_tried_again(scripted: Any) -> None:
    server, poster = scripted([None, _ok()])
    with pytest.raises(ConnectionError):
        poster.post("/p", {})
    assert len(server.requests) == 1


def test_chunked_answers_and_answers_that_close_the_connection(scripted: Any) -> None:
    chunks = b'4\r\n{"a"\r\n3\r\n:1}\r\n0\r\n\r\n'
    chunked = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    server, poster = scripted([chunked, _ok(b'{"b":2}', "Connection: close\r\n"), _ok(b'{"c":3}')])
    assert json.loads(poster.post("/p", {})) == {"a": 1}
    assert json.loads(poster.post("/p", {})) == {"b": 2}
    assert json.loads(poster.post("/p", {})) == {"c": 3}
    assert server.connections == 2  # the second answer closed the first connection


def test_a_refusal_from_the_connection_raises_api_exception(scripted: Any) -> None:
    body = b'{"kind":"Status","reason":"Forbidden"}'
    refusal = f"HTTP/1.1 403 Forbidden\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    _, poster = scripted([refusal])
    with pytest.raises(ApiException) as refused:
        poster.post("/p", {})
    assert (refused.value.status, refused.value.reason) == (403, "Forbidden")
    assert json.loads(refused.value.body)["reason"] == "Forbidden"


def test_an_unreachable_server_raises_an_os_error() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    poster = RESTClient(client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}")))
    with pytest.raises(ConnectionRefusedError):
        poster.post("/p", {})


def test_through_a_proxy_the_post_goes_through_the_official_clients_pool() -> None:
    configuration = client.Configuration(host="https://cluster.example")
    configuration.proxy = "http://proxy.example:3128"
    assert rest.Connections.for_configuration(configuration) is None
    configuration.no_proxy = "cluster.example"
    assert rest.Connections.for_configuration(configuration) is not None
