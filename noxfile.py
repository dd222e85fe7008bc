"""Sessions: ``nox -s step1`` .. ``step8``, ``tests``, ``lint``, ``apiserver``, ``diff``, ``bench``.

Arguments after ``--`` go to the program: ``nox -s step3 -- --seed 7 -v``,
``nox -s step5 -- --kubeconfig ~/.kube/config --context kind-minisched``.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT))
from minisched.steps import STEPS  # noqa: E402  (the manifest needs no third-party imports)

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["step1"]


def install(session: nox.Session, extras: str = "") -> None:
    """Install the project editable (code changes need no reinstall), with optional extras.

    A reused virtualenv is left alone while pyproject.toml is unchanged: pip would only find
    everything installed already, and that check costs seconds on every warm run.
    """
    requirement = f".[{extras}]" if extras else "."
    venv = getattr(session.virtualenv, "location", None)
    stamp = Path(venv) / ".minisched-installed" if venv else None
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + requirement.encode())
    if stamp and stamp.is_file() and stamp.read_text() == wanted.hexdigest():
        return
    session.install("-e", requirement)
    if stamp:
        stamp.write_text(wanted.hexdigest())


def make_step_session(number: int, title: str, built: bool) -> None:
    def step_session(session: nox.Session) -> None:
        if not built:
            session.error(f"step {number} ({title}) is not built yet")
        install(session)
        session.run("python", "-m", "minisched.runner", str(number), *session.posargs)

    step_session.__doc__ = f"Run step {number}: {title}."
    nox.session(name=f"step{number}", python=False if not built else None)(step_session)


for _step in STEPS:
    make_step_session(_step.number, _step.title, _step.built)


@nox.session
def scheduler(session: nox.Session) -> None:
    """Run one step's scheduler alone, like kube-scheduler: nox -s scheduler -- 5 --kubeconfig P."""
    if not session.posargs or not session.posargs[0].isdigit():
        session.error("say which step: nox -s scheduler -- N [--kubeconfig PATH] [--context C]")
    install(session)
    number, *args = session.posargs
    session.run("python", "-m", f"steps.step{number}", *args)


@nox.session
def tests(session: nox.Session) -> None:
    """Lint, then the whole test suite (pytest arguments after --)."""
    install(session, "dev")
    session.run("ruff", "format", "--check", ".")
    session.run("ruff", "check", ".")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Format and lint every file (fixes what ruff can fix)."""
    session.install("ruff")
    session.run("ruff", "format", ".")
    session.run("ruff", "check", "--fix", ".")


@nox.session
def apiserver(session: nox.Session) -> None:
    """Run the embedded API server in the foreground; kubectl can talk to it."""
    install(session)
    kubeconfig = ROOT / ".nox" / "minisched.kubeconfig"
    session.log(f"point kubectl at it:  kubectl --kubeconfig {kubeconfig} get nodes")
    # --tls: kubectl sends a bearer token only over TLS, so plain HTTP would get 401 from it.
    session.run(
        "python",
        "-m",
        "minisched.apiserver",
        "--kubeconfig",
        str(kubeconfig),
        "--tls",
        *(session.posargs or ["--port", "6443"]),
    )


@nox.session
def diff(session: nox.Session) -> None:
    """Print the diff between two steps: nox -s diff -- 4 5 (or --write to refresh docs/diffs)."""
    install(session)
    session.run("python", "-m", "minisched.stepdiff", *(session.posargs or ["1", "2"]))


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark the steps and the API server, scheduler_perf style: nox -s bench -- --quick."""
    install(session)
    session.run("python", "-m", "minisched.bench", *session.posargs)
