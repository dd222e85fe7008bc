"""One instance of the guest, and how each of its exports is called and its result decoded.

Upstream (kube-scheduler-wasm-extension): scheduler/plugin/guest.go (compileGuest, newGuest,
the guest's call functions, decorateError, detectInterfaces).

The guest exports one function per extension point, each taking no parameters. What comes
back is a status code (i32), or two numbers packed in an i64: Score returns the score in the
high 32 bits and the code in the low ones; PostFilter the NominatingMode and the code; Permit
the code and the timeout in milliseconds. Everything else (the reason, node names, scores)
the guest hands over through host functions before it returns (see host.py).
"""

from __future__ import annotations

import enum
import os
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from wasmtime import (
    Engine,
    ExitTrap,
    Func,
    FuncType,
    Instance,
    Linker,
    Module,
    Store,
    Trap,
    TrapCode,
    WasiConfig,
    WasmtimeError,
)

from ...framework import (
    Code,
    NodeScore,
    NominatingInfo,
    NominatingMode,
    PostFilterResult,
    Status,
    as_status,
)
from .host import Stack, set_current_stack

# The guest's exports (upstream: guestExport*).
EXPORT_MEMORY = "memory"
EXPORT_ENQUEUE = "enqueue"
EXPORT_PRE_FILTER = "prefilter"
EXPORT_FILTER = "filter"
EXPORT_POST_FILTER = "postfilter"
EXPORT_PRE_SCORE = "prescore"
EXPORT_SCORE = "score"
EXPORT_NORMALIZE_SCORE = "normalizescore"
EXPORT_RESERVE = "reserve"
EXPORT_UNRESERVE = "unreserve"
EXPORT_PERMIT = "permit"
EXPORT_PRE_BIND = "prebind"
EXPORT_BIND = "bind"
EXPORT_POST_BIND = "postbind"
EXPORT_ADD_POD = "addpod"
EXPORT_REMOVE_POD = "removepod"


class Interfaces(enum.IntFlag):
    """What the guest implements, from its exports (upstream: interfaces, in mask.go)."""

    ENQUEUE_EXTENSIONS = enum.auto()
    PRE_FILTER_EXTENSIONS = enum.auto()
    PRE_FILTER = enum.auto()
    FILTER = enum.auto()
    POST_FILTER = enum.auto()
    PRE_SCORE = enum.auto()
    SCORE_EXTENSIONS = enum.auto()
    SCORE = enum.auto()
    RESERVE = enum.auto()
    PERMIT = enum.auto()
    PRE_BIND = enum.auto()
    BIND = enum.auto()
    POST_BIND = enum.auto()


# Each export: the interface it implements and its result types ("" none, "i32", "i64").
EXPORTS: dict[str, tuple[Interfaces, str]] = {
    EXPORT_ENQUEUE: (Interfaces.ENQUEUE_EXTENSIONS, ""),
    EXPORT_PRE_FILTER: (Interfaces.PRE_FILTER, "i32"),
    EXPORT_FILTER: (Interfaces.FILTER, "i32"),
    EXPORT_POST_FILTER: (Interfaces.POST_FILTER, "i64"),
    EXPORT_PRE_SCORE: (Interfaces.PRE_SCORE, "i32"),
    EXPORT_SCORE: (Interfaces.SCORE, "i64"),
    EXPORT_NORMALIZE_SCORE: (Interfaces.SCORE_EXTENSIONS, "i32"),
    EXPORT_RESERVE: (Interfaces.RESERVE, "i32"),
    EXPORT_UNRESERVE: (Interfaces.RESERVE, ""),
    EXPORT_PERMIT: (Interfaces.PERMIT, "i64"),
    EXPORT_PRE_BIND: (Interfaces.PRE_BIND, "i32"),
    EXPORT_BIND: (Interfaces.BIND, "i32"),
    EXPORT_POST_BIND: (Interfaces.POST_BIND, ""),
    EXPORT_ADD_POD: (Interfaces.PRE_FILTER_EXTENSIONS, "i32"),
    EXPORT_REMOVE_POD: (Interfaces.PRE_FILTER_EXTENSIONS, "i32"),
}


