"""The collector policy of a process that runs a scheduler: collect the young generation less
often, and take a large informer cache out of the collector's sight once it is listed.

Upstream counterpart: none; kube-scheduler leaves Go's collector at its defaults (GOGC). Both
settings are CPython's answer to the same cost, each measured below.
"""

from __future__ import annotations

import gc
import threading

from .steps import StepScheduler

# Differs from upstream: kube-scheduler leaves its collector alone (Go's runs when the heap has
# grown by GOGC percent, 100 by default); CPython collects its youngest generation every 700
# allocations. A cycle over 5000 nodes allocates tens of thousands of short-lived objects, so
# with that default each cycle's objects are still alive at a dozen collections, are promoted,
# and end up in the full collections that walk the whole cache. Measured with nox -s bench on
# the real control plane (step 8): 40 -> 31 ms of CPU per pod at 5000 nodes, 188 -> 234 pods/s
# at 500. 50,000 rather than 10,000: a cycle that scores 5000 nodes holds some 10,000 NodeScores
# until it ends, so at 10,000 most cycles still met one collection, which walked them all (0.6 to
# 1 ms of a 16 ms cycle, in-process); at 50,000 a run of 65 such cycles met none.
GC_THRESHOLD = (50_000, 10, 10)


# Differs from upstream as well: once the scheduler's informers have made their first lists,
# if their caches hold at least this many objects, every object of the process is moved out of
# the collector's sight (gc.freeze): the cache lives as long as the process, and otherwise every
# full collection walks all of it. Measured with nox -s bench (step 3, 5000 nodes x 1000 pods,
# before GC_THRESHOLD): 40 -> 24 ms per pod. Frozen objects are still freed when their last
# reference goes; small caches (scenarios, tests) are left alone. Simplified: once, after the
# first lists; the objects of a later relist (410 Gone, a server restart) stay in sight.
FREEZE_CACHE_SIZE = 1000


def configure_gc() -> None:
    """Collect the young generation less often, for a process that runs a scheduler."""
    gc.set_threshold(*GC_THRESHOLD)


def freeze_cache_once_listed(
    scheduler: StepScheduler, thread: threading.Thread
) -> threading.Thread:
    """Start a thread that waits for the first lists of the scheduler's informers (while
    ``thread``, the scheduler's, runs), then freezes a large cache (``freeze_cache``)."""
    freezer = threading.Thread(
        target=freeze_cache, args=(scheduler, thread), name="gc-freeze", daemon=True
    )
    freezer.start()
    return freezer


def freeze_cache(scheduler: StepScheduler, thread: threading.Thread) -> bool:
    """Once the informers have listed, freeze the process's objects if the cache holds at least
    ``FREEZE_CACHE_SIZE``; whether it did. Gives up when ``thread`` ends first."""
    informers = (scheduler.pod_informer, scheduler.node_informer)
    for informer in informers:
        while not informer.wait_for_cache_sync(0.5):
            if not thread.is_alive():
                return False
    if sum(len(informer.store.list_keys()) for informer in informers) < FREEZE_CACHE_SIZE:
        return False
    gc.collect()  # garbage frozen now would never be collected
    gc.freeze()
    return True
