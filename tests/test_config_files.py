"""Step 14's configuration files against the real kube-scheduler's: every recorded case in
tests/fixtures/config/ (see its README for the binaries and the command).

A case with an output (``<case>.out.yaml``) must load, validate and encode to the same
configuration, once both sides are projected onto what step 14 has (``project``):

- the plugins step 14 lacks (``config.NOT_IMPLEMENTED_PLUGINS``, and v1.36's later default
  plugins ``V1_36_PLUGINS``) are dropped from every plugin list and from pluginConfig;
- the extension points step 14 does not model (``UNMODELLED_EXTENSION_POINTS``, v1.36's) are
  dropped from ``plugins``.

Nothing else is dropped: the top-level fields, the profiles, the weights, the disabled lists
and the args of step 14's plugins must match field for field. The text is compared too: the
oracle's own output, read and written again by ``config.dump_yaml``, is the oracle's text.

A case with an error (``<case>.err``) must fail with the same text, from ``load_config`` or
from ``validate_kube_scheduler_configuration``; the cases whose error v1.23 raises later, when
it builds the framework (``FRAMEWORK_ERRORS``), must load and validate, and their plugin's own
validator must give the recorded text's end. The cases step 14 does not match are xfail
(strict), each with its reason (``XFAIL``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from steps.step14 import config
from steps.step14.plugins import noderesources
from steps.step14.validation import validate_kube_scheduler_configuration

FIXTURES = Path(__file__).parent / "fixtures" / "config"

# The default plugins v1.36 has and v1.23 did not (and step 14 does not).
V1_36_PLUGINS = frozenset({"SchedulingGates", "DynamicResources", "NodeDeclaredFeatures"})
DROPPED_PLUGINS = config.NOT_IMPLEMENTED_PLUGINS | V1_36_PLUGINS
# The extension points v1.36's v1 has and step 14 does not model.
UNMODELLED_EXTENSION_POINTS = frozenset({"preEnqueue", "placementGenerate", "placementScore"})

# The cases v1.23 rejects only when it builds the framework (the lead's runtime.py): the
# recorded error's end, after the framework's prefix, is what the plugin's validator says.
FRAMEWORK_PREFIX = (
    "couldn't create scheduler: initializing profiles: creating profile for scheduler name "
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
        "Differs from upstream: step 14 also reads kubescheduler.config.k8s.io/v1, which "
        "v1.23 does not have"
    ),
    "v1.36/err-v1beta3-in-v1.36": (
        "Differs from upstream: step 14 still reads v1beta3, which v1.36 no longer does"
    ),
}


def cases() -> list[Any]:
    out = []
    for path in sorted(FIXTURES.glob("*/*.yaml")):
        if path.name.endswith(".out.yaml"):
            continue
        case = f"{path.parent.name}/{path.name.removesuffix('.yaml')}"
        marks = [pytest.mark.xfail(strict=True, reason=XFAIL[case])] if case in XFAIL else []
        out.append(pytest.param(case, id=case, marks=marks))
    return out


def project(obj: dict[str, Any]) -> dict[str, Any]:
    """A written configuration with what step 14 does not have dropped (see the module's
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


def load_case(case: str) -> config.KubeSchedulerConfiguration:
    return config.load_config_from_file(str(FIXTURES / f"{case}.yaml"))


def load_and_validate(case: str) -> config.KubeSchedulerConfiguration:
    cfg = load_case(case)
    agg = validate_kube_scheduler_configuration(cfg)
    if agg is not None:
        raise agg
    return cfg


@pytest.mark.parametrize("case", cases())
def test_config_file(case: str) -> None:
    out = FIXTURES / f"{case}.out.yaml"
    if out.exists():
        cfg = load_and_validate(case)
        want = project(yaml.safe_load(out.read_text()))
        got = project(yaml.safe_load(config.encode_config(cfg)))
        assert got == want
        return
    want_err = (FIXTURES / f"{case}.err").read_text().removesuffix("\n")
    if case in FRAMEWORK_ERRORS:
        cfg = load_and_validate(case)
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
        load_and_validate(case)
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
    assert config.dump_yaml(yaml.safe_load(text)) == text
