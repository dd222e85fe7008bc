"""Kubernetes Events from the scheduler: what ``kubectl describe pod`` shows under "Events".

Upstream counterpart: client-go ``tools/record`` and ``tools/events`` (EventBroadcaster,
EventRecorder.Eventf). kube-scheduler records ``Scheduled`` ("Successfully assigned ns/pod to
node") and ``FailedScheduling`` (the FitError message) this way.

As upstream, recording never blocks the scheduler: ``eventf`` puts the event into a bounded
buffer that one background thread drains, posting each to the API server (client-go: the
broadcaster's channel and its goroutine). When the buffer is full the event is dropped, as
client-go's broadcaster drops it, with a log line. ``flush`` waits until what was recorded so
far has been posted: tests use it instead of sleeping.

Each event goes through the official client's ``create_namespaced_event``. Its body is a plain
dict, the JSON the API server stores, rather than a ``CoreV1Event``: the client validates the
argument into that model anyway (pydantic), so building the model here would add nothing. The
answer is not decoded (``_preload_content=False``): only its body is read, which hands the
connection back to urllib3's pool. The thread shares the GIL with the scheduling thread, so
the CPU it spends on an event is taken from scheduling (profile: ``nox -s bench -- --profile
DIR``).

Not implemented: the EventCorrelator (client-go's aggregation of similar events into one with a
count, and its per-object spam filter). A pod retried many times gets one FailedScheduling
event per attempt here, where upstream bumps the count of one event. Nor retries: client-go
tries an event up to 12 times, about 10 s apart; here an event the server refuses is dropped
(with a debug line).
"""

from __future__ import annotations

import datetime
import logging
import queue
import threading
from typing import Any

from kubernetes import client

from .leanclient import LeanCoreV1Api

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


def _timestamp(now: datetime.datetime) -> str:
    """RFC 3339 in UTC with seconds, as the API server stores an Event's timestamps."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Posts core/v1 Events in the background; ``eventf`` never blocks.

    ``_lock`` guards ``_thread`` (the first ``eventf`` starts it), ``_stopping``, and the two
    counters that ``flush`` waits on: events accepted into the buffer, and events handled
    (posted, or failed to post) by the thread.
    """

    def __init__(self, api_client: client.ApiClient, component: str = "minisched") -> None:
        # client-go: the broadcaster's sink, EventSinkImpl, over the typed core/v1 client. Its
        # one call, create_namespaced_event, skips the generated method's validation of every
        # argument (leanclient.py): the same request, less CPU per event.
        self.core = LeanCoreV1Api(api_client)
        self.component = component
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue(BUFFER)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._handled_changed = threading.Condition(self._lock)
        self._accepted = 0
        self._handled = 0
        self._stopping = False
        self.dropped = 0

    def eventf(self, obj: Any, type_: str, reason: str, action: str, message: str) -> None:
        """Record an event about ``obj`` (a pod), e.g. ``Normal Scheduled Binding ...``."""
        meta = obj.metadata
        now = _timestamp(datetime.datetime.now(datetime.timezone.utc))
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.name}.", "namespace": meta.namespace},
            "involvedObject": {
                "kind": "Pod",
                "apiVersion": "v1",
                "name": meta.name,
                "namespace": meta.namespace,
                "uid": meta.uid,
                "resourceVersion": meta.resource_version,
            },
            "type": type_,
            "reason": reason,
            "action": action,
            "message": truncate_message(message),
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._post, name="events", daemon=True)
                self._thread.start()
            try:
                self._events.put_nowait(event)
            except queue.Full:
                self.dropped += 1
                log.warning("event buffer full, dropping %s event for %s", reason, meta.name)
                return
            self._accepted += 1

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every event recorded so far has been posted (or failed to); whether it
        happened within ``timeout`` seconds."""
        with self._lock:
            target = self._accepted
            return self._handled_changed.wait_for(lambda: self._handled >= target, timeout)

    def stop(self, timeout: float = 2.0) -> None:
        """End the thread after the event it is posting; drop what is still buffered.

        As upstream, where the sink goroutine ends with the scheduler's context and its queue
        is discarded. Waiting for the buffer to drain could outlast ``timeout`` after a burst
        (a thousand Scheduled events are seconds of requests), and the thread would then still
        be using a connection when the caller closes the client: over TLS, the process then
        died of SIGABRT as it exited (seen with step 8 against kube-apiserver).
        """
        with self._lock:
            thread = self._thread
            self._stopping = True
        if thread is None:
            return
        try:
            self._events.put_nowait(None)  # wakes a thread waiting on an empty buffer
        except queue.Full:
            pass  # the thread is busy: it sees _stopping before its next event
        thread.join(timeout)
        left = self._events.qsize()
        if left:
            log.debug("stopping: %d buffered events not posted", left)

    def _post(self) -> None:
        while (event := self._events.get()) is not None:
            with self._lock:
                if self._stopping:
                    return
            namespace = event["metadata"]["namespace"]
            try:
                response = self.core.create_namespaced_event(
                    namespace, event, _preload_content=False
                )
                _ = response.data  # read to the end: the connection goes back to the pool
            except Exception as e:  # the namespace is gone, the server is down: drop it
                log.debug("could not post event %s: %s", event["reason"], e)
            with self._lock:
                self._handled += 1
                self._handled_changed.notify_all()
