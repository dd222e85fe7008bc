"""The embedded API server's lifecycle: the listening socket, the HTTP server on an event loop,
and a thread of its own for in-process use; the handlers are ``server.py``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/server`` (``GenericAPIServer.PrepareRun`` and
``Run``: listen, serve until stopped, shut down).

In-process use (tests, the benchmark)::

    server = Server(port=0).start_in_thread()   # its own event loop in a daemon thread
    print(server.url, server.token)
    ...
    server.stop_thread()

or ``await Server(...).start()`` / ``await server.stop()`` on a loop you own.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from . import httpd
from .registry import Registry
from .server import MAX_BODY_BYTES, ApiServer, http_error
from .store import Store


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)  # a deep backlog: many clients may connect at once
    sock.setblocking(False)
    return sock


class Server:
    """The embedded API server: store, registry, HTTP app and listening socket."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        watch_history: int = 5000,
        watcher_queue: int = 2000,
        bookmark_interval: float = 60.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        fail_binding_fraction: float = 0.0,
        seed: int | None = None,
        test_endpoints: bool = False,
        tls: tuple[str, str] | None = None,
        data_dir: str | None = None,
    ) -> None:
        self.host = host
        # (certificate file, key file) to serve HTTPS; kubectl sends its bearer token only
        # over TLS (kubernetes/kubectl#744), so kubectl needs this.
        self.tls = tls
        self.port = port
        self.token = token or secrets.token_hex(24)
        journal = None
        if data_dir is not None:
            os.makedirs(data_dir, exist_ok=True)
            journal = os.path.join(data_dir, "objects.jsonl")
        self.store = Store(
            watch_history=watch_history, watcher_queue=watcher_queue, journal=journal
        )
        self.registry = Registry(
            self.store,
            rng=random.Random(seed),
            fault_rng=random.Random(seed),
            fail_binding_fraction=fail_binding_fraction,
        )
        self.registry.bootstrap()
        self.bookmark_interval = bookmark_interval
        self.max_body_bytes = max_body_bytes
        self.test_endpoints = test_endpoints
        self._api: ApiServer | None = None
        self._httpd: httpd.HttpServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    async def start(self) -> None:
        sock = _listen(self.host, self.port)
        self.port = sock.getsockname()[1]
        api = ApiServer(
            self.registry,
            self.token,
            server_address=f"{self.host}:{self.port}",
            max_body_bytes=self.max_body_bytes,
            bookmark_interval=self.bookmark_interval,
            test_endpoints=self.test_endpoints,
        )
        self._api = api
        self._httpd = httpd.HttpServer(api.handle, http_error)
        ssl_context = None
        if self.tls:
            ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_context.load_cert_chain(*self.tls)
        await self._httpd.start(sock, ssl_context)
        self._loop = asyncio.get_running_loop()

    async def stop(self) -> None:
        if self._api is not None:
            # Readiness fails from now on; every watch ends, so its client lists again
            # elsewhere (or after a restart) instead of waiting on a dead stream.
            self._api.shutting_down = True
            self.store.end_all_watches("server shutting down")
        if self._httpd is not None:
            # Requests being answered get a second to finish; then every connection closes.
            await self._httpd.stop(timeout=1.0)
            self._httpd = None
        self.store.close()

    # ---- running on a private loop in a thread (tests, benchmark) ---------------------------

    def start_in_thread(self) -> Server:
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # reported to the caller below
                failure.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="minisched-apiserver", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]
        return self

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the server's loop (the only thread allowed to touch the store)."""
        assert self._loop is not None
        future: asyncio.Future[Any] = asyncio.run_coroutine_threadsafe(
            _as_coroutine(fn), self._loop
        )
        return future.result()

    def stop_thread(self, timeout: float = 5.0) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            self._thread = None


async def _as_coroutine(fn: Callable[[], Any]) -> Any:
    result = fn()
    if isinstance(result, Awaitable):
        return await result
    return result