class WasmError(Exception):
    """An error of the wasm plugin, worded as upstream's."""


def detect_interfaces(module: Module) -> Interfaces:
    """What the guest implements, checking each plugin export's signature (upstream:
    detectInterfaces). Raises when an export has the wrong signature or there is none."""
    found = Interfaces(0)
    for export in module.exports:
        if export.name not in EXPORTS or not isinstance(export.type, FuncType):
            continue
        interface, result = EXPORTS[export.name]
        results = "".join(str(t) for t in export.type.results)
        if export.type.params or results != result:
            # Upstream's text for addpod and removepod says "() -> ()" although they return i32.
            shown = "" if export.name in (EXPORT_ADD_POD, EXPORT_REMOVE_POD) else result
            raise WasmError(
                f"wasm: guest exports the wrong signature for func[{export.name}]. "
                f"should be () -> ({shown})"
            )
        found |= interface
    if not found:
        raise WasmError("wasm: guest does not export any plugin functions")
    return found


def compile_guest(engine_compile: Callable[[], Module]) -> Module:
    """Compile the guest and check it exports its memory (upstream: compileGuest)."""
    try:
        module = engine_compile()
    except WasmtimeError as e:
        raise WasmError(f"wasm: error compiling guest: {e}") from e
    if not any(e.name == EXPORT_MEMORY for e in module.exports):
        raise WasmError(f"wasm: guest doesn't export memory[{EXPORT_MEMORY}]")
    return module


# --- errors -------------------------------------------------------------------------------------

# wazero's words for the traps a guest may hit, so errors read as upstream's.
_TRAP_TEXT = {
    TrapCode.UNREACHABLE: "unreachable",
    TrapCode.MEMORY_OUT_OF_BOUNDS: "out of bounds memory access",
    TrapCode.INTEGER_DIVISION_BY_ZERO: "integer divide by zero",
    TrapCode.INTEGER_OVERFLOW: "integer overflow",
    TrapCode.BAD_CONVERSION_TO_INTEGER: "invalid conversion to integer",
    TrapCode.STACK_OVERFLOW: "stack overflow",
    TrapCode.TABLE_OUT_OF_BOUNDS: "invalid table access",
    TrapCode.INDIRECT_CALL_TO_NULL: "invalid table access",
    TrapCode.BAD_SIGNATURE: "indirect call type mismatch",
}


def describe(err: BaseException) -> str:
    """An error from a call into the guest, worded as wazero words it: ``wasm error: <trap>``
    and a stack trace of ``<module>.<function>()`` lines, innermost first.

    Differs from upstream: wazero writes each frame's signature after it
    (``panic_on_filter.$1() i32``); wasmtime does not give it, so frames end at ``()``.
    A Python exception raised by a host function (upstream: a Go panic) is its message.
    """
    if isinstance(err, Trap):
        code = err.trap_code
        text = _TRAP_TEXT.get(code, err.message) if code is not None else err.message
        lines = [f"wasm error: {text}", "wasm stack trace:"]
        for frame in err.frames:
            function = frame.func_name or f"${frame.func_index}"
            lines.append(f"\t{frame.module_name or ''}.{function}()")
        return "\n".join(lines)
    return str(err)


