"""List+watch informers: a local cache of API objects that calls handlers on every change.

Upstream counterpart: client-go ``tools/cache`` — ``Reflector`` (reflector.go: ListAndWatch),
the thread-safe ``Store``/``Indexer`` (store.go, thread_safe_store.go), ``SharedIndexInformer``
(shared_informer.go) and ``FilteringResourceEventHandler`` (controller.go).

How it works, as in client-go:

1. **List** every object, remember the list's resourceVersion, replace the store's contents
   (calling add/update/delete handlers for the difference).
2. **Watch** from that resourceVersion. Each ADDED/MODIFIED/DELETED event updates the store,
   then calls the handlers. BOOKMARK events only advance the resourceVersion.
3. When the watch ends normally (``timeoutSeconds``), watch again from the last version.
   When the server says ``410 Gone`` (our version fell out of its history), list again.
   When the connection is lost, back off (0.8 s doubling to 30 s, as the reflector does) and
   try again; if the server came back without our history, that also ends in a relist.

Differs from upstream: client-go's reflectors log every failed list and watch (kube-scheduler
prints a ``failed to list *v1.Pod: ... connection refused`` line per informer per retry while
its API server is down). Here every informer of the process reports to one ``Outages`` log: one
warning when the server becomes unreachable, a reminder every ``OUTAGE_REMINDER`` seconds while
it stays so, and one line when it answers again.

Simplified: one thread per informer both watches and calls the handlers (client-go hands
notifications to a goroutine per listener); there are no resync periods and no indexes beyond
the ``namespace/name`` key.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubernetes.client import V1ObjectMeta
from kubernetes.client.exceptions import ApiException
from pydantic import BaseModel, ConfigDict

from .cluster import connection_error_reason, is_connection_error

log = logging.getLogger(__name__)
# The outage lines have a logger of their own, so the runner (which reports a server that went
# away in a line of its own) can leave them out.
CONNECTION_LOGGER = f"{__name__}.connection"
connection_log = logging.getLogger(CONNECTION_LOGGER)

T = TypeVar("T")

# client-go reflector: backoff 800ms initial, 30s cap; watch timeout 5..10 minutes.
INITIAL_BACKOFF = 0.8
MAX_BACKOFF = 30.0
MIN_WATCH_TIMEOUT = 300

# While the API server stays unreachable, the outage warning is repeated this often (seconds).
OUTAGE_REMINDER = 60.0


def meta_namespace_key(obj: Any) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (cache.MetaNamespaceKeyFunc)."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


@dataclass
class DeletedFinalStateUnknown:
    """Passed to delete handlers when a relist found an object gone without seeing its DELETE
    event; ``obj`` is the last state the cache knew (client-go: cache.DeletedFinalStateUnknown)."""

    key: str
    obj: Any


class Store(Generic[T]):
    """A thread-safe map from ``namespace/name`` to the latest object (cache.ThreadSafeStore).

    ``_lock`` guards ``_items``; readers get a snapshot list, never the live dict. It is a
    Condition so that ``wait_until`` can sleep until a change instead of polling.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._items: dict[str, T] = {}

    def list(self) -> list[T]:
        with self._lock:
            return list(self._items.values())

    def get_by_key(self, key: str) -> T | None:
        with self._lock:
            return self._items.get(key)

    def list_keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def wait_until(self, predicate: Callable[[dict[str, T]], bool], timeout: float) -> bool:
        """Block until ``predicate(items)`` holds (checked after every change) or time runs out."""
        with self._lock:
            return self._lock.wait_for(lambda: predicate(self._items), timeout)

    def _set(self, key: str, obj: T) -> T | None:
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._lock.notify_all()
            return old

    def _pop(self, key: str) -> T | None:
        with self._lock:
            self._lock.notify_all()
            return self._items.pop(key, None)

    def _replace(self, items: dict[str, T]) -> dict[str, T]:
        with self._lock:
            old, self._items = self._items, dict(items)
            self._lock.notify_all()
            return old


