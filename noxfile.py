"""Sessions: ``nox -s step1`` .. ``stepN`` (every built step), ``tests``, ``lint``, ``apiserver``,
``diff``, ``scheduler``, ``bench``.

Arguments after ``--`` go to the program: ``nox -s step3 -- --seed 7 -v``,
``nox -s step5 -- --kubeconfig ~/.kube/config --context kind-minisched``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
# Bytecode of everything a session runs goes here, not into a __pycache__ beside each source:
# otherwise one run of the steps fills steps/*/__pycache__ and `diff -ruN steps/step4
# steps/step5` prints "Binary files ... differ" lines. A prefix rather than
# PYTHONDONTWRITEBYTECODE keeps a cache (the kubernetes client is some 2000 modules, which uv
# installs without bytecode: every subprocess the tests start would compile them again); pytest
# writes its rewritten test modules there too; and every subprocess inherits the variable.
PYCACHE = ROOT / ".nox" / "pycache"
sys.pycache_prefix = str(PYCACHE)  # and nox's own imports of this repository (minisched.steps)
sys.path.insert(0, str(ROOT))
from minisched.steps import STEPS  # noqa: E402  (the manifest needs no third-party imports)

nox.options.default_venv_backend = "none"  # every session uses the one shared venv below
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["step1"]

# One virtualenv for every session (260-375 MB, see the README), instead of one per session:
# following the README runs a dozen sessions, and a venv each cost 2.5 GB and an install each.
VENV = ROOT / ".nox" / "minisched"


def python(session: nox.Session) -> str:
    """The shared venv's interpreter, after creating the venv and installing the project into it
    (editable, with the dev extras) when that has not been done for this pyproject.toml.

    With uv on PATH, uv creates and fills the venv (much faster); otherwise virtualenv and pip,
    which come with nox.
    """
    bindir = "Scripts" if sys.platform == "win32" else "bin"
    interpreter = VENV / bindir / ("python.exe" if sys.platform == "win32" else "python")
    stamp = VENV / ".minisched-installed"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if interpreter.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return str(interpreter)
    uv = shutil.which("uv")
    if not interpreter.exists():
        if uv:
            session.run(uv, "venv", "--python", sys.executable, str(VENV), external=True)
        else:
            session.run(sys.executable, "-m", "virtualenv", "-q", str(VENV), external=True)
    if uv:
        install = [uv, "pip", "install", "--python", str(interpreter)]
    else:
        install = [str(interpreter), "-m", "pip", "install", "-q"]
    session.run(*install, "-e", ".[dev]", external=True)
    stamp.write_text(wanted)
    return str(interpreter)


def session_env(bindir: str) -> dict[str, str]:
    """What every session adds to the environment: the shared venv, its scripts (kubectl)
    first on PATH, and bytecode kept out of the source tree (see PYCACHE)."""
    return {
        "VIRTUAL_ENV": str(VENV),
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPYCACHEPREFIX": str(PYCACHE),
        # Some machines set PYTHONDONTWRITEBYTECODE=1 (container images often do; so did the
        # one these figures come from): then no bytecode is kept at all, and every process
        # compiles every module it imports again, the kubernetes client's some 2000 among
        # them. Measured here: importing the client and a step's scheduler took 4.8-6.2 s
        # against 2.0 s, the embedded API server's start 1.7 s against 0.35 s. Bytecode goes
        # to PYCACHE, never beside the sources, so keeping it here is safe; an empty value
        # is "not set" to Python.
        "PYTHONDONTWRITEBYTECODE": "",
    }


# How long a program may take to finish after Ctrl-C before nox terminates it. nox's default
# is 0.3 s, then SIGTERM: a runner cleaning up its scenario's objects and stopping its API
# server often takes longer, and was cut short with a non-zero status, so nox said
# "interrupted" even when the program would have ended with 0 (a --web run whose page the
# user closed, a scheduler alone). The programs bound their own cleanup (a few seconds).
INTERRUPT_TIMEOUT = 20.0


def run(session: nox.Session, *args: str, prog: str | None = None) -> None:
    """``python -m ...`` in the shared venv, with :func:`session_env`.

    ``prog`` is the command the user typed (``nox -s step5 --``): the program's usage line and
    argument errors name it instead of ``python -m ...`` (``MINISCHED_PROG``, read by
    minisched/runner.py).
    """
    interpreter = python(session)
    env = session_env(str(Path(interpreter).parent))
    if prog is not None:
        env["MINISCHED_PROG"] = prog
    session.run(
        interpreter,
        "-m",
        *args,
        external=True,
        env=env,
        interrupt_timeout=INTERRUPT_TIMEOUT,
    )


def make_step_session(number: int, title: str, built: bool) -> None:
    def step_session(session: nox.Session) -> None:
        if not built:
            session.error(f"step {number} ({title}) is not built yet")
        run(
            session,
            "minisched.runner",
            str(number),
            *session.posargs,
            prog=f"nox -s step{number} --",
        )

    step_session.__doc__ = f"Run step {number}: {title}."
    nox.session(name=f"step{number}")(step_session)


for _step in STEPS:
    make_step_session(_step.number, _step.title, _step.built)


def runnable_steps() -> str:
    return ", ".join(str(step.number) for step in STEPS if step.built)


def requested_sessions(argv: list[str]) -> list[str]:
    """The session names given with -s/-e/--session(s), before any ``--``, and $NOXSESSION."""
    if "--" in argv:
        argv = argv[: argv.index("--")]
    names, taking = [], False
    for arg in argv[1:]:
        if arg.startswith("-"):
            option, _, value = arg.partition("=")
            taking = option in ("-s", "-e", "--session", "--sessions") and not value
            if value and option in ("-s", "-e", "--session", "--sessions"):
                names += value.split(",")
        elif taking:
            names += arg.split(",")
    return names + [n for n in os.environ.get("NOXSESSION", "").split(",") if n]


def make_missing_step_session(name: str) -> None:
    def missing_step(session: nox.Session) -> None:
        session.error(
            f"there is no step {name.removeprefix('step')}; the steps are {runnable_steps()}"
        )

    nox.session(name=name)(missing_step)


# nox itself answers an unknown session with "Sessions not found" and nothing else: a session
# that names the steps is made for each step that was asked for and does not exist.
for _name in requested_sessions(sys.argv):
    if _name.startswith("step") and _name not in {f"step{s.number}" for s in STEPS}:
        make_missing_step_session(_name)


@nox.session
def scheduler(session: nox.Session) -> None:
    """Run one step's scheduler alone, like kube-scheduler: nox -s scheduler -- 5 --kubeconfig P."""
    usage = "say which step: nox -s scheduler -- N [--kubeconfig PATH] [--context C]"
    if not session.posargs:
        session.error(usage)
    number, *args = session.posargs
    step = next((s for s in STEPS if str(s.number) == number), None)
    if step is None:
        session.error(f"there is no step {number}; the steps are {runnable_steps()} ({usage})")
    if not step.built:
        session.error(
            f"step {number} ({step.title}) is not built yet; the steps are {runnable_steps()}"
        )
    run(session, f"steps.step{number}", *args, prog=f"nox -s scheduler -- {number}")


