"""Shared fixtures: the embedded API server, official clients, and the built steps."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator
from types import ModuleType

import pytest
from kubernetes import client, config

from minisched import steps
from minisched.cluster import EmbeddedServer


def built_steps(first: int, last: int = len(steps.STEPS)) -> list[int]:
    """The numbers of the built steps in ``first..last``: the steps that have a feature."""
    return [s.number for s in steps.built() if first <= s.number <= last]


def step_module(number: int, module: str) -> ModuleType:
    """``steps.stepN.<module>``."""
    return importlib.import_module(f"steps.step{number}.{module}")


@pytest.fixture(scope="session")
def apiserver() -> Iterator[EmbeddedServer]:
    """One embedded API server for the tests that only add objects of their own."""
    with EmbeddedServer() as server:
        yield server


@pytest.fixture
def fresh_apiserver() -> Iterator[EmbeddedServer]:
    """A server of the test's own, for tests that restart it or need an empty store."""
    with EmbeddedServer() as server:
        yield server


@pytest.fixture
def api_client(apiserver: EmbeddedServer) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=apiserver.kubeconfig)
    yield api
    api.close()


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """Tests that call a ``main()`` in-process get its logging setup (the runner quiets the
    informers' outage logger below -v) and its garbage collector thresholds; put them back, so
    that no later test depends on order."""
    import logging

    from minisched.informer import CONNECTION_LOGGER

    loggers = [
        logging.getLogger(),
        logging.getLogger(CONNECTION_LOGGER),
        logging.getLogger("urllib3"),
    ]
    saved = [(lg, lg.level, list(lg.handlers)) for lg in loggers]
    threshold = gc.get_threshold()  # and the collector's, which a main() tunes
    yield
    for lg, level, handlers in saved:
        lg.setLevel(level)
        lg.handlers[:] = handlers
    gc.set_threshold(*threshold)
