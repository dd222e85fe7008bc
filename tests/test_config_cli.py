"""Step 14's ``--config`` and ``--write-config-to`` as a user meets them: the runner
(``python -m minisched.runner 14``, what ``nox -s step14`` runs) and the scheduler alone
(``python -m steps.step14``), each run as a process of its own.

Upstream counterpart: kube-scheduler's ``--config`` and ``--write-config-to``
(cmd/kube-scheduler/app/options: Options.Complete, loadConfigFromFile, Validate,
LogOrWriteConfig). What is compared, and why:

- ``--write-config-to``: the YAML written (to standard output with ``-``, else to the file)
  is a configuration ``load_config`` reads back to the one the run would use (the runner's:
  the scenario's CONFIG; the scheduler alone's: the default, its profile named ``minisched``),
  as kube-scheduler's output is one it reads again; exit 0, nothing on stderr.
- A file that cannot be used (an unknown field, an invalid percentageOfNodesToScore, an
  enabled plugin that does not exist, a missing file) ends the run with status 1 and exactly
  one line on stderr, ``error: ...``, never a traceback; so do upstream's texts that span
  lines (a duplicate key, a missing kind), checked where the CLI takes its message from.
- ``--config`` on a step that reads no configuration: status 2, one line naming the steps
  that do.
- What the file asks for and minisched does not do is said, one ``config:`` line each:
  ``--kubeconfig`` winning over clientConnection.kubeconfig (as kube-scheduler's flag does),
  leader election, a client rate limit.
- ``nox -s step14 -- --config FILE`` runs the scenario with the user's file: with both of its
  profiles LeastAllocated, the pack-* pods spread, where the scenario's own CONFIG packs them
  on one node.

Each process costs about two seconds: ten of them, the rest is checked in this process.
"""

from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest

import scenarios.step14
from minisched import cli, steps
from steps.step14 import config
from steps.step14.config import KubeSchedulerConfiguration
from steps.step14.scheduler import default_configuration

TIMEOUT = 60
PROG_ENV = "MINISCHED_PROG"  # set by the noxfile, read by minisched/cli.py
STEP = steps.get(14)

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"
NO_LEADER_ELECTION = "leaderElection:\n  leaderElect: false\n"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m ARGS`` from the project root, as a user runs it: without a MINISCHED_PROG
    or a KUBECONFIG of the caller's (a test run under nox; a shell with a cluster)."""
    env = {k: v for k, v in os.environ.items() if k not in (PROG_ENV, "KUBECONFIG")}
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=steps.ROOT,
        env=env,
    )


def as_written(cfg: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration:
    """``cfg`` as ``--write-config-to`` writes it, and reading the YAML gives it back: each
    profile as its framework captures it (the args of the plugins it enables, sorted by name:
    ``completed_profile``), every plugin with a number for its weight (the internal type's
    int32, 0 where the file gave none)."""
    written = copy.deepcopy(cfg)
    written.profiles = [config.completed_profile(p) for p in written.profiles]
    for profile in written.profiles:
        assert profile.plugins is not None
        for point, _ in config.EXTENSION_POINTS:
            plugin_set = getattr(profile.plugins, point)
            for plugin in plugin_set.enabled + plugin_set.disabled:
                plugin.weight = plugin.weight or 0
    return written


def assert_reads_back(text: str, expected: KubeSchedulerConfiguration) -> None:
    """The written YAML reads back to ``expected``, and writes again to the same text."""
    read = config.load_config(text)
    assert read == as_written(expected), text
    assert config.encode_config(read) == text


# --- --write-config-to ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "to_file"),
    [("minisched.runner", False), ("steps.step14", False), ("steps.step14", True)],
    ids=["runner-stdout", "scheduler-alone-stdout", "scheduler-alone-file"],
)
def test_write_config_to_writes_what_it_reads_back(
    module: str, to_file: bool, tmp_path: Path
) -> None:
    out = tmp_path / "written.yaml"
    argv = [module] + (["14"] if module == "minisched.runner" else [])
    done = run(*argv, "--write-config-to", str(out) if to_file else "-")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    if to_file:
        assert done.stdout == ""
        text = out.read_text()
    else:
        text = done.stdout
    if module == "minisched.runner":
        expected = config.load_config(scenarios.step14.CONFIG)
        assert [p.scheduler_name for p in expected.profiles] == [
            "minisched-spread",
            "minisched-pack",
        ]
    else:
        expected = default_configuration()
        assert [p.scheduler_name for p in expected.profiles] == ["minisched"]
    assert_reads_back(text, expected)


