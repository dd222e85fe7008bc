"""The wasm plugin: a scheduling framework plugin whose logic is a WebAssembly guest.

Upstream (kube-scheduler-wasm-extension): scheduler/plugin/plugin.go (PluginFactory,
NewFromConfig, wasmPlugin and its extension point methods), config.go (PluginConfig),
wasm.go (getURL) and runtime.go (prepareRuntime).

Each extension point method does the same three things: put what the guest may ask for into a
``Stack`` (the pod, the node's name...), take the right guest instance from the pool, and call
the guest's export, which answers through host functions and its result (guest.py, host.py).
The methods live in small classes, one per extension point: mask.py builds the plugin's class
from those the guest exports, so the framework sees the plugin only where the guest can serve.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import logging
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import V1Node, V1Pod
from wasmtime import Engine, Linker, Module

from minisched.codec import json_kind

from ...cycle_state import CycleState
from ...framework import (
    ClusterEvent,
    Handle,
    NodeInfo,
    NodeScore,
    NodeToStatusMap,
    PostFilterResult,
    PreFilterExtensions,
    ScoreExtensions,
    Status,
    as_status,
)
from ...runtime import ALL_CLUSTER_EVENTS
from .guest import (
    EXPORT_PERMIT,
    EXPORT_POST_BIND,
    EXPORT_RESERVE,
    EXPORT_UNRESERVE,
    Guest,
    Interfaces,
    WasmError,
    compile_guest,
    detect_interfaces,
    new_guest,
)
from .host import Host, Stack
from .pool import GuestPool

log = logging.getLogger(__name__)

# --- configuration (config.go, wasm.go) ---------------------------------------------------------


@dataclass
class PluginConfig:
    """The plugin's args (upstream: PluginConfig)."""

    # Where the guest is: file://path (a relative path is relative to the working directory)
    # or http(s)://...
    guest_url: str = ""
    # Given to the guest as it is (get_config); guests usually parse it as JSON.
    guest_config: str = ""
    # The lowest severity of the guest's log lines that is written: 0 info (default),
    # 1 warning, 2 error, 3 fatal.
    log_severity: int = 0
    # The guest's command line (os.Args in a Go guest); upstream exposes it for tests, which
    # pick a guest's behaviour with it.
    args: list[str] = field(default_factory=list)


# JSON name -> (attribute, Go type, Python type) of PluginConfig's fields.
_CONFIG_FIELDS: dict[str, tuple[str, str, type]] = {
    "guestURL": ("guest_url", "string", str),
    "guestConfig": ("guest_config", "string", str),
    "logSeverity": ("log_severity", "int32", int),
    "Args": ("args", "[]string", list),
}


def decode_config(plugin_name: str, args: Any) -> PluginConfig:
    """The PluginConfig in the profile's pluginConfig args (a dict; None when there are none),
    read as Go's encoding/json reads it: unknown fields ignored, a value of the wrong type an
    error (upstream: frameworkruntime.DecodeInto, in PluginFactory)."""
    config = PluginConfig()
    for key, value in (args or {}).items():
        if key not in _CONFIG_FIELDS or value is None:
            continue
        attribute, go_type, py_type = _CONFIG_FIELDS[key]
        ok = isinstance(value, py_type) and not (py_type is int and isinstance(value, bool))
        if ok and py_type is list:
            ok = all(isinstance(v, str) for v in value)
        if not ok:
            raise WasmError(
                f"failed to decode into {plugin_name} PluginConfig: json: cannot unmarshal "
                f"{json_kind(value)} into Go struct field PluginConfig.{key} of type {go_type}"
            )
        setattr(config, attribute, list(value) if py_type is list else value)
    return config


