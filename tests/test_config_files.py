"""The configuration files of every step from 14 on against the real kube-scheduler's: every
recorded case in tests/fixtures/config/ (see its README for the binaries and the command), run
against each step (ids ``step<N>/<case>``).

A case with an output (``<case>.out.yaml``) must load, validate and encode to the same
configuration, once both sides are projected onto what the steps have (``project``):

- the plugins the steps lack (``config.NOT_IMPLEMENTED_PLUGINS``, and v1.36's later default
  plugins ``V1_36_PLUGINS``) are dropped from every plugin list and from pluginConfig;
- the extension points the steps do not model (``UNMODELLED_EXTENSION_POINTS``, v1.36's) are
  dropped from ``plugins``.

Nothing else is dropped: the top-level fields, the profiles, the weights, the disabled lists,
the args of the steps' plugins and the extenders must match field for field. The text is
compared too: the oracle's own output, read and written again by ``config.dump_yaml``, is the
oracle's text.

A case with an error (``<case>.err``) must fail with the same text, from ``load_config`` or
from ``validate_kube_scheduler_configuration``; the cases whose error v1.23 raises later, when
it builds the framework (``FRAMEWORK_ERRORS``), must load and validate, and their plugin's own
validator must give the recorded text's end; the other errors v1.23 raises when it builds the
scheduler (``couldn't create scheduler: ``) come from building its extenders
(``extender.new_extenders``, from step 15). The cases a step does not match are xfail
(strict), each with its reason (``XFAIL``; step 14 reads no extender: ``EXTENDER_CASES``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import built_steps, step_module

FIXTURES = Path(__file__).parent / "fixtures" / "config"
STEPS = built_steps(14)

# The default plugins v1.36 has and v1.23 did not (and the steps do not).
V1_36_PLUGINS = frozenset({"SchedulingGates", "DynamicResources", "NodeDeclaredFeatures"})
DROPPED_PLUGINS = step_module(14, "config").NOT_IMPLEMENTED_PLUGINS | V1_36_PLUGINS
# The extension points v1.36's v1 has and the steps do not model.
UNMODELLED_EXTENSION_POINTS = frozenset({"preEnqueue", "placementGenerate", "placementScore"})

# What scheduler.New puts before the errors of building the scheduler.
SCHEDULER_PREFIX = "couldn't create scheduler: "
# The cases v1.23 rejects only when it builds the framework (the lead's runtime.py): the
# recorded error's end, after the framework's prefix, is what the plugin's validator says.
FRAMEWORK_PREFIX = (
    SCHEDULER_PREFIX + "initializing profiles: creating profile for scheduler name "
    "default-scheduler: "
)
FRAMEWORK_ERRORS: dict[str, str] = {
    # v1.23 does not validate NodeResourcesFit's args with the configuration (its validators'
    # map says "NodeResourcesFitArgs"): NewFit refuses them.
    "v1.23/err-bad-fit-args": 'initializing plugin "NodeResourcesFit": ',
    "v1.23/err-bad-rtcr-args": 'initializing plugin "NodeResourcesFit": ',
    # An unknown plugin: the framework's registry lookup.
    "v1.23/err-unknown-plugin": "",
}

XFAIL: dict[str, str] = {
    "v1.23/err-not-yaml": (
        "Differs from upstream: YAML syntax errors are PyYAML's words and line "
        "(go-yaml: 'did not find expected node content')"
    ),
    "v1.23/err-v1-in-v1.23": (
        "Differs from upstream: the steps also read kubescheduler.config.k8s.io/v1, which "
        "v1.23 does not have"
    ),
    "v1.36/err-v1beta3-in-v1.36": (
        "Differs from upstream: the steps still read v1beta3, which v1.36 no longer does"
    ),
}

# The cases about extenders, which step 14 keeps as the file gives them (dicts, neither
# checked nor defaulted): all but the one its schema still refuses (a map for the list).
NOT_IMPLEMENTED_EXTENDERS = "Not implemented in step 14: extenders (step 15)"
STEP14_PASSING_EXTENDER_CASES = frozenset({"v1.23/err-extender-not-a-list"})


def is_extender_case(case: str) -> bool:
    return "extender" in case


def cases() -> list[Any]:
    out = []
    for step in STEPS:
        for path in sorted(FIXTURES.glob("*/*.yaml")):
            if path.name.endswith(".out.yaml"):
                continue
            case = f"{path.parent.name}/{path.name.removesuffix('.yaml')}"
            reason = XFAIL.get(case)
            if step < 15 and is_extender_case(case) and case not in STEP14_PASSING_EXTENDER_CASES:
                reason = NOT_IMPLEMENTED_EXTENDERS
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(step, case, id=f"step{step}/{case}", marks=marks))
    return out


def project(obj: dict[str, Any]) -> dict[str, Any]:
    """A written configuration with what the steps do not have dropped (see the module's
    docstring)."""
    for prof in obj.get("profiles", []):
        plugins = prof.get("plugins", {})
        for point in UNMODELLED_EXTENSION_POINTS:
            plugins.pop(point, None)
        for plugin_set in plugins.values():
            for key in ("enabled", "disabled"):
                kept = [p for p in plugin_set.get(key, []) if p["name"] not in DROPPED_PLUGINS]
                if kept:
                    plugin_set[key] = kept
                else:
                    plugin_set.pop(key, None)
        configs = [pc for pc in prof.get("pluginConfig", []) if pc["name"] not in DROPPED_PLUGINS]
        if configs:
            prof["pluginConfig"] = configs
        else:
            prof.pop("pluginConfig", None)
    return obj


def load_and_validate(step: int, case: str) -> Any:
    """The case's configuration as the step loads it; raises its validation errors."""
    cfg = step_module(step, "config").load_config_from_file(str(FIXTURES / f"{case}.yaml"))
    agg = step_module(step, "validation").validate_kube_scheduler_configuration(cfg)
    if agg is not None:
        raise agg
    return cfg