# --- a file that cannot be used: status 1, one line --------------------------------------------


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed run printed on stderr."""
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "text", "error"),
    [
        pytest.param(
            ["minisched.runner", "14"],
            HEADER + "foo: 1\n",
            '{path}: strict decoding error: unknown field "foo"',
            id="unknown-field-runner",
        ),
        pytest.param(
            ["steps.step14", "--embedded"],
            HEADER + "percentageOfNodesToScore: 101\n",
            "{path}: invalid KubeSchedulerConfiguration: percentageOfNodesToScore: Invalid"
            " value: 101: not in valid range [0-100]",
            id="invalid-percentage-scheduler-alone",
        ),
        pytest.param(
            # Found when the framework is built, as upstream's scheduler.New builds it: before
            # any cluster is reached (the runner builds the profiles once, offline).
            ["minisched.runner", "14", "--embedded"],
            HEADER
            + NO_LEADER_ELECTION
            + "profiles:\n- schedulerName: mine\n  plugins:\n    filter:\n      enabled:\n"
            "      - name: Nope\n",
            "{path}: couldn't create scheduler: initializing profiles: creating profile for"
            ' scheduler name mine: FilterPlugin "Nope" does not exist',
            id="no-such-plugin-runner",
        ),
        pytest.param(
            ["steps.step14", "--embedded"],
            None,
            "{path}: No such file or directory",
            id="missing-file-scheduler-alone",
        ),
    ],
)
def test_a_file_that_cannot_be_used_is_one_line(
    argv: list[str], text: str | None, error: str, tmp_path: Path
) -> None:
    path = tmp_path / "config.yaml"
    if text is not None:
        path.write_text(text)
    done = run(*argv, "--config", str(path))
    assert done.returncode == 1, done.stderr
    assert one_error_line(done) == "error: " + error.format(path=path)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        (HEADER + "parallelism: 1\nparallelism: 2\n", "strict decoding error: yaml: unmarshal"),
        ("apiVersion: kubescheduler.config.k8s.io/v1beta3\n", "Object 'Kind' is missing in"),
    ],
    ids=["duplicate-key", "missing-kind"],
)
def test_upstreams_texts_of_several_lines_are_one(text: str, start: str, tmp_path: Path) -> None:
    """Upstream's own texts span lines (the list of duplicate keys) or quote the file (a
    missing kind): the CLI's message, which it prints after ``error: ``, is one line."""
    path = tmp_path / "config.yaml"
    path.write_text(text)
    args = argparse.Namespace(config=str(path), write_config_to=None)
    with pytest.raises(cli.BadConfiguration) as caught:
        cli.step_configuration(STEP, args)
    message = str(caught.value)
    assert message.startswith(f"{path}: {start}") and "\n" not in message, message


def test_a_step_that_reads_no_configuration_says_which_do(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEADER)
    done = run("minisched.runner", "13", "--config", str(path))
    assert done.returncode == 2, done.stderr
    having = ", ".join(str(s.number) for s in steps.built() if cli.has_setting(s, "config"))
    assert one_error_line(done) == (
        "error: step 13 reads no KubeSchedulerConfiguration (--config, --write-config-to);"
        f" the steps that do: {having}"
    )


# --- what the file asks for and minisched does not do: one `config:` line each -------------------