def get_url(url: str) -> bytes:
    """The guest's bytes (upstream: getURL, httpGet). The path of a file URL is what follows
    ``file://``, so ``file://../x.wasm`` is relative to the working directory."""
    scheme, colon, _ = url.partition(":")
    if not colon:
        raise WasmError(f"invalid URL: {url}")
    if scheme in ("http", "https"):
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                status, encoding = response.status, response.headers.get("Content-Encoding")
                body: bytes = response.read()
        except urllib.error.HTTPError as e:
            # urllib raises for a 4xx or 5xx answer, before the check below could see it.
            status, encoding, body = e.code, None, b""
        if status != 200:
            raise WasmError(f'received {status} status code from "{url}"')
        # A gzip-compressed answer is the guest compressed: Go's client undoes it, urllib
        # does not, and the compressed bytes would not compile.
        return gzip.decompress(body) if encoding == "gzip" else body
    if scheme == "file":
        path = url[len("file://") :]
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            # Go's words: "open PATH: no such file or directory". Go opens a directory and
            # fails to read it: "read PATH: is a directory".
            op = "read" if isinstance(e, IsADirectoryError) else "open"
            raise WasmError(f"{op} {path}: {(e.strerror or str(e)).lower()}") from None
    raise WasmError(f"unsupported URL scheme: {scheme}")


# --- the runtime (runtime.go) -------------------------------------------------------------------

# Differs from upstream: one Engine for the process, and compiled modules kept by their
# content, so a second plugin of the same guest (another profile, a test) does not compile it
# again: compiling a 1 MB TinyGo guest takes seconds. Upstream makes a wazero runtime per plugin.
_engine: Engine | None = None
_modules: dict[bytes, Module] = {}
_modules_lock = threading.Lock()


def engine() -> Engine:
    global _engine
    with _modules_lock:
        if _engine is None:
            _engine = Engine()
        return _engine


def compile_module(guest_bin: bytes) -> Module:
    """The compiled guest, from the cache when these bytes were compiled before. wasmtime
    compiles WebAssembly text (.wat) as well as binaries."""
    key = hashlib.sha256(guest_bin).digest()
    with _modules_lock:
        module = _modules.get(key)
    if module is None:
        module = compile_guest(lambda: Module(engine(), guest_bin))
        with _modules_lock:
            _modules[key] = module
    return module


def prepare_runtime(handle: Handle | None, config: PluginConfig) -> tuple[Module, Linker]:
    """Compile the guest and define what it may import: WASI preview 1 (TinyGo's runtime
    needs it) and the three host modules (upstream: prepareRuntime).

    Simplified: upstream instantiates only the host modules the guest imports; a Linker
    defines them all, and each instance takes what its guest imports.
    """
    module = compile_module(get_url_checked(config.guest_url))
    linker = Linker(engine())
    linker.define_wasi()
    Host(handle, config.guest_config, config.log_severity).define(linker)
    return module, linker


def get_url_checked(url: str) -> bytes:
    """The guest's bytes, with upstream's errors about its URL."""
    if not url:
        raise WasmError("wasm: guestURL is required")
    try:
        return get_url(url)
    except Exception as e:
        raise WasmError(f"wasm: error reading guestURL {url}: {e}") from e


def new_from_config(plugin_name: str, config: PluginConfig, handle: Handle | None) -> WasmPlugin:
    """The plugin, presented at the extension points its guest exports (upstream:
    NewFromConfig, newWasmPlugin and maskInterfaces). Raises WasmError with upstream's words
    when the guest cannot be read, compiled, started or used as a plugin."""
    from .mask import mask_interfaces  # mask.py builds on the classes of this module

    module, linker = prepare_runtime(handle, config)
    guest_interfaces = detect_interfaces(module)
    if not guest_interfaces:  # unreachable: detect_interfaces raises first (as upstream)
        raise WasmError("wasm: guest doesn't export plugin functions")
    cls = mask_interfaces(guest_interfaces)
    return cls(plugin_name, module, linker, guest_interfaces, config.args)


# --- the plugin ---------------------------------------------------------------------------------


