"""The chapters' pictures of the live page (docs/img/stepN-web.png) show the tree as it is.

``hack/screenshots.py`` records in each picture (a PNG tEXt chunk) a SHA-256 over what it was
made from: its step's folder, its scenario, the page's code and what writes the page's lines.
These tests read that record and hash the files again: no browser needed. When a picture is
stale, the failure names the files that changed and the command that makes it again.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import struct
import sys
import zlib
from pathlib import Path
from types import ModuleType

import pytest

from minisched import steps

ROOT = steps.ROOT


def load_screenshots() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "hack" / "screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["screenshots"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


shots = load_screenshots()
BUILT = [s.number for s in steps.built()]


@pytest.mark.parametrize("step", BUILT)
def test_every_picture_was_made_from_the_tree_as_it_is(step: int) -> None:
    reason = shots.stale(step)
    assert reason is None, reason


def test_every_built_step_has_a_row_saying_what_its_picture_shows() -> None:
    assert sorted(shots.SHOTS) == BUILT
    for step, shot in shots.SHOTS.items():
        assert shot.pod and shot.shows, step
        for pattern in (*shot.shows, shot.centre):
            re.compile(pattern)  # the browser compiles them too (JavaScript's RegExp)


def test_every_module_the_page_imports_is_an_input_or_said_not_to_show() -> None:
    """The page's code imports what decides some of what it shows (a pod's requests, the
    steps' titles): a change there must make the pictures stale too."""
    imported = set()
    for path in (ROOT / "minisched" / "web").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 2:  # from ..x import y
                names = [node.module] if node.module else [a.name for a in node.names]
                imported |= {f"minisched/{name.replace('.', '/')}.py" for name in names}
    assert "minisched/podstate.py" in imported  # the scan finds them
    inputs = set(shots.input_files(1))
    missing = sorted(imported - inputs - set(shots.NOT_SHOWN))
    assert missing == [], f"add to COMMON_INPUTS or NOT_SHOWN in hack/screenshots.py: {missing}"


# --- the record: PNG text chunks -------------------------------------------------------------


def tiny_png() -> bytes:
    """A 1x1 grey PNG, as a browser's screenshot is: IHDR, IDAT, IEND."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)  # 1x1, 8-bit greyscale
    return (
        shots.PNG_SIGNATURE
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
        + chunk(b"IEND", b"")
    )


def test_text_chunks_are_written_before_iend_and_read_back() -> None:
    png = shots.with_png_text(tiny_png(), {"minisched:source": "sha256:ab", "Other": "x y"})
    kinds = [kind for kind, _ in shots.png_chunks(png)]
    assert kinds == [b"IHDR", b"IDAT", b"tEXt", b"tEXt", b"IEND"]
    assert shots.png_text(png) == {"minisched:source": "sha256:ab", "Other": "x y"}
    # Written again, a keyword is replaced, not repeated; the picture itself is untouched.
    again = shots.with_png_text(png, {"minisched:source": "sha256:cd"})
    assert shots.png_text(again) == {"Other": "x y", "minisched:source": "sha256:cd"}
    assert shots.png_chunks(again)[:2] == shots.png_chunks(tiny_png())[:2]


def test_a_damaged_png_is_a_value_error() -> None:
    png = bytearray(tiny_png())
    png[20] ^= 0xFF  # inside IHDR: its CRC no longer matches
    with pytest.raises(ValueError, match="damaged"):
        shots.png_chunks(bytes(png))
    with pytest.raises(ValueError, match="not a PNG"):
        shots.png_chunks(b"GIF89a")


# --- what makes a picture stale --------------------------------------------------------------


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small tree with what step 4's picture is made from, and its picture, up to date."""
    for name in (
        "steps/step4/schedule_one.py",
        "steps/step4/plugins/nodenumber.py",
        "steps/step5/schedule_one.py",
        "scenarios/step4.py",
        "scenarios/step5.py",
        "minisched/web/state.py",
        "minisched/web/static/app.js",
        "minisched/report.py",
        "minisched/scenario.py",
        "minisched/runner.py",
    ):
        write(tmp_path, name, f"# {name}\n")
    picture = shots.image_path(4, tmp_path)
    picture.parent.mkdir(parents=True)
    picture.write_bytes(shots.with_png_text(tiny_png(), shots.provenance(4, tmp_path)))
    assert shots.stale(4, tmp_path) is None
    return tmp_path


@pytest.mark.parametrize(
    "name",
    [
        "steps/step4/plugins/nodenumber.py",
        "scenarios/step4.py",
        "minisched/web/static/app.js",
        "minisched/web/state.py",
        "minisched/report.py",
    ],
)
def test_a_picture_is_stale_once_what_it_shows_changes(tree: Path, name: str) -> None:
    write(tree, name, "# changed\n")
    reason = shots.stale(4, tree)
    assert reason is not None
    assert f"(changed: {name})" in reason
    assert reason.endswith("make it again: .nox/minisched/bin/python hack/screenshots.py 4")


def test_a_new_or_removed_file_in_the_step_makes_its_picture_stale(tree: Path) -> None:
    write(tree, "steps/step4/plugins/new.py", "")
    assert "new: steps/step4/plugins/new.py" in (shots.stale(4, tree) or "")
    (tree / "steps/step4/plugins/new.py").unlink()
    assert shots.stale(4, tree) is None
    (tree / "steps/step4/schedule_one.py").unlink()
    assert "gone: steps/step4/schedule_one.py" in (shots.stale(4, tree) or "")


def test_what_the_picture_does_not_show_leaves_it_up_to_date(tree: Path) -> None:
    write(tree, "steps/step5/schedule_one.py", "# another step\n")
    write(tree, "scenarios/step5.py", "# another scenario\n")
    write(tree, "minisched/runner.py", "# not on the page\n")
    write(tree, "steps/step4/__pycache__/schedule_one.py", "# not a source\n")
    assert shots.stale(4, tree) is None


def test_a_new_choice_of_pod_makes_the_picture_stale(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(shots.SHOTS, 4, shots.Shot("pod1", ("prescore",)))
    assert f"(changed: {shots.SHOT_INPUT})" in (shots.stale(4, tree) or "")


def test_a_picture_without_a_record_or_missing_names_the_command(tree: Path) -> None:
    picture = shots.image_path(4, tree)
    picture.write_bytes(tiny_png())
    assert shots.stale(4, tree) == (
        "step4-web.png records nothing of what it was made from; "
        "make it again: .nox/minisched/bin/python hack/screenshots.py 4"
    )
    picture.unlink()
    assert shots.stale(4, tree) == (
        "step4-web.png is missing; make it again: .nox/minisched/bin/python hack/screenshots.py 4"
    )


# --- the command -----------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["99"], ["abc"], ["4", "0"], ["-1"]])
def test_a_step_that_does_not_exist_is_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert shots.main(argv) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.count("\n") == 1
    assert out.err.startswith("there is no step ")
    assert "usage: .nox/minisched/bin/python hack/screenshots.py [N ...]" in out.err
