"""The web server behind ``--web``: the page, and the state it shows as server-sent events.

Upstream counterpart: none (kube-scheduler-simulator's web UI plays a similar part).

Routes, all on 127.0.0.1 only:

=================  =========================================================================
``/``              the page (``static/index.html``), its ``app.js`` and ``style.css``
``/events``        ``text/event-stream``: one ``snapshot`` message, then a ``changes`` message
                   whenever something changed (at most every ``FLUSH_PERIOD``)
``/api/state``     the snapshot as JSON
``/api/pod?key=``  one pod: its attempts and its last attempt's per-node Filter and Score table
=================  =========================================================================

The server runs its own asyncio loop in a daemon thread, so the scheduler's threads never wait
for it: they only mark what changed in the ``ClusterView``, and a loop task sends the changes.
A page that reads too slowly is cut off (its queue of unsent messages is bounded); its browser
reconnects by itself and starts again from a snapshot.
"""

from __future__ import annotations

import asyncio
import json
import threading
from importlib import resources
from typing import Any

from aiohttp import web

from . import WebError
from .state import ClusterView, Features

FLUSH_PERIOD = 0.1  # seconds between two batches of changes
CLIENT_QUEUE = 256  # unsent messages a page may fall behind by before it is cut off
KEEPALIVE = 15.0  # seconds of silence before a comment line keeps the stream open

STATIC = {
    "/": ("index.html", "text/html"),
    "/app.js": ("app.js", "text/javascript"),
    "/style.css": ("style.css", "text/css"),
}


class WebPage:
    """The page for one run. ``attach`` it to the report and the scheduler before the scheduler
    starts, ``start`` it, and ``close`` it at the end; ``hold`` keeps it up until Ctrl-C.

    ``_clients`` (the queues of the open event streams) is only touched on the server's loop.
    """

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self.view: ClusterView | None = None
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._clients: set[asyncio.Queue[bytes | None]] = set()
        self._released = threading.Event()

    # --- wiring -------------------------------------------------------------------------------

    def attach(self, report: Any, scheduler: Any, step: int) -> ClusterView:
        """Subscribe to the report and add handlers to the scheduler's informers (which must
        not have started yet: an informer takes handlers only before ``start``)."""
        self.view = ClusterView(
            Features.for_step(step),
            now=scheduler.clock.now,
            responsible_for_pod=scheduler.responsible_for_pod,
        )
        report.subscribe(self.view.on_record)
        scheduler.node_informer.add_event_handler(self.view.node_handler())
        scheduler.pod_informer.add_event_handler(self.view.pod_handler())
        return self.view

    def start(self) -> str:
        """Serve the page; return its URL once it is listening."""
        if self.view is None:
            raise RuntimeError("attach() the page before start()")
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._serve())
            except BaseException as e:  # reported to start() below
                failure.append(e)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=serve, name="web", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            e = failure[0]
            if isinstance(e, OSError):
                raise WebError(f"cannot serve the page on {self.host}:{self.port}: {e.strerror}")
            raise WebError(f"cannot serve the page: {e}")
        return self.url

    def end(self, text: str) -> None:
        """The scenario is over: say so on the page."""
        if self.view is not None:
            self.view.end(text)

    def hold(self, interrupted: threading.Event | None = None) -> None:
        """Block until ``release()`` (tests) or Ctrl-C (KeyboardInterrupt propagates).

        ``interrupted`` is set by the runner's SIGINT handler. A Ctrl-C that came earlier can
        have been lost on its way: inside a C extension it turns into that extension's error
        (pydantic-core's SchemaError), which a caller may have handled. It is raised here, so
        the run ends instead of waiting for a second Ctrl-C.
        """
        while True:
            if interrupted is not None and interrupted.is_set():
                raise KeyboardInterrupt
            if self._released.wait(0.5):
                return

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        """Stop serving: end every stream and the server's thread."""
        self._released.set()
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    # --- the server (on its own loop) ---------------------------------------------------------

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_get("/events", self._events)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/api/pod", self._pod)
        for path in STATIC:
            app.router.add_get(path, self._static)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.port
        self.url = f"http://{self.host}:{self.port}/"
        self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _shutdown(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        for q in list(self._clients):
            _offer(q, None)
        if self._runner is not None:
            await self._runner.cleanup()

    async def _flush(self) -> None:
        """Send what changed to every open stream, at most every FLUSH_PERIOD."""
        assert self.view is not None
        while True:
            await asyncio.sleep(FLUSH_PERIOD)
            batch = self.view.changes()
            if batch is None:
                continue
            data = _sse(batch)
            for q in list(self._clients):
                if not _offer(q, data):
                    self._clients.discard(q)  # too far behind: its browser will reconnect

    async def _events(self, request: web.Request) -> web.StreamResponse:
        assert self.view is not None
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        q: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=CLIENT_QUEUE)
        # The snapshot and the registration happen with no await between them, and _flush runs
        # on this loop too: no change falls between the snapshot and the stream. A change made
        # since the last flush is in both; the page applies it twice, to the same effect.
        snapshot = self.view.snapshot()
        self._clients.add(q)
        try:
            await response.write(b"retry: 1000\n" + _sse(snapshot))
            while True:
                try:
                    data = await asyncio.wait_for(q.get(), KEEPALIVE)
                except asyncio.TimeoutError:
                    await response.write(b": keepalive\n\n")
                    continue
                if data is None:
                    break
                await response.write(data)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._clients.discard(q)
        return response

    async def _state(self, request: web.Request) -> web.Response:
        assert self.view is not None
        return web.json_response(self.view.snapshot())

    async def _pod(self, request: web.Request) -> web.Response:
        assert self.view is not None
        detail = self.view.pod_detail(request.query.get("key", ""))
        if detail is None:
            return web.json_response({"error": "no such pod"}, status=404)
        return web.json_response(detail)

    async def _static(self, request: web.Request) -> web.Response:
        name, content_type = STATIC[request.path]
        body = resources.files(__package__).joinpath("static", name).read_bytes()
        return web.Response(body=body, content_type=content_type, charset="utf-8")


def _sse(message: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"


def _offer(q: asyncio.Queue[bytes | None], data: bytes | None) -> bool:
    """Queue ``data`` for one stream; when its queue is full, end that stream instead."""
    try:
        q.put_nowait(data)
        return True
    except asyncio.QueueFull:
        while not q.empty():
            q.get_nowait()
        q.put_nowait(None)
        return False