class GuestOutput:
    """What the guest writes to stdout and stderr (a TinyGo panic prints its message there),
    in a file of its own; ``decode`` reads what came since the last ``clear``.

    A file, not wasmtime's ``stdout_custom`` callback: wasmtime may call that Python function
    from a thread of its runtime, and a call while the interpreter shuts down aborts the
    process."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="minisched-wasm-guest-")
        os.close(fd)
        self.start = 0
        weakref.finalize(self, os.unlink, self.path)

    def decode(self, errors: str = "strict") -> str:
        with open(self.path, "rb") as f:
            f.seek(self.start)
            return f.read().decode(errors=errors)

    def clear(self) -> None:
        self.start = os.path.getsize(self.path)


def decorate_error(out: GuestOutput, fn: str, err: BaseException) -> WasmError:
    """The error of export ``fn``, with what the guest printed before it failed (a TinyGo
    panic prints its message, then traps) (upstream: decorateError)."""
    detail = out.decode(errors="replace")
    if detail:
        return WasmError(f"wasm: {fn} error: {detail}\n{describe(err)}")
    return WasmError(f"wasm: {fn} error: {describe(err)}")


# --- results ------------------------------------------------------------------------------------


def _int32(value: int) -> int:
    """The low 32 bits of ``value`` as a signed int32 (Go: ``int32(stack[0])``)."""
    return ((value & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


def new_status(code: int, reason: str) -> Status:
    """The guest's status (upstream: framework.NewStatus(Code(code), reason)).

    Differs from upstream: a code outside the six known ones is kept by upstream as it is (and
    the framework then treats it as an error); this step's Code is an enum of the six, so such
    a code becomes Error, its number in the message.
    """
    try:
        known = Code(code)
    except ValueError:
        return Status(Code.ERROR, [f"wasm: guest returned unknown status code {code}"])
    return Status(known, [reason] if reason else [])


# --- one instance -------------------------------------------------------------------------------


@dataclass
class Guest:
    """One instance of the guest module, in a Store of its own (upstream: guest).

    ``out`` collects what the guest writes to stdout and stderr during a call: a TinyGo
    panic's message, shown with the error. It is cleared after every call.
    """

    store: Store
    instance: Instance
    funcs: dict[str, Func]
    out: GuestOutput

    def _call(self, name: str, stack: Stack) -> int | None:
        """Call export ``name`` with ``stack`` as the host functions' view of the call."""
        set_current_stack(stack)
        try:
            result: int | None = self.funcs[name](self.store)
            return result
        finally:
            set_current_stack(None)

    def _status_call(self, name: str, stack: Stack) -> Status:
        """Call an export that returns a status code (prefilter, filter, prebind...)."""
        try:
            code = self._call(name, stack)
        except Exception as e:
            return as_status(decorate_error(self.out, name, e))
        finally:
            self.out.clear()
        return new_status(_int32(code or 0), stack.result_status_reason)

    def events_to_register(self, stack: Stack) -> None:
        """Call enqueue; the events land in ``stack.result_cluster_events``. A failure
        raises: upstream's EventsToRegister cannot return an error, so it panics."""
        try:
            self._call(EXPORT_ENQUEUE, stack)
        except Exception as e:
            raise decorate_error(self.out, EXPORT_ENQUEUE, e) from e
        finally:
            self.out.clear()

    def pre_filter(self, stack: Stack) -> tuple[list[str] | None, Status]:
        status = self._status_call(EXPORT_PRE_FILTER, stack)
        if status.code == Code.ERROR and status.err is not None:
            return None, status
        return stack.result_node_names, status

    def filter(self, stack: Stack) -> Status:
        return self._status_call(EXPORT_FILTER, stack)

    def post_filter(self, stack: Stack) -> tuple[PostFilterResult | None, Status]:
        try:
            packed = self._call(EXPORT_POST_FILTER, stack) or 0
        except Exception as e:
            return None, as_status(decorate_error(self.out, EXPORT_POST_FILTER, e))
        finally:
            self.out.clear()
        mode = packed >> 32
        try:
            nominating_mode = NominatingMode(mode)
        except ValueError:
            # Differs from upstream (which keeps any int32): an unknown mode is Noop here.
            nominating_mode = NominatingMode.NOOP
        info = NominatingInfo(stack.result_nominated_node_name, nominating_mode)
        return PostFilterResult(info), new_status(_int32(packed), stack.result_status_reason)

    def pre_score(self, stack: Stack) -> Status:
        return self._status_call(EXPORT_PRE_SCORE, stack)

    def score(self, stack: Stack) -> tuple[int, Status]:
        try:
            packed = self._call(EXPORT_SCORE, stack) or 0
        except Exception as e:
            return 0, as_status(decorate_error(self.out, EXPORT_SCORE, e))
        finally:
            self.out.clear()
        return packed >> 32, new_status(_int32(packed), stack.result_status_reason)

    def normalize_score(self, stack: Stack) -> tuple[list[NodeScore], Status]:
        """The guest's scores, or the input's when it wrote none (it may not implement
        NormalizeScore although it exports the function)."""
        status = self._status_call(EXPORT_NORMALIZE_SCORE, stack)
        scores = stack.node_score_list or []
        normalized = stack.result_normalized_scores
        if status.err is not None or not normalized:
            return scores, status
        return [NodeScore(name, score) for name, score in normalized.items()], status

    def reserve(self, stack: Stack) -> Status:
        return self._status_call(EXPORT_RESERVE, stack)

    def _void_call(self, name: str, stack: Stack) -> BaseException | None:
        """Call an export that returns nothing (unreserve, postbind); the error, if any: the
        framework's Unreserve and PostBind cannot fail, so the caller logs it."""
        try:
            self._call(name, stack)
        except Exception as e:
            return decorate_error(self.out, name, e)
        finally:
            self.out.clear()
        return None

    def unreserve(self, stack: Stack) -> BaseException | None:
        return self._void_call(EXPORT_UNRESERVE, stack)

    def permit(self, stack: Stack) -> tuple[Status, float]:
        """The status and the timeout, in seconds (the guest gives milliseconds)."""
        try:
            packed = self._call(EXPORT_PERMIT, stack) or 0
        except Exception as e:
            return as_status(decorate_error(self.out, EXPORT_PERMIT, e)), 0.0
        finally:
            self.out.clear()
        timeout_ms = packed & 0xFFFFFFFF
        return new_status(packed >> 32, stack.result_status_reason), timeout_ms / 1000

    def pre_bind(self, stack: Stack) -> Status:
        return self._status_call(EXPORT_PRE_BIND, stack)

    def bind(self, stack: Stack) -> Status:
        return self._status_call(EXPORT_BIND, stack)

    def post_bind(self, stack: Stack) -> BaseException | None:
        return self._void_call(EXPORT_POST_BIND, stack)

    def add_pod(self, stack: Stack) -> Status:
        return self._status_call(EXPORT_ADD_POD, stack)

    def remove_pod(self, stack: Stack) -> Status:
        return self._status_call(EXPORT_REMOVE_POD, stack)


