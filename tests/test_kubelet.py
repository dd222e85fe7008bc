"""The fake kubelet (minisched/kubelet.py): a graceful delete of a pod bound to one of its
nodes finishes, and nothing else is touched.

On the embedded server; the last test does the same on a real control plane (opt-in, as
test_bench's: skipped unless ``~/.cache/realk8s/bin/kube-apiserver`` is built and
``$REALK8S_RUN`` names an instance of one's own).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from minisched.kubelet import FakeKubelet
from minisched.scenario import Scenario
from tests.apiserver_util import ServerProcess, start_server
from tests.test_bench import real_control_plane  # noqa: F401  (a fixture)

TIMEOUT = 10.0


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    proc = start_server()
    yield proc
    assert proc.stop() == 0, proc.stderr


@pytest.fixture
def api(server: ServerProcess) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=server.kubeconfig)
    yield api_client
    api_client.close()


@pytest.fixture
def scenario(api: client.ApiClient) -> Iterator[tuple[Scenario, list[str]]]:
    lines: list[str] = []
    with Scenario(api, "kubelet", say=lines.append) as s:
        yield s, lines


def bind(s: Scenario, pod: str, node: str, namespace: str | None = None) -> None:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    # The answer is a Status, which the client cannot read as a Binding: read it raw.
    response = s.core.create_namespaced_pod_binding(
        pod, namespace or s.namespace, body, _preload_content=False
    )
    assert response.status == 201, response.data


def gone(name: str) -> Any:
    return lambda pods: name not in pods


def terminating(s: Scenario, name: str, namespace: str | None = None) -> bool:
    pod = s.core.read_namespaced_pod(name, namespace or s.namespace)
    return pod.metadata.deletion_timestamp is not None


def finished(lines: list[str]) -> list[str]:
    """The pods the kubelet finished, in order, from the line it says for each."""
    prefix = "kubelet: "
    return [line.rsplit(" ", 1)[-1] for line in lines if line.startswith(prefix)]


def no_kubelet_threads() -> bool:
    return not [t for t in threading.enumerate() if t.name.startswith("fake-kubelet-")]


def test_a_bound_pod_deleted_gracefully_goes_once_the_kubelet_runs(
    scenario: tuple[Scenario, list[str]],
) -> None:
    s, lines = scenario
    s.create_node("n1")
    s.create_pod("early")
    s.create_pod("late")
    bind(s, "early", "n1")
    bind(s, "late", "n1")
    # With no kubelet, a graceful delete only marks the bound pod (Terminating).
    s.delete_pod("early", grace_period_seconds=None)
    assert terminating(s, "early")
    # The kubelet finishes the one it finds in its first list...
    s.start_kubelet()
    assert "early" not in s.wait_for(gone("early"), TIMEOUT)
    # ...and the one whose deletion it watches.
    s.delete_pod("late", grace_period_seconds=None)
    assert "late" not in s.wait_for(gone("late"), TIMEOUT)
    assert finished(lines) == ["early", "late"]
    assert lines[-4:] == [
        "scenario: deleted pod early gracefully",
        "kubelet: n1 finished terminating pod early",
        "scenario: deleted pod late gracefully",
        "kubelet: n1 finished terminating pod late",
    ]


def test_pods_on_other_nodes_or_in_other_namespaces_are_left_alone(
    scenario: tuple[Scenario, list[str]], api: client.ApiClient
) -> None:
    s, lines = scenario
    s.create_node("n1")
    for name in ("mine", "elsewhere"):
        s.create_pod(name)
    bind(s, "mine", "n1")
    bind(s, "elsewhere", "not-a-scenario-node")
    with Scenario(api, "kubelet-other", say=lambda _: None) as other:
        other.create_pod("neighbour")
        bind(other, "neighbour", "n1")  # the same node name, another namespace
        other.delete_pod("neighbour", grace_period_seconds=None)
        s.delete_pod("elsewhere", grace_period_seconds=None)
        kubelet = s.start_kubelet()
        assert kubelet.wait_for_sync(TIMEOUT)
        # The kubelet handles its namespace's events in order: once "mine", deleted last, is
        # gone, it has seen "elsewhere" and let it be. "neighbour" was terminating before its
        # first list: a kubelet that looked beyond its namespace would have found it there.
        s.delete_pod("mine", grace_period_seconds=None)
        assert "mine" not in s.wait_for(gone("mine"), TIMEOUT)
        assert terminating(s, "elsewhere")
        assert terminating(other, "neighbour", other.namespace)
        assert finished(lines) == ["mine"]


def test_an_unbound_pod_needs_no_kubelet(scenario: tuple[Scenario, list[str]]) -> None:
    s, lines = scenario
    s.create_pod("pending")
    s.delete_pod("pending", grace_period_seconds=None)
    assert "pending" not in s.wait_for(gone("pending"), TIMEOUT)
    assert lines[-1] == "scenario: deleted pod pending gracefully"


def test_a_pod_recreated_under_the_same_name_is_not_touched(
    scenario: tuple[Scenario, list[str]],
) -> None:
    """The final delete carries the UID as precondition (409 for a newer pod of that name)."""
    s, _ = scenario
    s.create_node("n1")
    s.create_pod("p")
    bind(s, "p", "n1")
    old = s.core.delete_namespaced_pod("p", s.namespace)  # graceful: the terminating pod
    assert old.metadata.deletion_timestamp is not None
    s.delete_pod("p")  # grace 0: gone; then a new pod takes the name
    s.create_pod("p")
    bind(s, "p", "n1")
    kubelet = FakeKubelet(s.api_client, namespace=s.namespace, nodes=lambda: ["n1"])
    kubelet._sync_pod(old)  # as if the old pod's update arrived late
    kubelet.stop()
    assert s.core.read_namespaced_pod("p", s.namespace).metadata.uid != old.metadata.uid


def test_stop_leaves_no_thread(api: client.ApiClient, scenario: tuple[Scenario, list[str]]) -> None:
    s, _ = scenario
    with FakeKubelet(api, namespace=s.namespace, nodes=lambda: ["n1"]) as kubelet:
        assert kubelet.wait_for_sync(TIMEOUT)
        assert not no_kubelet_threads()
    assert no_kubelet_threads()
    kubelet.stop()  # a second stop is harmless
    s.start_kubelet()
    s.cleanup()  # cleanup() stops the scenario's kubelets
    assert no_kubelet_threads()


class Records(logging.Handler):
    """Keeps log records and lets a test wait for one; ``_changed`` guards ``records``."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self._changed = threading.Condition()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        with self._changed:
            self.records.append(record)
            self._changed.notify_all()

    def wait_for(self, level: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(
                lambda: any(r.levelno >= level for r in self.records), timeout
            )


def test_a_server_that_goes_away_is_one_line_not_a_traceback() -> None:
    proc = start_server()
    api_client = config.new_client_from_config(config_file=proc.kubeconfig)
    records = Records()
    root = logging.getLogger()
    root.addHandler(records)
    urllib3_log = logging.getLogger("urllib3")
    urllib3_level = urllib3_log.level
    urllib3_log.setLevel(logging.ERROR)  # as the runner does: its retry lines are not ours
    try:
        core = client.CoreV1Api(api_client)
        ns = core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(generate_name="kubelet-gone-"))
        )
        kubelet = FakeKubelet(api_client, namespace=ns.metadata.name, nodes=lambda: ["n1"])
        kubelet.start()
        assert kubelet.wait_for_sync(TIMEOUT)
        assert proc.stop() == 0
        assert records.wait_for(logging.WARNING, TIMEOUT)  # the outage line
        # A pod's final delete while the server is away: no exception, no second line.
        kubelet._sync_pod(
            client.V1Pod(
                metadata=client.V1ObjectMeta(
                    name="p",
                    namespace=ns.metadata.name,
                    uid="0e5b7bc4-0000-4000-8000-000000000000",
                    deletion_timestamp=ns.metadata.creation_timestamp,
                ),
                spec=client.V1PodSpec(containers=[], node_name="n1"),
            )
        )
        kubelet.stop()
        assert no_kubelet_threads()
    finally:
        root.removeHandler(records)
        urllib3_log.setLevel(urllib3_level)
        api_client.close()
        proc.stop()
    assert not [r for r in records.records if r.exc_info], [r.getMessage() for r in records.records]
    warnings = [r.getMessage() for r in records.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "cannot reach the API server" in warnings[0], warnings


def test_on_a_real_control_plane(real_control_plane: str) -> None:  # noqa: F811
    api_client = config.new_client_from_config(config_file=real_control_plane)
    lines: list[str] = []
    try:
        with Scenario(api_client, "kubelet", say=lines.append) as s:
            s.create_node("n1")
            for name in ("victim", "bystander"):
                s.create_pod(name)
            bind(s, "victim", "n1")
            bind(s, "bystander", "not-a-scenario-node")
            s.delete_pod("bystander", grace_period_seconds=None)
            s.delete_pod("victim", grace_period_seconds=None)
            assert terminating(s, "victim")
            s.start_kubelet()
            assert "victim" not in s.wait_for(gone("victim"), TIMEOUT)
            assert terminating(s, "bystander")
            assert finished(lines) == ["victim"]
        assert "kubelet: n1 finished terminating pod victim" in lines
        assert no_kubelet_threads()
    finally:
        api_client.close()
