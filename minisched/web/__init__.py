"""A live picture of the cluster in the browser: ``--web`` on ``nox -s stepN`` and ``python -m
steps.stepN``.

Upstream counterpart: none in kube-scheduler. kube-scheduler-simulator has a web UI that shows
the results of scheduling; this page shows the queues as well, for every step.

- ``state.py``: ``ClusterView``, what the page shows, fed by the same recorder as the terminal
  report (``Report.subscribe``) and by the scheduler's node and pod informers.
- ``server.py``: ``WebPage``, an aiohttp server on 127.0.0.1 in a thread of its own: the page,
  its script and style (``static/``, plain files: no build step, nothing fetched from the
  internet) and a stream of server-sent events. A page opened mid-run gets a snapshot of the
  current state first, then the changes, at most ten batches a second.

``WebPage``, ``ClusterView`` and ``Features`` are imported on first use: a run without
``--web`` does not pay for importing aiohttp (half a second on a busy machine).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ClusterView", "Features", "WebError", "WebPage"]


class WebError(Exception):
    """The page could not be served (e.g. its port is in use)."""


def __getattr__(name: str) -> Any:
    if name == "WebPage":
        from .server import WebPage

        return WebPage
    if name in ("ClusterView", "Features"):
        from . import state

        return getattr(state, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
