"""Present the plugin only at the extension points its guest exports.

Upstream (kube-scheduler-wasm-extension): scheduler/plugin/mask.go (maskInterfaces).

The framework decides where a plugin runs by what it implements: here, whether the object has
a Protocol's methods (``isinstance(plugin, FilterPlugin)``); in Go, type assertions. A plugin
that had every method would run at every extension point, and a guest that only scores would
be asked to filter. So the plugin's class is put together from the classes of plugin.py, one
per extension point the guest exports, on top of WasmPlugin (Plugin, EnqueueExtensions and
PreFilter, always).

Differs from upstream: Go cannot build a type at run time, so mask.go lists the combinations
of five groups (filter: PreFilter+Filter+PostFilter+AddPod/RemovePod; score: PreScore+Score+
NormalizeScore; reserve; permit; bind: PreBind+Bind+PostBind) and a guest is presented with
the whole group of any function it exports, the others answering "nothing to do". With
Python's ``type()`` each export is its own class, so a guest that exports filter is no
PostFilter plugin here. Observable difference: upstream's filter-only guest is also a
PostFilter plugin whose empty answer counts as Success, which ends PostFilter before
DefaultPreemption runs; here DefaultPreemption runs.

Differs from upstream: a guest that exports permit, prebind, bind or postbind is also given
Reserve (for Unreserve), Permit and PostBind here, whether it exports them or not: they are
where the host moves the pod's guest into its binding cycle (Permit, still in the scheduling
cycle) and gives it back (PostBind, Unreserve). Upstream does this only in the functions the
guest exports, so a guest exporting bind without postbind keeps one instance per bound pod,
and one without permit takes its binding guest from the scheduling cycle then in progress.
"""

from __future__ import annotations

from functools import cache

from .guest import Interfaces, WasmError
from .plugin import (
    BindMethods,
    FilterMethods,
    NormalizeScoreMethods,
    PermitMethods,
    PostBindMethods,
    PostFilterMethods,
    PreBindMethods,
    PreFilterExtensionsMethods,
    PreScoreMethods,
    ReserveMethods,
    ScoreMethods,
    WasmPlugin,
)

# Each interface and the class that implements it.
_METHODS: list[tuple[Interfaces, type[WasmPlugin]]] = [
    (Interfaces.PRE_FILTER_EXTENSIONS, PreFilterExtensionsMethods),
    (Interfaces.FILTER, FilterMethods),
    (Interfaces.POST_FILTER, PostFilterMethods),
    (Interfaces.PRE_SCORE, PreScoreMethods),
    (Interfaces.SCORE, ScoreMethods),
    (Interfaces.SCORE_EXTENSIONS, NormalizeScoreMethods),
    (Interfaces.RESERVE, ReserveMethods),
    (Interfaces.PERMIT, PermitMethods),
    (Interfaces.PRE_BIND, PreBindMethods),
    (Interfaces.BIND, BindMethods),
    (Interfaces.POST_BIND, PostBindMethods),
]

# The interfaces that only come with another (upstream: the ones maskInterfaces masks off
# before it looks for a main one).
_COUPLED = (
    Interfaces.ENQUEUE_EXTENSIONS
    | Interfaces.PRE_FILTER_EXTENSIONS
    | Interfaces.PRE_FILTER
    | Interfaces.POST_FILTER
    | Interfaces.PRE_SCORE
    | Interfaces.SCORE_EXTENSIONS
    | Interfaces.PRE_BIND
    | Interfaces.POST_BIND
)

# The binding cycle's interfaces: a guest with any of them gets the host's bookkeeping.
_BINDING = Interfaces.PERMIT | Interfaces.PRE_BIND | Interfaces.BIND | Interfaces.POST_BIND


@cache
def mask_interfaces(guest_interfaces: Interfaces) -> type[WasmPlugin]:
    """The plugin class for a guest that implements ``guest_interfaces``.

    As upstream: a guest must export one of filter, score, reserve, permit or bind; the one
    exception is a guest that exports prefilter alone. A guest's prescore or normalizescore
    without score is not called.
    """
    main = guest_interfaces & ~_COUPLED
    if not main and guest_interfaces != Interfaces.PRE_FILTER:
        raise WasmError("wasm: filter, score, reserve, permit or bind must be exported")
    present = guest_interfaces
    if not present & Interfaces.SCORE:
        # PreScore and NormalizeScore only serve Score (upstream: the score group).
        present &= ~(Interfaces.PRE_SCORE | Interfaces.SCORE_EXTENSIONS)
    if present & _BINDING:
        present |= Interfaces.RESERVE | Interfaces.PERMIT | Interfaces.POST_BIND
    bases = tuple(cls for interface, cls in _METHODS if present & interface)
    names = [cls.__name__.removesuffix("Methods") for cls in bases]
    # The base comes last: the method classes come first in the method resolution order.
    return type(f"WasmPlugin[{','.join(names)}]", (*bases, WasmPlugin), {})