@dataclass
class ResourceEventHandler:
    """Callbacks for one consumer (cache.ResourceEventHandlerFuncs); any may be left out."""

    on_add: Callable[[Any], None] | None = None
    on_update: Callable[[Any, Any], None] | None = None
    on_delete: Callable[[Any], None] | None = None

    def add(self, obj: Any) -> None:
        if self.on_add:
            self.on_add(obj)

    def update(self, old: Any, new: Any) -> None:
        if self.on_update:
            self.on_update(old, new)

    def delete(self, obj: Any) -> None:
        if self.on_delete:
            self.on_delete(obj)


class FilteringResourceEventHandler(ResourceEventHandler):
    """Passes on only objects that match ``filter`` (cache.FilteringResourceEventHandler).

    An update that makes an object start matching arrives as an add, and one that makes it stop
    matching arrives as a delete. That is how the scheduler sees a pod leave its queue's view the
    moment it is bound. A DeletedFinalStateUnknown tombstone is judged by its last known object.

    Simplified: client-go hands the tombstone itself to the filter, and kube-scheduler's
    assigned-pod filter lets every pod tombstone through, since the last known object may be
    stale (a pod bound, then deleted, while the watch was down). Here such a pod, last seen
    unassigned, reaches the unassigned-pod handler's delete instead, and no AssignedPodDelete
    move happens; the periodic flush retries the pods it would have moved.
    """

    def __init__(self, filter: Callable[[Any], bool], handler: ResourceEventHandler) -> None:
        super().__init__()
        self.filter = filter
        self.handler = handler

    def add(self, obj: Any) -> None:
        if self.filter(obj):
            self.handler.add(obj)

    def update(self, old: Any, new: Any) -> None:
        was, now = self.filter(old), self.filter(new)
        if was and now:
            self.handler.update(old, new)
        elif now:
            self.handler.add(new)
        elif was:
            self.handler.delete(old)

    def delete(self, obj: Any) -> None:
        last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if self.filter(last):
            self.handler.delete(obj)