def new_guest(
    engine: Engine, linker: Linker, module: Module, args: list[str], instance_name: str
) -> Guest:
    """Instantiate the module in a new Store and run its ``_start`` (TinyGo's main, which
    registers the plugin), as wazero's InstantiateModule does (upstream: newGuest).
    ``instance_name`` names the instance in errors, as upstream names each by a counter.

    A ``_start`` that ends in ``proc_exit(0)`` is a normal end (the "advanced" example does);
    any other failure raises, with what the guest printed.
    """
    out = GuestOutput()
    wasi = WasiConfig()
    wasi.argv = args
    wasi.stdout_file = out.path
    wasi.stderr_file = out.path
    store = Store(engine)
    store.set_wasi(wasi)
    try:
        instance = linker.instantiate(store, module)
        exports = instance.exports(store)
        start = exports.get("_start")
        if isinstance(start, Func):
            try:
                start(store)
            except ExitTrap as e:
                if e.code != 0:
                    raise
    except Exception as e:
        text = describe(e)
        if isinstance(e, Trap):
            # wazero says which function of which instance failed.
            text = f"module[{instance_name}] function[_start] failed: {text}"
        raise decorate_error(out, "instantiate", WasmError(text)) from e
    out.clear()
    funcs = {name: f for name in EXPORTS if isinstance(f := exports.get(name), Func)}
    return Guest(store, instance, funcs, out)