class WasmPlugin:
    """What every wasm plugin is, whatever its guest exports (upstream: wasmPlugin, as
    mask.go's basePlugin presents it): a Plugin with EnqueueExtensions, and a PreFilter
    plugin, because the guest's prefilter resets the guest's cycle state and caches (the Go
    SDK always exports it).
    """

    def __init__(
        self,
        plugin_name: str,
        module: Module,
        linker: Linker,
        guest_interfaces: Interfaces,
        guest_args: list[str],
    ) -> None:
        self.plugin_name = plugin_name
        self.module = module
        self.linker = linker
        self.guest_interfaces = guest_interfaces
        self.guest_args = guest_args
        # The names of the guest's exports (every instance has the same).
        self.exports = frozenset(e.name for e in module.exports)
        # Instances are numbered, as upstream names each by a counter.
        self._instance_counter = itertools.count(1)
        try:
            self.pool: GuestPool[Guest] = GuestPool(self._new_guest)
        except Exception as e:
            raise WasmError(f"failed to create a guest pool: {e}") from e

    def _new_guest(self) -> Guest:
        number = str(next(self._instance_counter))
        return new_guest(engine(), self.linker, self.module, self.guest_args, number)

    def name(self) -> str:
        """The name the configuration gives the plugin."""
        return self.plugin_name

    def close(self) -> None:
        """Drop the instances (upstream: Close, which closes the wazero runtime)."""
        with self.pool.lock:
            self.pool.free.clear()
            self.pool.binding.clear()
            self.pool.scheduled = None

    # --- EnqueueExtensions ----------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEvent]:
        """The events the guest registers in ``enqueue``; every event when it exports no
        ``enqueue`` or registers none (upstream: EventsToRegister, allClusterEvents).

        Not implemented: QueueingHint (as upstream: a guest registers events only).
        """
        if not self.guest_interfaces & Interfaces.ENQUEUE_EXTENSIONS:
            return list(ALL_CLUSTER_EVENTS)
        stack = Stack()
        # Enqueue is not part of a scheduling cycle. A failing guest raises: upstream panics,
        # as EventsToRegister cannot return an error.
        self.pool.do_with_guest(lambda g: g.events_to_register(stack))
        return stack.result_cluster_events or list(ALL_CLUSTER_EVENTS)

    # --- PreFilter ------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: V1Pod) -> Status:
        """Call the guest's prefilter, which starts the pod's cycle in the guest.

        Not implemented: PreFilterResult (it came in v1.24). A guest may answer with the only
        nodes worth filtering (``result.node_names``); v1.23's PreFilter returns a status
        only, so the names are logged and dropped: every node still goes through Filter, and
        the guest's Filter must reject the others itself.
        """
        if not self.guest_interfaces & Interfaces.PRE_FILTER:
            return Status()
        stack = Stack(current_pod=pod)
        result: list[tuple[list[str] | None, Status]] = []
        status = self._with_scheduling_guest(pod, lambda g: result.append(g.pre_filter(stack)))
        if status is not None:
            return status
        node_names, status = result[0]
        if node_names is not None:
            log.debug(
                "Dropping a wasm guest's PreFilterResult plugin=%s nodes=%s",
                self.plugin_name,
                node_names,
            )
        return status

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        """The plugin itself when the guest exports addpod or removepod, else None."""
        if not self.guest_interfaces & Interfaces.PRE_FILTER_EXTENSIONS:
            return None
        assert isinstance(self, PreFilterExtensions)
        return self

    # --- helpers --------------------------------------------------------------------------

    def _with_scheduling_guest(self, pod: V1Pod, fn: Any) -> Status | None:
        """Run ``fn`` with the scheduling guest; an ERROR status if there is none to run
        (a new instance failed to start)."""
        try:
            self.pool.do_with_scheduling_guest(pod.metadata.uid, fn)
        except WasmError as e:
            return as_status(e)
        return None

    def _scheduling_status(self, pod: V1Pod, stack: Stack, call: Any) -> Status:
        """Call ``call(guest, stack)`` on the scheduling guest; its status."""
        result: list[Status] = []
        status = self._with_scheduling_guest(pod, lambda g: result.append(call(g, stack)))
        return status if status is not None else result[0]


