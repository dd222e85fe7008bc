"""``go``: run a function on a thread of its own, as Go's ``go`` statement does.

Upstream counterpart: the ``go`` statement; kube-scheduler's scheduleOne ends with
``go func() { ... the binding cycle ... }()``, and the Go runtime runs that goroutine on one of
its threads without making the caller wait.

``threading.Thread(...).start()`` does make the caller wait: it returns once the new thread
runs, and that thread needs the GIL first. On the scheduling thread that wait was a tenth of
step 12's time at 5000 nodes against kube-apiserver (py-spy, idle samples included), once per
pod. ``go`` hands the function to a thread that finished an earlier one and is waiting for
the next (started, so nobody waits), and starts a new thread only when none is free: as many
threads as functions run at once, as before, but no start per pod. A thread that finds no
work for ``IDLE_TIMEOUT`` seconds ends.

A thread is named for the function it runs (``binding ns/pod``), and ``IDLE_NAME`` between
two of them; ``wait_for(prefix)`` waits until no function whose name starts with ``prefix``
is still running (a thread that is kept for the next function never ends, so joining it
would not tell).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

# How long a thread with nothing to run waits for the next function before it ends.
IDLE_TIMEOUT = 5.0

# The name of a thread between two functions.
IDLE_NAME = "go: idle"

# _lock guards _idle (the threads waiting in _tasks.get, less the functions already handed to
# them) and, through _done, the running names. A function is put in _tasks only while _lock is
# held and _idle counts a thread for it, so a thread that times out and finds _tasks empty
# under the lock knows nobody is counting on it.
_lock = threading.Lock()
_done = threading.Condition(_lock)
_tasks: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], str]] = queue.SimpleQueue()
_idle = 0
_running: dict[str, int] = {}  # name -> how many functions of that name run


def go(fn: Callable[..., Any], *args: Any, name: str) -> None:
    """Run ``fn(*args)`` on another thread, named ``name`` meanwhile; return at once."""
    global _idle
    with _lock:
        _running[name] = _running.get(name, 0) + 1
        if _idle > 0:
            _idle -= 1
            _tasks.put((fn, args, name))
            return
    # Daemon: a process that exits does not wait for a function still running (the binding
    # cycles end on their own when the scheduler stops), nor for an idle thread.
    threading.Thread(target=_work, args=(fn, args, name), name=name, daemon=True).start()


def wait_for(prefix: str, timeout: float) -> bool:
    """Wait until no function named ``prefix...`` runs; whether none does."""
    with _done:
        return _done.wait_for(
            lambda: not any(n.startswith(prefix) for n in _running), timeout=timeout
        )


def _work(fn: Callable[..., Any], args: tuple[Any, ...], name: str) -> None:
    global _idle
    thread = threading.current_thread()
    while True:
        thread.name = name
        try:
            fn(*args)
        except BaseException as e:
            # As an uncaught exception in a thread of its own is reported.
            threading.excepthook(
                threading.ExceptHookArgs((type(e), e, e.__traceback__, thread))  # type: ignore[arg-type]
            )
        finally:
            # Drop the finished function's arguments now, not when the next one comes.
            del fn, args
            thread.name = IDLE_NAME
            with _lock:
                left = _running[name] - 1
                if left:
                    _running[name] = left
                else:
                    del _running[name]
                _idle += 1
                _done.notify_all()
        while True:
            try:
                fn, args, name = _tasks.get(timeout=IDLE_TIMEOUT)
                break
            except queue.Empty:
                with _lock:
                    if _tasks.empty():
                        _idle -= 1
                        return
                # A function was handed over as the wait ended: take it (or let another
                # idle thread take it, and wait again).
