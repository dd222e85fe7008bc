"""The object store: one resourceVersion counter, a bounded watch history and watch fan-out.

Upstream: etcd3 storage (``staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go``: one
revision counter for everything, ``GuaranteedUpdate`` with a resourceVersion precondition) and
the watch cache (``staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go`` and
``watch_cache.go``: a bounded window of recent events, "too old resource version" below it,
per-watcher buffered channels, watchers that cannot keep up are terminated).

Concurrency: the store is owned by the server's asyncio event loop. Every method is called on
that loop's thread and none of them awaits, so each call is atomic with respect to every other
request: the event loop *is* the lock. (That is why there are no ``threading.Lock`` objects
here; calling the store from another thread is a bug.) A watcher's queue is filled
synchronously by writers and drained asynchronously by the watch handler; a full queue never
blocks a writer: the watcher is ended instead and its client relists, as the real cacher does.

Objects are plain JSON dicts. A stored object is never modified after it is committed (writers
commit a fresh copy), so the same dict may be shared by the store, the history and every
watcher without copying.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .selectors import Selector

JSON = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"


def clone(obj: JSON) -> JSON:
    """A deep copy of a JSON document (json round-trip: faster than copy.deepcopy)."""
    return json.loads(json.dumps(obj))


def key_of(obj: JSON) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


@dataclass
class Event:
    """One committed change. ``obj`` is the object after the change (for DELETED: the last
    state, carrying the deletion's resourceVersion); ``prev`` the object before it."""

    rv: int
    type: str
    resource: str
    obj: JSON
    prev: JSON | None
    # Encoded watch lines, shared by every watcher that sends the same (type, object).
    _lines: dict[tuple[str, bool], bytes] = field(default_factory=dict)

    def payload(self, use_prev: bool = False) -> JSON:
        """The object a watcher is sent: the new state, or the previous one stamped with this
        event's resourceVersion (so a client's last-seen version still moves forward, as the
        cacher does for an object leaving a watch's selection)."""
        if not use_prev or self.prev is None:
            return self.obj
        meta = {**self.prev["metadata"], "resourceVersion": str(self.rv)}
        return {**self.prev, "metadata": meta}

    def line(self, event_type: str, use_prev: bool = False) -> bytes:
        """The encoded watch line, computed once and shared by every watcher sending it."""
        cached = self._lines.get((event_type, use_prev))
        if cached is None:
            cached = encode_event(event_type, self.payload(use_prev))
            self._lines[(event_type, use_prev)] = cached
        return cached


def encode_event(event_type: str, obj: JSON | None) -> bytes:
    return dumps({"type": event_type, "object": obj}) + b"\n"


def dumps(doc: Any) -> bytes:
    """Compact JSON, ASCII only (any string survives), never NaN or Infinity."""
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()


class Watcher:
    """One open watch: what it selects and a bounded queue of the events to send it."""

    def __init__(
        self, resource: str, namespace: str | None, selector: Selector, limit: int
    ) -> None:
        self.resource = resource
        self.namespace = namespace  # None: all namespaces
        self.selector = selector
        self.limit = limit
        # Guarded by the event loop (see module docstring): writers append, the handler pops.
        self._items: deque[tuple[Event, str, bool]] = deque()
        self._wakeup = asyncio.Event()
        self.ended = False  # set when the queue overflowed or the server shuts down
        self.end_reason = ""
        # Events at or below this version are not sent (a watch from a future version waits).
        self.min_rv = 0

    def select(self, ev: Event) -> tuple[str, bool] | None:
        """Which event this watcher sees for ``ev``: (type, use_prev) or None.

        An object entering the selection is ADDED, one leaving it DELETED (showing its previous
        state), as in upstream's ``cacheWatcher.convertToWatchEvent``.
        """
        if self.namespace is not None and key_of(ev.obj)[0] != self.namespace:
            return None
        if self.selector.empty:
            return (ev.type, False)
        now = self.selector.matches(ev.obj)
        if ev.type == ADDED:
            return (ADDED, False) if now else None
        if ev.type == DELETED:
            return (DELETED, False) if now else None
        before = ev.prev is not None and self.selector.matches(ev.prev)
        if now and before:
            return (MODIFIED, False)
        if now:
            return (ADDED, False)
        if before:
            return (DELETED, True)
        return None

    def offer(self, ev: Event, event_type: str, use_prev: bool) -> bool:
        if self.ended:
            return False
        if ev.rv <= self.min_rv:
            return True
        if len(self._items) >= self.limit:
            self.end("watcher too slow: its queue is full")
            return False
        self._items.append((ev, event_type, use_prev))
        self._wakeup.set()
        return True

    def end(self, reason: str) -> None:
        self.ended = True
        self.end_reason = reason
        self._wakeup.set()

    def pending(self) -> int:
        return len(self._items)

    def take_all(self) -> list[tuple[Event, str, bool]]:
        items = list(self._items)
        self._items.clear()
        self._wakeup.clear()
        return items

    async def wait(self, timeout: float) -> None:
        """Wait until something is queued, the watcher ended, or ``timeout`` passed."""
        if self._items or self.ended:
            return
        try:
            await asyncio.wait_for(self._wakeup.wait(), timeout)
        except asyncio.TimeoutError:
            pass


class Expired(Exception):
    """A watch or list from a resourceVersion older than the kept history (HTTP 410)."""


@dataclass
class ResourceState:
    objects: dict[Key, JSON] = field(default_factory=dict)
    watchers: set[Watcher] = field(default_factory=set)
    last_rv: int = 0  # the resourceVersion of the last change (what served CRDs are built from)


class Store:
    """Versioned objects of every resource, a history of recent events, and the open watches."""

    def __init__(
        self, watch_history: int = 5000, watcher_queue: int = 2000, journal: str | None = None
    ) -> None:
        if watch_history < 1:
            raise ValueError("watch_history must be at least 1")
        self.rv = 0
        self._resources: dict[str, ResourceState] = {}
        self.history: deque[Event] = deque(maxlen=watch_history)
        # Every event with rv > history_start is still in self.history.
        self.history_start = 0
        self.watcher_queue = watcher_queue
        self._journal_fd: int | None = None
        if journal is not None:
            self._open_journal(journal)

    # ---- persistence (optional) -------------------------------------------------------------

    def _open_journal(self, path: str) -> None:
        """Load the objects and resourceVersion a previous run left in ``path``, rewrite the
        file as a snapshot of them, and append every later change to it.

        Like a real API server restarting on etcd: objects and resourceVersions survive, the
        watch history does not (a watch from before the restart gets 410 and relists).
        Each change is one ``write`` to an O_APPEND file before the client gets its answer, so
        a killed process loses nothing it acknowledged (no fsync: a machine crash may).
        """
        if os.path.exists(path):
            with open(path, "rb") as f:
                for raw in f:
                    try:
                        entry = json.loads(raw)
                    except ValueError:
                        break  # a line torn by a crash: everything before it is intact
                    self.rv = max(self.rv, int(entry["rv"]))
                    if entry["type"] == "RV":
                        continue
                    state = self._state(entry["resource"])
                    state.last_rv = int(entry["rv"])
                    objects = state.objects
                    if entry["type"] == DELETED:
                        objects.pop(key_of(entry["object"]), None)
                    else:
                        objects[key_of(entry["object"])] = entry["object"]
        if self.rv:
            # A restart moves the revision on (a real API server writes at startup too), and
            # the history starts there: a watch from before the restart is answered 410.
            self.rv += 1
        self.history_start = self.rv
        snapshot = [
            {
                "rv": int(obj["metadata"]["resourceVersion"]),
                "type": ADDED,
                "resource": name,
                "object": obj,
            }
            for name, state in self._resources.items()
            for obj in state.objects.values()
        ]
        snapshot.append({"rv": self.rv, "type": "RV"})
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(b"".join(dumps(e) + b"\n" for e in snapshot))
        os.replace(tmp, path)
        self._journal_fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def close(self) -> None:
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None

    # ---- reads ------------------------------------------------------------------------------

    def _state(self, resource: str) -> ResourceState:
        state = self._resources.get(resource)
        if state is None:
            state = self._resources[resource] = ResourceState()
        return state

    def last_change(self, resource: str) -> int:
        """The resourceVersion of the last change to ``resource`` (0: none yet)."""
        return self._state(resource).last_rv

    def get(self, resource: str, key: Key) -> JSON | None:
        return self._state(resource).objects.get(key)

    def list(
        self, resource: str, namespace: str | None, selector: Selector | None = None
    ) -> list[JSON]:
        """Matching objects sorted by namespace and name (as etcd returns them)."""
        objects = self._state(resource).objects
        keys = sorted(k for k in objects if namespace is None or k[0] == namespace)
        items = [objects[k] for k in keys]
        if selector is not None and not selector.empty:
            items = [o for o in items if selector.matches(o)]
        return items

    def list_at(
        self, resource: str, namespace: str | None, selector: Selector | None, rv: int
    ) -> list[JSON]:
        """The list as it was at ``rv`` (``resourceVersionMatch=Exact``), rebuilt by undoing the
        history after it. 410 when ``rv`` is older than the history."""
        if rv > self.rv:
            raise errors.too_large_resource_version(rv, self.rv)
        if rv < self.history_start:
            raise Expired()
        objects = dict(self._state(resource).objects)
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            if ev.resource != resource:
                continue
            key = key_of(ev.obj)
            if ev.type == ADDED:
                objects.pop(key, None)
            elif ev.prev is not None:
                objects[key] = ev.prev
        keys = sorted(k for k in objects if namespace is None or k[0] == namespace)
        items = [objects[k] for k in keys]
        if selector is not None and not selector.empty:
            items = [o for o in items if selector.matches(o)]
        return items

    # ---- writes -----------------------------------------------------------------------------

    def _commit(self, resource: str, event_type: str, obj: JSON, prev: JSON | None) -> Event:
        """Give ``obj`` the next resourceVersion, record the event and fan it out."""
        rv = self.rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        if self._journal_fd is not None:  # first, so a failed write changes nothing
            entry = {"rv": rv, "type": event_type, "resource": resource, "object": obj}
            os.write(self._journal_fd, dumps(entry) + b"\n")
        self.rv = rv
        ev = Event(self.rv, event_type, resource, obj, prev)
        if len(self.history) == self.history.maxlen:
            self.history_start = self.history[0].rv
        self.history.append(ev)
        state = self._state(resource)
        state.last_rv = rv
        for watcher in list(state.watchers):
            selected = watcher.select(ev)
            if selected is not None and not watcher.offer(ev, *selected):
                state.watchers.discard(watcher)
        return ev

    def insert(self, resource: str, obj: JSON) -> JSON:
        """Store a new object (the caller checked it does not exist). Returns it."""
        self._commit(resource, ADDED, obj, None)
        self._state(resource).objects[key_of(obj)] = obj
        return obj

    def replace(self, resource: str, obj: JSON, prev: JSON) -> JSON:
        """Store ``obj`` in place of ``prev`` (the caller checked preconditions)."""
        self._commit(resource, MODIFIED, obj, prev)
        self._state(resource).objects[key_of(obj)] = obj
        return obj

    def remove(self, resource: str, prev: JSON) -> JSON:
        """Delete an object. Returns its last state, carrying the deletion's resourceVersion."""
        last = {**prev, "metadata": dict(prev["metadata"])}
        self._commit(resource, DELETED, last, prev)
        del self._state(resource).objects[key_of(prev)]
        return last

    def compact(self) -> None:
        """Forget the history (like an etcd compaction at the current revision); test-only."""
        self.history.clear()
        self.history_start = self.rv

    # ---- watches ----------------------------------------------------------------------------

    def watch(
        self,
        resource: str,
        namespace: str | None,
        selector: Selector,
        from_rv: int | None,
    ) -> tuple[list[tuple[str, JSON]], Watcher]:
        """Open a watch. Returns the (type, object) events to send first and the watcher.

        ``from_rv`` None (or 0) starts with a synthetic ADDED per current object; otherwise the
        history after ``from_rv`` is replayed. Raises Expired below the history window.
        Registration and the initial events are computed in one step, so nothing is missed.
        """
        watcher = Watcher(resource, namespace, selector, self.watcher_queue)
        initial: list[tuple[str, JSON]] = []
        if from_rv is None:
            for obj in self.list(resource, namespace, selector):
                initial.append((ADDED, obj))
        else:
            if from_rv < self.history_start:
                raise Expired()
            watcher.min_rv = from_rv
            for ev in self.history:
                if ev.rv > from_rv and ev.resource == resource:
                    selected = watcher.select(ev)
                    if selected is not None:
                        initial.append((selected[0], ev.payload(selected[1])))
        self._state(resource).watchers.add(watcher)
        return initial, watcher

    def stop_watch(self, watcher: Watcher) -> None:
        self._state(watcher.resource).watchers.discard(watcher)

    def end_watches(self, resource: str, reason: str) -> None:
        """End every watch of ``resource`` (its clients see the stream close)."""
        state = self._state(resource)
        for watcher in state.watchers:
            watcher.end(reason)
        state.watchers.clear()

    def end_all_watches(self, reason: str) -> None:
        for state in self._resources.values():
            for watcher in state.watchers:
                watcher.end(reason)
            state.watchers.clear()

    def watcher_count(self) -> int:
        return sum(len(s.watchers) for s in self._resources.values())
