"""The wasm plugin: scheduling logic in WebAssembly guests, loaded at run time.

Upstream: kubernetes-sigs/kube-scheduler-wasm-extension, scheduler/plugin (the Go host, which
embeds the wazero runtime into a custom kube-scheduler). This host runs the same guests,
unmodified, with wasmtime: a guest built for the Go host (TinyGo and its SDK, or hand-written
WebAssembly) is a plugin here too.

- plugin.py: the plugin, its args and its extension point methods (plugin.go, config.go,
  wasm.go, runtime.go);
- mask.py: the plugin's class, made of the extension points the guest exports (mask.go);
- guest.py: one instance of the guest, its exports and their packed results (guest.go);
- host.py: the functions the guest imports, and the buffer protocol (host.go, mem.go,
  cstring.go, clusterevent.go);
- pool.py: which instance serves which pod's cycle (pool.go).

Not implemented: several wasm plugins in one profile under names of their own (upstream's
scheduler registers a wasm plugin under each name its configuration gives one); here the
registry has one, ``wasm``.
"""

from __future__ import annotations

from typing import Any

from ...framework import Handle
from .guest import WasmError
from .plugin import PluginConfig, WasmPlugin, decode_config, new_from_config

NAME = "wasm"


def new(args: Any, handle: Handle) -> WasmPlugin:
    """The plugin factory: ``args`` is the pluginConfig's args as they are (a dict with
    ``guestURL``, ``guestConfig``, ``logSeverity``), or None (upstream: PluginFactory)."""
    return new_from_config(NAME, decode_config(NAME, args), handle)


__all__ = [
    "NAME",
    "PluginConfig",
    "WasmError",
    "WasmPlugin",
    "decode_config",
    "new",
    "new_from_config",
]
