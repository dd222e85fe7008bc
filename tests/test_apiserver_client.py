"""The unmodified official ``kubernetes`` client (37.x) against the embedded API server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.apiserver_util import ServerProcess, start_server


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    proc = start_server("--watch-history", "50")
    yield proc
    assert proc.stop() == 0, proc.stderr


@pytest.fixture(scope="module")
def core(server: ServerProcess) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(config_file=server.kubeconfig)
    yield client.CoreV1Api(api_client)
    api_client.close()


def make_pod(name: str, **labels: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or None),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="c", image="registry.k8s.io/pause:3.9")],
            scheduler_name="minisched",
        ),
    )


def bind(core: client.CoreV1Api, ns: str, name: str, node: str) -> tuple[int, dict[str, Any]]:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    response = core.create_namespaced_pod_binding(name, ns, body, _preload_content=False)
    return response.status, json.loads(response.data)


@pytest.fixture()
def namespace(core: client.CoreV1Api, request: pytest.FixtureRequest) -> str:
    name = "client-" + request.node.name.replace("_", "-")[:40].lower().strip("-")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def test_create_get_list_patch_delete(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_pod(namespace, make_pod("a", app="web"))
    assert created.spec.scheduler_name == "minisched"
    assert created.status.phase == "Pending"
    core.create_namespaced_pod(namespace, make_pod("b", app="db"))
    got = core.read_namespaced_pod("a", namespace)
    assert got.metadata.uid == created.metadata.uid
    web = core.list_namespaced_pod(namespace, label_selector="app=web")
    assert [p.metadata.name for p in web.items] == ["a"]
    pending = core.list_pod_for_all_namespaces(
        field_selector=f"metadata.namespace={namespace},spec.nodeName="
    )
    assert [p.metadata.name for p in pending.items] == ["a", "b"]
    patched = core.patch_namespaced_pod("a", namespace, {"metadata": {"labels": {"x": "1"}}})
    assert patched.metadata.labels == {"app": "web", "x": "1"}
    deleted = core.delete_namespaced_pod("a", namespace, grace_period_seconds=0)
    assert deleted.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("a", namespace)
    assert exc.value.status == 404
    # The client declares V1Status for deletecollection; the server answers the deleted list.
    remaining = core.delete_collection_namespaced_pod(namespace, _preload_content=False)
    assert [p["metadata"]["name"] for p in json.loads(remaining.data)["items"]] == ["b"]
    assert core.list_namespaced_pod(namespace).items == []


def test_update_conflict(core: client.CoreV1Api, namespace: str) -> None:
    pod = core.create_namespaced_pod(namespace, make_pod("p"))
    core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"a": "1"}}})
    pod.metadata.labels = {"b": "2"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_pod("p", namespace, pod)
    assert exc.value.status == 409
    assert json.loads(exc.value.body)["reason"] == "Conflict"


def test_bind_sets_node_and_condition(core: client.CoreV1Api, namespace: str) -> None:
    # No Node n1 exists: binding does not check nodes, as upstream.
    core.create_namespaced_pod(namespace, make_pod("p"))
    status, body = bind(core, namespace, "p", "n1")
    assert status == 201 and body["status"] == "Success" and body["code"] == 201
    pod = core.read_namespaced_pod("p", namespace)
    assert pod.spec.node_name == "n1"
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    with pytest.raises(ApiException) as exc:
        bind(core, namespace, "p", "n2")
    assert exc.value.status == 409


def test_nodes_and_status_patch(core: client.CoreV1Api) -> None:
    node = client.V1Node(
        metadata=client.V1ObjectMeta(name="client-node", labels={"zone": "a"}),
        spec=client.V1NodeSpec(unschedulable=True),
        status=client.V1NodeStatus(capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}),
    )
    created = core.create_node(node)
    assert created.status.allocatable == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    core.patch_node_status(
        "client-node", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    )
    got = core.read_node("client-node")
    assert [c.type for c in got.status.conditions] == ["Ready"]
    listed = core.list_node(field_selector="spec.unschedulable=true", label_selector="zone=a")
    assert [n.metadata.name for n in listed.items] == ["client-node"]
    answer = core.delete_node("client-node", _preload_content=False)
    assert json.loads(answer.data)["status"] == "Success"


def collect(
    core: client.CoreV1Api, namespace: str, resource_version: str, stop_after: int
) -> tuple[list[tuple[str, Any]], threading.Event]:
    """Watch in a thread; returns the shared event list and an Event set when done."""
    events: list[tuple[str, Any]] = []
    done = threading.Event()
    started = threading.Event()

    def run() -> None:
        w = watch.Watch()
        stream = w.stream(
            core.list_namespaced_pod,
            namespace,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=10,
        )
        started.set()
        try:
            for ev in stream:
                events.append((ev["type"], ev["object"]))
                if len([e for e in events if e[0] != "BOOKMARK"]) >= stop_after:
                    w.stop()
        except ApiException as exc:
            events.append(("EXCEPTION", exc.status))
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    started.wait(5)
    return events, done


def test_watch_through_the_client(core: client.CoreV1Api, namespace: str) -> None:
    rv = core.list_namespaced_pod(namespace).metadata.resource_version
    events, done = collect(core, namespace, rv, stop_after=4)
    core.create_namespaced_pod(namespace, make_pod("p"))
    bind(core, namespace, "p", "n1")
    core.delete_namespaced_pod("p", namespace, grace_period_seconds=0)
    assert done.wait(10)
    kinds = [t for t, _ in events if t != "BOOKMARK"]
    assert kinds == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert events[1][1].spec.node_name == "n1"


def test_watch_too_old_is_410(core: client.CoreV1Api, namespace: str) -> None:
    old = core.list_namespaced_pod(namespace).metadata.resource_version
    for i in range(60):  # more than --watch-history 50
        core.create_namespaced_pod(namespace, make_pod(f"p{i}"))
    events, done = collect(core, namespace, old, stop_after=1)
    assert done.wait(10)
    # The client turns the ERROR event carrying a 410 Status into an ApiException.
    assert events[-1] == ("EXCEPTION", 410) or (
        events[-1][0] == "ERROR" and events[-1][1]["code"] == 410
    )


def test_an_extended_resource_request_needs_its_limit(
    core: client.CoreV1Api, namespace: str
) -> None:
    """As kube-apiserver: an extended resource cannot be overcommitted, so a request of one
    without its limit is refused (422, the real server's message); with the limit it is taken,
    and a native resource (cpu) needs none."""
    pod = make_pod("gpu")
    pod.spec.containers[0].resources = client.V1ResourceRequirements(
        requests={"cpu": "1", "example.com/fast-disk": "1"}
    )
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod(namespace, pod)
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: Limit must be set for non overcommitable resources",
            "field": "spec.containers[0].resources.limits",
        }
    ]
    pod.spec.containers[0].resources.limits = {"example.com/fast-disk": "1"}
    assert core.create_namespaced_pod(namespace, pod).metadata.name == "gpu"