@nox.session
def tests(session: nox.Session) -> None:
    """Lint, then the whole test suite (pytest arguments after --)."""
    run(session, "ruff", "format", "--check", ".")
    run(session, "ruff", "check", ".")
    run(session, "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Format and lint every file (fixes what ruff can fix)."""
    run(session, "ruff", "format", ".")
    run(session, "ruff", "check", "--fix", ".")


@nox.session
def apiserver(session: nox.Session) -> None:
    """Run the embedded API server in the foreground; kubectl can talk to it.

    Its identity (certificate, token) and its objects are kept in ``.nox/apiserver/``, so a
    restarted server is the same cluster to kubectl and to a scheduler still running against
    it; ``rm -rf .nox/apiserver`` resets it.
    """
    kubeconfig = ROOT / ".nox" / "minisched.kubeconfig"
    state = ROOT / ".nox" / "apiserver"
    session.log(f"point kubectl at it:  kubectl --kubeconfig {kubeconfig} get nodes")
    session.log(f"state (certificate, token, objects) in {state}; rm -rf it to start afresh")
    # --tls: kubectl sends a bearer token only over TLS, so plain HTTP would get 401 from it.
    run(
        session,
        "minisched.apiserver",
        "--kubeconfig",
        str(kubeconfig),
        "--tls",
        "--state-dir",
        str(state),
        "--data-dir",
        str(state / "data"),
        *(session.posargs or ["--port", "6443"]),
    )


@nox.session
def diff(session: nox.Session) -> None:
    """Print the diff between two steps: nox -s diff -- 4 5 (or --write to refresh docs/diffs)."""
    run(session, "minisched.stepdiff", *(session.posargs or ["1", "2"]))


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark the steps and the API server, scheduler_perf style: nox -s bench -- --quick."""
    run(session, "minisched.bench", *session.posargs)