# --- one class per extension point (mask.py picks them) -----------------------------------------


class PreFilterExtensionsMethods(WasmPlugin):
    """AddPod and RemovePod (upstream: the PreFilterExtensions of wasmPlugin). Preemption
    asks them "what if this pod were on the node, or gone from it"."""

    def add_pod(
        self, state: CycleState, pod_to_schedule: V1Pod, pod_to_add: V1Pod, node_info: NodeInfo
    ) -> Status:
        return self._pod_change(pod_to_schedule, pod_to_add, node_info, Guest.add_pod)

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: V1Pod,
        pod_to_remove: V1Pod,
        node_info: NodeInfo,
    ) -> Status:
        return self._pod_change(pod_to_schedule, pod_to_remove, node_info, Guest.remove_pod)

    def _pod_change(self, pod: V1Pod, target: V1Pod, node_info: NodeInfo, call: Any) -> Status:
        """The guest reads the pod added or removed with ``targetPod``."""
        node = node_info.node()
        name = node.metadata.name if node else ""
        stack = Stack(current_pod=pod, target_pod=target, current_node_name=name)
        return self._scheduling_status(pod, stack, call)


class FilterMethods(WasmPlugin):
    def filter(self, state: CycleState, pod: V1Pod, node_info: NodeInfo) -> Status:
        node = node_info.node()
        stack = Stack(current_pod=pod, current_node_name=node.metadata.name if node else "")
        return self._scheduling_status(pod, stack, Guest.filter)


class PostFilterMethods(WasmPlugin):
    def post_filter(
        self, state: CycleState, pod: V1Pod, filtered_node_status_map: NodeToStatusMap
    ) -> tuple[PostFilterResult | None, Status]:
        stack = Stack(current_pod=pod, node_to_status_map=filtered_node_status_map)
        result: list[tuple[PostFilterResult | None, Status]] = []
        status = self._with_scheduling_guest(pod, lambda g: result.append(g.post_filter(stack)))
        return (None, status) if status is not None else result[0]


class PreScoreMethods(WasmPlugin):
    def pre_score(self, state: CycleState, pod: V1Pod, nodes: list[V1Node]) -> Status:
        stack = Stack(current_pod=pod, filtered_nodes=nodes)
        return self._scheduling_status(pod, stack, Guest.pre_score)


class ScoreMethods(WasmPlugin):
    def score(self, state: CycleState, pod: V1Pod, node_name: str) -> tuple[int, Status]:
        stack = Stack(current_pod=pod, current_node_name=node_name)
        result: list[tuple[int, Status]] = []
        status = self._with_scheduling_guest(pod, lambda g: result.append(g.score(stack)))
        return (0, status) if status is not None else result[0]

    def score_extensions(self) -> ScoreExtensions | None:
        """The plugin itself when the guest exports normalizescore, else None."""
        if not self.guest_interfaces & Interfaces.SCORE_EXTENSIONS:
            return None
        assert isinstance(self, ScoreExtensions)
        return self


class NormalizeScoreMethods(WasmPlugin):
    def normalize_score(self, state: CycleState, pod: V1Pod, scores: list[NodeScore]) -> Status:
        """Rewrite ``scores`` in place with the guest's.

        Upstream raises (panics) when the guest returns a different number of scores; so does
        this. Differs from upstream: the guest's scores are taken by node name and keep the
        input's order (upstream copies them in the order of a Go map, which is random).
        """
        stack = Stack(current_pod=pod, node_score_list=[NodeScore(s.name, s.score) for s in scores])
        result: list[tuple[list[NodeScore], Status]] = []
        status = self._with_scheduling_guest(pod, lambda g: result.append(g.normalize_score(stack)))
        if status is not None:
            return status
        updated, status = result[0]
        if len(updated) != len(scores):
            raise WasmError(
                f"size mismatch: scores has {len(scores)} elements, but updatedScores has "
                f"{len(updated)} elements"
            )
        by_name = {s.name: s.score for s in updated}
        for s in scores:
            s.score = by_name.get(s.name, s.score)
        return status


