"""Events the scheduler posts: what ``kubectl describe pod`` shows."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from minisched import events
from minisched.events import MAX_NOTE_LENGTH, EventRecorder, truncate_message


def test_a_long_message_is_cut_to_the_note_limit_with_an_ellipsis() -> None:
    long = "x" * (MAX_NOTE_LENGTH + 10)
    cut = truncate_message(long)
    assert len(cut) == MAX_NOTE_LENGTH and cut.endswith(" ...")
    assert truncate_message("short") == "short"
    assert truncate_message("y" * MAX_NOTE_LENGTH) == "y" * MAX_NOTE_LENGTH


def _pod(api_client: client.ApiClient, namespace: str) -> client.V1Pod:
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": namespace}})
    body = {"metadata": {"name": "pod1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    return core.create_namespaced_pod(namespace, body)


def test_an_event_is_posted_in_the_background_and_flush_waits_for_it(
    api_client: client.ApiClient,
) -> None:
    pod = _pod(api_client, "events-flush")
    recorder = EventRecorder(api_client)
    try:
        message = "Successfully assigned events-flush/pod1 to node1"
        recorder.eventf(pod, "Normal", "Scheduled", "Binding", message)
        assert recorder.flush(10)
        (event,) = client.CoreV1Api(api_client).list_namespaced_event("events-flush").items
        assert (event.type, event.reason, event.action, event.message) == (
            "Normal",
            "Scheduled",
            "Binding",
            message,
        )
        assert event.metadata.name.startswith("pod1.")
        assert (event.involved_object.kind, event.involved_object.name) == ("Pod", "pod1")
        assert event.involved_object.uid == pod.metadata.uid
        assert event.source.component == "minisched"
        assert event.count == 1 and event.first_timestamp is not None
    finally:
        recorder.stop()


class BlockingCoreV1Api:
    """Posts nothing until ``release`` is set: the API server is slow."""

    def __init__(self) -> None:
        self.entered = threading.Event()  # a post has reached the server
        self.release = threading.Event()
        self.posted: list[dict[str, Any]] = []

    def create_namespaced_event(self, namespace: str, body: dict[str, Any], **_: Any) -> Any:
        self.entered.set()
        self.release.wait(10)
        self.posted.append(body)
        return SimpleNamespace(data=b"{}")


def test_a_full_buffer_drops_events_and_never_blocks_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(events, "BUFFER", 3)
    recorder = EventRecorder(client.ApiClient())
    core = BlockingCoreV1Api()
    recorder.core = core  # type: ignore[assignment]
    pod = SimpleNamespace(
        metadata=SimpleNamespace(name="pod1", namespace="ns", uid="u", resource_version="1")
    )
    # One event is taken by the posting thread (and blocks there), three fill the buffer: of
    # ten, at least six are dropped at once, and eventf returned every time.
    for i in range(10):
        recorder.eventf(pod, "Warning", "FailedScheduling", "Scheduling", f"attempt {i}")
    assert 6 <= recorder.dropped <= 7
    assert not recorder.flush(0.05)  # the server has not answered yet
    core.release.set()
    assert recorder.flush(10)
    assert len(core.posted) == 10 - recorder.dropped
    assert core.posted[0]["message"] == "attempt 0"
    recorder.stop()


def test_stop_ends_the_thread_after_its_current_post_and_drops_the_rest() -> None:
    """Upstream's sink ends with the scheduler and its queue is discarded: a stopping scheduler
    does not wait for a backlog, and no post is still running when its client is closed."""
    recorder = EventRecorder(client.ApiClient())
    core = BlockingCoreV1Api()
    recorder.core = core  # type: ignore[assignment]
    pod = SimpleNamespace(
        metadata=SimpleNamespace(name="pod1", namespace="ns", uid="u", resource_version="1")
    )
    for i in range(3):
        recorder.eventf(pod, "Normal", "Scheduled", "Binding", f"event {i}")
    assert core.entered.wait(10)
    recorder.stop(timeout=0.1)  # the first post is still blocked in the server
    thread = recorder._thread
    assert thread is not None and thread.is_alive()
    core.release.set()
    thread.join(10)
    assert not thread.is_alive()
    assert [e["message"] for e in core.posted] == ["event 0"]


def _connections(api_client: client.ApiClient) -> int:
    """How many connections the client's urllib3 pools have opened so far."""
    pools = api_client.rest_client.pool_manager.pools
    return sum(pools[key].num_connections for key in pools.keys())


def test_events_go_through_the_official_client_on_one_kept_alive_connection(
    api_client: client.ApiClient,
) -> None:
    """Each answer is read to its end, so its connection goes back to urllib3's pool for the
    next event; one the server refuses (its namespace does not exist) is dropped, and the
    thread goes on with the next."""
    pod = _pod(api_client, "events-pool")
    gone = SimpleNamespace(
        metadata=SimpleNamespace(
            name="pod1", namespace="events-no-such-namespace", uid="u", resource_version="1"
        )
    )
    recorder = EventRecorder(api_client)
    try:
        recorder.eventf(gone, "Normal", "Scheduled", "Binding", "refused")
        for i in range(5):
            recorder.eventf(pod, "Normal", "Scheduled", "Binding", f"event {i}")
        assert recorder.flush(10)
        posted = client.CoreV1Api(api_client).list_namespaced_event("events-pool").items
        assert sorted(e.message for e in posted) == [f"event {i}" for i in range(5)]
        assert _connections(api_client) == 1
    finally:
        recorder.stop()