class Outages:
    """Which API servers the informers cannot reach now, so that an outage is logged once for
    all of them rather than once per informer per retry.

    ``_lock`` guards ``_down``: host -> [when the outage began, when it was last logged].
    ``now`` is the clock (tests pass a fake one).
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._down: dict[str, list[float]] = {}
        self._now = now

    def failed(self, host: str, error: BaseException) -> None:
        """An informer could not list or watch: warn if this starts an outage, or is due."""
        now = self._now()
        with self._lock:
            outage = self._down.get(host)
            if outage is None:
                self._down[host] = [now, now]
                message = "cannot reach the API server at %s (%s); retrying until it answers"
                args: tuple[Any, ...] = (host, connection_error_reason(error))
            elif now - outage[1] >= OUTAGE_REMINDER:
                outage[1] = now
                message = "still cannot reach the API server at %s after %.0f s (%s); retrying"
                args = (host, now - outage[0], connection_error_reason(error))
            else:
                return
        connection_log.warning(message, *args)

    def answered(self, host: str) -> None:
        """An informer listed or watched again: if that ends an outage, say so."""
        with self._lock:
            outage = self._down.pop(host, None)
        if outage is not None:
            connection_log.info(
                "the API server at %s answers again (after %.0f s)", host, self._now() - outage[0]
            )


# Every informer of the process shares this one.
OUTAGES = Outages()


def _host_of(list_func: Callable[..., Any]) -> str:
    """The API server a list call of the official client goes to (``CoreV1Api.list_node``:
    its ``api_client.configuration.host``), also through a ``functools.partial``."""
    bound = getattr(list_func, "func", list_func)
    api = getattr(getattr(bound, "__self__", None), "api_client", None)
    return getattr(getattr(api, "configuration", None), "host", None) or "(unknown)"


class Informer(Generic[T]):
    """A reflector, its store and its handlers for one resource.

    ``list_func`` is a list call of the official client, e.g. ``CoreV1Api.list_node`` or
    ``CoreV1Api.list_pod_for_all_namespaces``; the same call with ``watch=True`` opens the watch.
    ``item_type`` is the model of one item (``V1Node``, ``V1Pod``).
    """

    def __init__(
        self,
        list_func: Callable[..., Any],
        item_type: type[T],
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        rng: random.Random | None = None,
        outages: Outages | None = None,
    ) -> None:
        self.list_func = list_func
        self.item_type = item_type
        self.name = item_type.__name__
        self.host = _host_of(list_func)
        self._outages = outages or OUTAGES
        self.selectors = {
            k: v
            for k, v in (("label_selector", label_selector), ("field_selector", field_selector))
            if v
        }
        self.store: Store[T] = Store()
        self._handlers: list[ResourceEventHandler] = []
        self._rng = rng or random.Random()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None
        # _resp_lock guards _resp, the open watch response, so stop() can cut it from outside.
        self._resp_lock = threading.Lock()
        self._resp: Any = None
        self.last_sync_resource_version = ""

    # --- the public surface -------------------------------------------------------------

    def add_event_handler(self, handler: ResourceEventHandler) -> None:
        """Register before ``start()``; handlers are called in registration order."""
        self._handlers.append(handler)

    def start(self) -> None:
        thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)
        thread.start()
        # Set once started: a stop() from another thread in between joins nothing (and the
        # loop, seeing _stop, ends at once) instead of joining a thread not yet started.
        self._thread = thread

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Block until the first list has been delivered (cache.WaitForCacheSync)."""
        return self._synced.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching, interrupting a blocked read, and wait for the thread to end."""
        self._stop.set()
        self._cut_watch()
        if self._thread and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # --- the reflector loop -------------------------------------------------------------

    def _run(self) -> None:
        backoff = INITIAL_BACKOFF
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                need_list = self._watch()
                backoff = INITIAL_BACKOFF
            except ApiException as e:
                # The server answered with an error (e.g. it restarted without our history):
                # start over with a full list, after a pause.
                log.warning("%s informer: %s %s; relisting", self.name, e.status, e.reason)
                need_list = True
                backoff = self._pause(backoff)
            except Exception as e:  # connection refused, reset, truncated stream...
                if self._stop.is_set():
                    break
                if is_connection_error(e):
                    self._outages.failed(self.host, e)
                else:
                    log.warning("%s informer: watch failed (%s); retrying", self.name, e)
                backoff = self._pause(backoff)

    def _pause(self, backoff: float) -> float:
        """Wait ``backoff`` seconds (or until stopped) and return the next backoff."""
        self._stop.wait(backoff * (1 + 0.2 * self._rng.random()))
        return min(backoff * 2, MAX_BACKOFF)

    def _list(self) -> None:
        # The body is read as JSON and each item decoded on its own (decode), as watch events
        # are: the typed list would build every item through the client's from_dict, three
        # times slower, and keep their managedFields.
        resp = self.list_func(_preload_content=False, **self.selectors)
        body = json.loads(resp.data)
        self._outages.answered(self.host)
        items = {}
        for raw in body.get("items") or []:
            obj = decode(self.item_type, raw)
            items[meta_namespace_key(obj)] = obj
        old = self.store._replace(items)
        self.last_sync_resource_version = (body.get("metadata") or {}).get("resourceVersion", "")
        # Like DeltaFIFO.Replace: present objects are adds or updates, missing ones deletes.
        for key, obj in items.items():
            if key in old:
                self._notify("update", old[key], obj)
            else:
                self._notify("add", obj)
        for key, gone in old.items():
            if key not in items:
                self._notify("delete", DeletedFinalStateUnknown(key, gone))
        self._synced.set()

    def _watch(self) -> bool:
        """Watch from the last resourceVersion until the stream ends. True means: relist."""
        timeout = MIN_WATCH_TIMEOUT + int(self._rng.random() * MIN_WATCH_TIMEOUT)
        resp = self.list_func(
            watch=True,
            resource_version=self.last_sync_resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _preload_content=False,
            _request_timeout=(10, timeout + 30),
            **self.selectors,
        )
        self._outages.answered(self.host)
        with self._resp_lock:
            self._resp = resp
        started, events, read_to_end = time.monotonic(), 0, False
        try:
            if self._stop.is_set():
                return False
            for event in _json_lines(resp):
                if self._stop.is_set():
                    return False
                events += 1
                if self._handle(event):
                    return True
            read_to_end = True
            # client-go: a watch that closes within a second without a single event means
            # something is wrong on the server side; start over with a list.
            return events == 0 and time.monotonic() - started < 1.0
        finally:
            with self._resp_lock:
                self._resp = None
            if not read_to_end:
                # The rest of the stream is still on the connection: handed back to the pool
                # as it is, the next request on it would read this watch's events (or block).
                resp.close()
            resp.release_conn()

    def _handle(self, event: dict[str, Any]) -> bool:
        """Apply one watch event; True when the watch must end in a relist (410 Gone)."""
        kind, raw = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            code = raw.get("code")
            log.info("%s informer: watch error %s: %s", self.name, code, raw.get("message"))
            if code == 410:
                return True
            raise ApiException(status=code, reason=raw.get("reason"))
        rv = (raw.get("metadata") or {}).get("resourceVersion", "")
        if kind == "BOOKMARK":
            self.last_sync_resource_version = rv or self.last_sync_resource_version
            return False
        obj = decode(self.item_type, raw)
        key = meta_namespace_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store._set(key, obj)
            if old is None:
                self._notify("add", obj)
            else:
                self._notify("update", old, obj)
        elif kind == "DELETED":
            self.store._pop(key)
            self._notify("delete", obj)
        self.last_sync_resource_version = rv
        return False

    def _notify(self, what: str, *args: Any) -> None:
        for handler in self._handlers:
            try:
                getattr(handler, what)(*args)
            except Exception:
                # A handler bug must not kill the informer (client-go: HandleCrash).
                log.exception("%s informer: %s handler failed", self.name, what)

    def _cut_watch(self) -> None:
        with self._resp_lock:
            resp = self._resp
        if resp is not None:
            try:
                resp.shutdown()  # urllib3 >= 2.3: unblocks a read in another thread
            except Exception:
                log.debug("%s informer: shutdown of the watch response failed", self.name)


class Unstructured(BaseModel):
    """An object of any kind, custom resources included: its metadata typed, every other field
    as the JSON gave it (upstream: unstructured.Unstructured, what the dynamic client and its
    informers hand out). ``Informer(partial(CustomObjectsApi(...).list_cluster_custom_object,
    group, version, plural), Unstructured)`` watches any resource."""

    model_config = ConfigDict(extra="allow")

    metadata: V1ObjectMeta


def decode(item_type: type[T], raw: dict[str, Any]) -> T:
    """One object of a list or a watch event as its client model, without its managedFields.

    Differs from v1.23: kube-scheduler drops the pods' managedFields as they enter its cache
    since v1.28 (kubernetes#119556, working again since kubernetes#137473); here every
    informer drops them. The scheduler never reads them, and with them each object is two to
    three times as many Python objects: more memory, and a cycle that walks thousands of nodes
    finds fewer of them in the CPU's cache.

    ``model_validate`` reads the API's JSON names as the client's ``from_dict`` does, at a
    third of its cost (16 against 50 us for a pod).
    """
    metadata = raw.get("metadata")
    if metadata:
        metadata.pop("managedFields", None)
    return item_type.model_validate(raw)  # type: ignore[attr-defined,no-any-return]


def _json_lines(resp: Any) -> Iterator[dict[str, Any]]:
    """The events of a watch response: one JSON object per line, possibly split across chunks."""
    buffer = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)
    if buffer.strip():
        yield json.loads(buffer)