class ReserveMethods(WasmPlugin):
    def reserve(self, state: CycleState, pod: V1Pod, node_name: str) -> Status:
        if EXPORT_RESERVE not in self.exports:
            return Status()
        stack = Stack(current_pod=pod, current_node_name=node_name)
        return self._scheduling_status(pod, stack, Guest.reserve)

    def unreserve(self, state: CycleState, pod: V1Pod, node_name: str) -> None:
        """Call the guest's unreserve, then end the pod's binding cycle: its guest goes
        back to the pool.

        Differs from upstream: the guest called is the pod's binding guest when it has one
        (a failure in Permit, PreBind or Bind), else the scheduling guest (a failure in
        Reserve). Upstream always calls the scheduling guest, which by then may serve the
        next pod.
        """
        uid = pod.metadata.uid
        try:
            if EXPORT_UNRESERVE in self.exports:
                stack = Stack(current_pod=pod, current_node_name=node_name)
                errors: list[BaseException | None] = []
                with self.pool.lock:
                    g = self.pool.binding.get(uid)
                if g is not None:
                    errors.append(g.unreserve(stack))
                else:
                    self.pool.do_with_scheduling_guest(
                        uid, lambda g: errors.append(g.unreserve(stack))
                    )
                if errors and errors[0] is not None:
                    log.error('"failed unreserve" err="%s"', errors[0])
        except WasmError as e:
            log.error('"doWithSchedulingGuest Failed" err="%s"', e)
        finally:
            self.pool.free_from_binding(uid)


class PermitMethods(WasmPlugin):
    def permit(self, state: CycleState, pod: V1Pod, node_name: str) -> tuple[Status, float]:
        """Call the guest's permit; then the pod's scheduling guest moves to its binding
        cycle, whatever the answer (upstream: Permit)."""
        result: list[tuple[Status, float]] = [(Status(), 0.0)]
        status = None
        if EXPORT_PERMIT in self.exports:
            stack = Stack(current_pod=pod, current_node_name=node_name)
            status = self._with_scheduling_guest(pod, lambda g: result.append(g.permit(stack)))
        try:
            self.pool.get_for_binding(pod.metadata.uid)
        except RuntimeError:
            pass  # no scheduling guest to move: the guest exports no scheduling point
        if status is not None:
            return status, 0.0
        return result[-1]


class PreBindMethods(WasmPlugin):
    def pre_bind(self, state: CycleState, pod: V1Pod, node_name: str) -> Status:
        stack = Stack(current_pod=pod, current_node_name=node_name)
        return self.pool.get_for_binding(pod.metadata.uid).pre_bind(stack)


class BindMethods(WasmPlugin):
    def bind(self, state: CycleState, pod: V1Pod, node_name: str) -> Status:
        stack = Stack(current_pod=pod, current_node_name=node_name)
        return self.pool.get_for_binding(pod.metadata.uid).bind(stack)


class PostBindMethods(WasmPlugin):
    def post_bind(self, state: CycleState, pod: V1Pod, node_name: str) -> None:
        """Call the guest's postbind, then give the pod's guest back to the pool."""
        uid = pod.metadata.uid
        try:
            if EXPORT_POST_BIND in self.exports:
                stack = Stack(current_pod=pod, current_node_name=node_name)
                err = self.pool.get_for_binding(uid).post_bind(stack)
                if err is not None:
                    log.error('"failed postbind" err="%s"', err)
        finally:
            self.pool.free_from_binding(uid)
