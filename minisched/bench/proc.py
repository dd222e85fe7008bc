"""CPU seconds and memory of a process, read from ``/proc`` (Linux); stopping it.

Upstream counterpart: none in scheduler_perf (a Go benchmark reads its own runtime metrics);
this plays the part of ``/proc/<pid>/status`` readers such as ``ps`` and cAdvisor.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def status_kib(pid: int, field: str) -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` such as ``VmHWM`` (peak RSS), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident set size (``VmHWM``) in MiB, or None if unknown."""
    kib = status_kib(pid, "VmHWM")
    return None if kib is None else round(kib / 1024, 1)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds the process has used so far (``/proc/<pid>/stat``), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # The command name (field 2) may contain spaces; everything after ")" is fixed.
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / _TICKS


def rss_mib(pid: int) -> float | None:
    """The process's resident set size now (``VmRSS``) in MiB, or None if unknown."""
    kib = status_kib(pid, "VmRSS")
    return None if kib is None else round(kib / 1024, 1)


# Seconds a scheduler (a step's, or kube-scheduler) gets to exit after SIGTERM.
STOP_TIMEOUT = 10.0


def stop_process(
    proc: subprocess.Popen[Any], pid: int | None = None, timeout: float = STOP_TIMEOUT
) -> int | None:
    """SIGTERM to the scheduler (every step, and kube-scheduler, exits cleanly on it; under
    py-spy, py-spy then writes its profile and exits), then SIGKILL; the exit status."""
    if proc.poll() is None:
        try:
            os.kill(pid or proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
    return proc.returncode
