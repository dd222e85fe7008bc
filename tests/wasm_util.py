"""What the wasm host's tests share: a framework Handle of plain objects, and plugin builders.

The wasm plugin is step 17's (``steps/step17/plugins/wasm``); the handle gives it a snapshot of
nodes, an event recorder that keeps what it is given, and waiting pods by UID.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from minisched.clock import FakeClock
from minisched.recorder import NullRecorder
from tests.conftest import step_module
from tests.fakes import make_node, make_pod

STEP = 17
wasm = step_module(STEP, "plugins.wasm")
framework = step_module(STEP, "framework")
snapshot = step_module(STEP, "snapshot")
cycle_state = step_module(STEP, "cycle_state")


class KeptEvents:
    """An event recorder that keeps (object's name, type, reason, action, note)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []

    def eventf(self, obj: Any, type_: str, reason: str, action: str, message: str) -> None:
        self.events.append((obj.metadata.name, type_, reason, action, message))


@dataclass
class Waiting:
    pod: client.V1Pod
    rejected: bool = False

    def get_pod(self) -> client.V1Pod:
        return self.pod


@dataclass
class FakeHandle:
    """The parts of the framework Handle the wasm host uses."""

    nodes: list[client.V1Node] = field(default_factory=list)
    recorder_events: KeptEvents = field(default_factory=KeptEvents)
    waiting: dict[str, Waiting] = field(default_factory=dict)
    clock: FakeClock = field(default_factory=FakeClock)
    recorder: Any = field(default_factory=NullRecorder)
    rng: random.Random = field(default_factory=lambda: random.Random(1))

    def snapshot_shared_lister(self) -> Any:
        snap = snapshot.Snapshot()
        for node in self.nodes:
            ni = framework.NodeInfo()
            ni.set_node(node)
            snap.node_info_map[node.metadata.name] = ni
            snap.node_info_list.append(ni)
        return snap

    def event_recorder(self) -> KeptEvents:
        return self.recorder_events

    def get_waiting_pod(self, uid: str) -> Waiting | None:
        return self.waiting.get(uid)

    def reject_waiting_pod(self, uid: str) -> bool:
        w = self.waiting.get(uid)
        if w is None:
            return False
        w.rejected = True
        return True


def node_info(node: client.V1Node) -> Any:
    ni = framework.NodeInfo()
    ni.set_node(node)
    return ni


def new_plugin(guest_url: str, handle: Any = None, **args: Any) -> Any:
    """The wasm plugin of the guest at ``guest_url``; ``args`` are more pluginConfig args."""
    return wasm.new({"guestURL": guest_url, **args}, handle)


def state() -> Any:
    return cycle_state.CycleState()


__all__ = ["make_node", "make_pod"]