@pytest.mark.parametrize(
    ("flag", "from_file", "kubeconfig", "line"),
    [
        (None, "", None, None),
        (None, "/f", "/f", "using clientConnection.kubeconfig /f of the configuration file"),
        ("/f", "/f", "/f", "using clientConnection.kubeconfig /f of the configuration file"),
        (
            "/flag",
            "/f",
            "/flag",
            "--kubeconfig /flag wins over clientConnection.kubeconfig /f of the configuration file",
        ),
    ],
    ids=["neither", "file-only", "both-the-same", "flag-wins"],
)
def test_cluster_of_lets_the_flag_win(
    flag: str | None, from_file: str, kubeconfig: str | None, line: str | None
) -> None:
    cfg = default_configuration()
    cfg.client_connection.kubeconfig = from_file
    args = argparse.Namespace(kubeconfig=flag)
    assert cli.cluster_of(args, cfg) == ([line] if line else [])
    assert args.kubeconfig == kubeconfig


def test_the_scheduler_alone_says_what_it_does_not_apply(tmp_path: Path) -> None:
    """A file naming one kubeconfig, beside a ``--kubeconfig`` naming another: the flag's is
    the one used (the run ends on it: no such file), and one line says so. The file leaves
    leader election on (its default) and sets a client rate limit: one line each."""
    path = tmp_path / "config.yaml"
    from_file, flag = tmp_path / "from-file.kubeconfig", tmp_path / "flag.kubeconfig"
    path.write_text(
        HEADER + f"clientConnection:\n  kubeconfig: {from_file}\n  qps: 5\n  burst: 10\n"
    )
    done = run("steps.step14", "--config", str(path), "--kubeconfig", str(flag))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    *notes, error = done.stderr.splitlines()
    wanted = [
        f"config: --kubeconfig {flag} wins over clientConnection.kubeconfig {from_file}",
        "config: leaderElection.leaderElect is true: minisched runs without leader election",
        "config: clientConnection.qps 5 and burst 10 are not applied",
    ]
    for words in wanted:
        assert sum(words in note for note in notes) == 1, done.stderr
    assert len(notes) == len(wanted), done.stderr
    assert error == f"error: --kubeconfig names {flag}: no such file", done.stderr


# --- nox -s step14 -- --config FILE -------------------------------------------------------------


def final_bindings(text: str) -> dict[str, str]:
    """The run's "where each pod went" table: pod -> node, or "(pending)"."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "where each pod went" in line)
    rows: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if line.startswith("└"):
            break
        cells = [c.strip() for c in line.strip("│").split("│")]
        if line.startswith("│") and len(cells) >= 2:
            rows[cells[0]] = cells[1]
    return rows


def test_nox_runs_the_scenario_with_the_users_file(tmp_path: Path) -> None:
    """The user's file names the scenario's two profiles, both with the defaults: both score
    LeastAllocated, and the pack-* pods spread as the spread-* pods do. The file leaves
    leader election on and sets a client rate limit: one ``config:`` line each."""
    path = tmp_path / "config.yaml"
    path.write_text(
        HEADER + "clientConnection:\n  qps: 5\n  burst: 10\nprofiles:\n"
        f"- schedulerName: {scenarios.step14.SPREAD}\n- schedulerName: {scenarios.step14.PACK}\n"
    )
    done = run("nox", "-s", "step14", "--", "--config", str(path))
    # nox runs the program with its stderr sent to nox's stdout (nox's own lines: stderr).
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout, done.stdout
    notes = [line for line in done.stdout.splitlines() if line.startswith("config: ")]
    assert len(notes) == 2, done.stdout
    assert "minisched runs without leader election" in notes[0], done.stdout
    assert notes[1].startswith("config: clientConnection.qps 5 and burst 10"), done.stdout
    bindings = final_bindings(done.stdout)
    pods = scenarios.step14.PODS
    assert set(bindings) == {"stranger", *pods}, done.stdout
    assert bindings["stranger"] == "(pending)", done.stdout
    assert all(bindings[p] in scenarios.step14.NODES for p in pods), done.stdout
    packed = {bindings[p] for p, profile in pods.items() if profile == scenarios.step14.PACK}
    assert len(packed) > 1, f"pack-* all on {packed}: the file was not used\n{done.stdout}"
