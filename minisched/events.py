"""Kubernetes Events from the scheduler: what ``kubectl describe pod`` shows under "Events".

Upstream counterpart: client-go ``tools/record`` and ``tools/events`` (EventBroadcaster,
EventRecorder.Eventf). kube-scheduler records ``Scheduled`` ("Successfully assigned ns/pod to
node") and ``FailedScheduling`` (the FitError message) this way.

As upstream, recording never blocks the scheduler: events go into a bounded buffer that one
background thread posts to the API server, and when the buffer is full an event is dropped
(client-go's broadcaster drops too, with a log line).
"""

from __future__ import annotations

import datetime
import logging
import queue
import threading
from typing import Any

from kubernetes import client

log = logging.getLogger(__name__)

BUFFER = 1000  # client-go: maxQueuedEvents
MAX_NOTE_LENGTH = 1024  # an Event's note (message) limit


def truncate_message(message: str) -> str:
    """Cut a message to the Event note limit, ending it with " ..." (upstream: truncateMessage
    in pkg/scheduler/scheduler.go)."""
    suffix = " ..."
    if len(message) > MAX_NOTE_LENGTH:
        return message[: MAX_NOTE_LENGTH - len(suffix)] + suffix
    return message


class EventRecorder:
    """Posts core/v1 Events in the background; ``eventf`` never blocks."""

    def __init__(self, api_client: client.ApiClient, component: str = "minisched") -> None:
        self.core = client.CoreV1Api(api_client)
        self.component = component
        self._events: queue.Queue[client.CoreV1Event | None] = queue.Queue(BUFFER)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # guards _thread: the first eventf starts it

    def eventf(self, obj: Any, type_: str, reason: str, action: str, message: str) -> None:
        """Record an event about ``obj`` (a pod), e.g. ``Normal Scheduled Binding ...``."""
        meta = obj.metadata
        now = datetime.datetime.now(datetime.timezone.utc)
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name=f"{meta.name}.", namespace=meta.namespace),
            involved_object=client.V1ObjectReference(
                kind="Pod",
                api_version="v1",
                name=meta.name,
                namespace=meta.namespace,
                uid=meta.uid,
                resource_version=meta.resource_version,
            ),
            type=type_,
            reason=reason,
            action=action,
            message=truncate_message(message),
            source=client.V1EventSource(component=self.component),
            reporting_component=self.component,
            first_timestamp=now,
            last_timestamp=now,
            count=1,
        )
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._post, name="events", daemon=True)
                self._thread.start()
        try:
            self._events.put_nowait(event)
        except queue.Full:
            log.warning("event buffer full, dropping %s event for %s", reason, meta.name)

    def stop(self, timeout: float = 2.0) -> None:
        """Post what is buffered (for up to ``timeout``), then end the thread."""
        with self._lock:
            thread = self._thread
        if thread is None:
            return
        try:
            self._events.put(None, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)

    def _post(self) -> None:
        while (event := self._events.get()) is not None:
            try:
                self.core.create_namespaced_event(event.metadata.namespace, event)
            except Exception as e:  # the namespace is gone, the server is down: drop it
                log.debug("could not post event %s: %s", event.reason, e)