@pytest.mark.parametrize("step,case", cases())
def test_config_file(step: int, case: str) -> None:
    config = step_module(step, "config")
    noderesources = step_module(step, "plugins.noderesources")
    out = FIXTURES / f"{case}.out.yaml"
    if out.exists():
        cfg = load_and_validate(step, case)
        want = project(yaml.safe_load(out.read_text()))
        got = project(yaml.safe_load(config.encode_config(cfg)))
        assert got == want
        return
    want_err = (FIXTURES / f"{case}.err").read_text().removesuffix("\n")
    if want_err.startswith(SCHEDULER_PREFIX) and case not in FRAMEWORK_ERRORS:
        # Refused when kube-scheduler builds its extenders (scheduler.New).
        cfg = load_and_validate(step, case)
        with pytest.raises(ValueError) as e:
            step_module(step, "extender").new_extenders(cfg)
        assert SCHEDULER_PREFIX + str(e.value) == want_err
        return
    if case in FRAMEWORK_ERRORS:
        cfg = load_and_validate(step, case)
        assert want_err.startswith(FRAMEWORK_PREFIX + FRAMEWORK_ERRORS[case])
        if FRAMEWORK_ERRORS[case]:
            fit_args = next(
                pc.args for pc in cfg.profiles[0].plugin_config if pc.name == "NodeResourcesFit"
            )
            agg = noderesources.validate_node_resources_fit_args(None, fit_args)
            got = str(agg) if agg is not None else "(valid args)"
            # NewFit checks the strategy's type first, then the args.
            strategy = fit_args.scoring_strategy
            if strategy is not None and strategy.type not in (
                "LeastAllocated",
                "MostAllocated",
                "RequestedToCapacityRatio",
            ):
                got = f"scoring strategy {strategy.type} is not supported"
            assert want_err == FRAMEWORK_PREFIX + FRAMEWORK_ERRORS[case] + got
        return
    with pytest.raises(ValueError) as e:
        load_and_validate(step, case)
    got = str(e.value)
    if case.endswith("err-duplicate-profiles"):
        # Upstream prints a *field.Path's address; no two runs agree on it.
        got, want_err = (re.sub(r"0x[0-9a-f]+", "0x...", s) for s in (got, want_err))
    assert got == want_err


@pytest.mark.parametrize(
    "out", sorted(FIXTURES.glob("*/*.out.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_dump_yaml_writes_as_kube_scheduler(out: Path) -> None:
    """dump_yaml writes a document as kube-scheduler does: key order, quoting, indentation."""
    text = out.read_text()
    assert step_module(STEPS[-1], "config").dump_yaml(yaml.safe_load(text)) == text
