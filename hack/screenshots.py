"""Screenshot each step's live page at the end of its scenario: docs/img/stepN-web.png.

    .nox/minisched/bin/python hack/screenshots.py          # every built step
    .nox/minisched/bin/python hack/screenshots.py 6 8      # some steps

Upstream counterpart: none (kube-scheduler has no page to photograph).

Each step runs with the embedded API server and seed 1 (as ``nox -s stepN -- --web``), and the
page is opened in headless Chromium (apt-get install chromium chromium-driver) at 1280x800,
driven over WebDriver (tests/browser.py, as the browser tests do). Once the page says
"scenario over", the script clicks the pod that shows the step's feature (``SHOTS`` below),
waits until the page shows, in view, the texts that make the picture worth having, and saves
it. A step whose page does not show them gets no new picture and one line that says what is
missing.

Why not ``chromium --headless --screenshot --virtual-time-budget=...``: the page holds its
event stream (``/events``) open for as long as the run lasts, and Chromium's virtual time does
not advance while a request is open, so the budget never runs out and the command never
returns (without the budget it photographs the page before the first event has arrived).
WebDriver waits on what the page shows, not on the network going quiet.

Each picture records what it was made from, in a PNG text chunk: a SHA-256 over its step's
folder, its scenario, the page's code and what writes the page's lines (``inputs``). Then
tests/test_screenshots.py fails when a picture no longer matches the tree, without a browser,
and names the files that changed and this command.
"""

from __future__ import annotations

import hashlib
import io
import logging
import struct
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COMMAND = ".nox/minisched/bin/python hack/screenshots.py"
RUN_TIMEOUT = 180.0  # seconds for a step's story to end (step 5's Permit waits take 8 s)
SHOW_TIMEOUT = 15.0  # seconds for the page to show what the picture is for, once clicked


# --- what each picture shows ---------------------------------------------------------------


@dataclass(frozen=True)
class Shot:
    """One step's picture: the pod to click once the story is over, and what must then be in
    view (regular expressions, matched against the text of the page's elements)."""

    pod: str
    shows: tuple[str, ...]
    # Text to bring to the middle of the view before the picture (a regular expression, as
    # ``shows``); by default the page stays where the click left it.
    centre: str = ""


# The pod whose story is the step's feature, and the texts that prove the picture shows it.
SHOTS: dict[int, Shot] = {
    # A FIFO and a random node.
    1: Shot("pod1", (r"-> FIFO \(PodAdd\)", r"bound to node\d")),
    # Filter: NodeUnschedulable rejects the ten cordoned nodes, node10 is left.
    2: Shot("pod1", (r"NodeUnschedulable: node\(s\) were unschedulable", r"bound to node10")),
    # Score: NodeNumber 100 on node8, 0 elsewhere.
    3: Shot("pod8", (r"NodeNumber 100 <- selected",)),
    # PreScore: the line that says what NodeNumber left in the CycleState.
    4: Shot("pod8", (r"prescore .*pod8: NodeNumber wrote PreScoreNodeNumber", r"<- selected")),
    # Permit: the pod waited on node8, and how long it was to wait.
    5: Shot("pod8", (r"waiting .*pod8: on node8, Permit by NodeNumber \(wait 8s, timeout 10s\)",)),
    # Three queues: the pod nothing moves waits in unschedulableQ.
    6: Shot("pod1", (r"unschedulableQ", r"NodeUnschedulable")),
    # A node event moved the pods to podBackoffQ, and nothing flushes it.
    7: Shot("pod8", (r"backoff over, no flush", r"-> podBackoffQ \(NodeAdd\)")),
    # The flush: BackoffComplete, then the pod is bound (its first attempt failed).
    8: Shot("pod8", (r"-> activeQ \(BackoffComplete\)", r"scenario: ", r"bound to node8")),
    # The cache: pod2 assumed, its binding refused, forgotten, bound on its second attempt.
    9: Shot("pod2", (r"forgot .*pod2", r"bound to node2")),
    # Requests: batch fit nowhere, then on large once db left; the cards' requested/allocatable.
    10: Shot("batch", (r"Insufficient cpu", r"bound to large", r"cpu 2\s*/\s*3")),
    # Preemption: payments, its victim batch-c on north, its nomination, its binding there.
    11: Shot(
        "payments",
        (r"preempted .*batch-c on north", r"nominate .*payments -> north", r"bound to north"),
    ),
    # Sampling: batch (12 CPU) fits one node of 200, node-170x: its row among the rejected.
    12: Shot("batch", (r"node-170x\s+passed", r"<- selected"), centre=r"node-170x\s+passed"),
    # The pod's own constraints: web kept off gpu by its taint, spot scored down by its own.
    13: Shot(
        "web",
        (r"TaintToleration: node\(s\) had taint \{dedicated: ml\}", r"TaintToleration 0"),
    ),
    # Profiles: pack-c, packed onto small by minisched-pack's MostAllocated.
    14: Shot(
        "pack-c",
        (r"profile minisched-pack", r"NodeResourcesFit 75, TaintToleration 300 <- selected"),
    ),
    # The extender: db2 filtered off node4, prioritized onto node2; the calls and their times.
    15: Shot("db2", (r"extender http://127\.0\.0\.1:\d+ 500 <- selected", r"under maintenance")),
    # Coscheduling: trio-a failed PreFilter (its group too small), then bound with its group.
    16: Shot("trio-a", (r"cannot find enough sibling pods", r"bound to node\d")),
    # WebAssembly: pod8's scores, the guest's 10 on node8 beside the plugins'.
    17: Shot("pod8", (r"wasm 10 <- selected",)),
    # Fast: step 17's story, the same scores.
    18: Shot("pod8", (r"wasm 10 <- selected",)),
}


def image_path(number: int, root: Path = ROOT) -> Path:
    return root / "docs" / "img" / f"step{number}-web.png"


# --- what each picture is made from ----------------------------------------------------------

# Besides the step's folder and its scenario: the page (its server, state and static files),
# what it imports that decides what it shows (the steps' titles, a pod's requests), and what
# writes the lines it shows (the report's line for each event, the scenario's lines).
# tests/test_screenshots.py checks that every minisched module the page imports is here or in
# NOT_SHOWN.
COMMON_INPUTS = (
    "minisched/web/**/*.py",
    "minisched/web/static/**/*",
    "minisched/steps.py",
    "minisched/podresources.py",
    "minisched/podstate.py",
    "minisched/recorder.py",
    "minisched/report.py",
    "minisched/scenario.py",
)
# Imported by the page, but nothing of them is on it: the informer's plumbing.
NOT_SHOWN = ("minisched/informer.py",)
SHOT_INPUT = "hack/screenshots.py:SHOTS"  # the step's row of the table above


def input_files(number: int, root: Path = ROOT) -> list[str]:
    """The files step ``number``'s picture is made from, relative to ``root``, sorted."""
    patterns = (f"steps/step{number}/**/*.py", f"scenarios/step{number}.py", *COMMON_INPUTS)
    found = {
        path.relative_to(root).as_posix()
        for pattern in patterns
        for path in root.glob(pattern)
        if path.is_file() and "__pycache__" not in path.parts
    }
    return sorted(found)


def input_digests(number: int, root: Path = ROOT) -> dict[str, str]:
    """Each input's SHA-256 (16 hex digits are plenty to tell versions of a file apart)."""
    digests = {
        name: hashlib.sha256((root / name).read_bytes()).hexdigest()[:16]
        for name in input_files(number, root)
    }
    shot = SHOTS.get(number)
    if shot is not None:
        digests[SHOT_INPUT] = hashlib.sha256(repr(shot).encode()).hexdigest()[:16]
    return digests


def source_hash(digests: dict[str, str]) -> str:
    """One SHA-256 over every input's name and digest: what the picture records."""
    text = "".join(f"{digest} {name}\n" for name, digest in sorted(digests.items()))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# --- PNG text chunks (the PNG specification, section 11.3.4.3: tEXt) --------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KEY_SOURCE = "minisched:source"  # source_hash of the inputs
KEY_INPUTS = "minisched:inputs"  # one "digest name" line per input, to say which one changed
KEY_COMMAND = "minisched:command"  # the command that made it


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The (type, body) of each chunk; ValueError when ``data`` is not a well-formed PNG."""
    if data[:8] != PNG_SIGNATURE:
        raise ValueError("not a PNG")
    chunks, at = [], 8
    while at < len(data):
        if at + 12 > len(data):
            raise ValueError("a PNG chunk is cut short")
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        if len(body) != length or zlib.crc32(kind + body) != crc:
            raise ValueError(f"a PNG chunk ({kind.decode('latin-1')}) is damaged")
        chunks.append((kind, body))
        at += 12 + length
        if kind == b"IEND":
            break
    if not chunks or chunks[-1][0] != b"IEND":
        raise ValueError("a PNG with no IEND")
    return chunks


def png_text(data: bytes) -> dict[str, str]:
    """The PNG's tEXt chunks, keyword -> text (Latin-1, as the specification says)."""
    texts = {}
    for kind, body in png_chunks(data):
        if kind == b"tEXt":
            keyword, _, text = body.partition(b"\0")
            texts[keyword.decode("latin-1")] = text.decode("latin-1")
    return texts


def with_png_text(data: bytes, texts: dict[str, str]) -> bytes:
    """``data`` with these tEXt chunks (replacing any with the same keyword), before IEND."""
    chunks = [
        (kind, body)
        for kind, body in png_chunks(data)
        if not (kind == b"tEXt" and body.partition(b"\0")[0].decode("latin-1") in texts)
    ]
    added = [(b"tEXt", f"{k}\0{v}".encode("latin-1")) for k, v in texts.items()]
    chunks[-1:-1] = added
    out = [PNG_SIGNATURE]
    for kind, body in chunks:
        crc = zlib.crc32(kind + body)
        out.append(struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc))
    return b"".join(out)


def provenance(number: int, root: Path = ROOT) -> dict[str, str]:
    """The text chunks step ``number``'s picture gets: what it was made from, and how."""
    digests = input_digests(number, root)
    return {
        KEY_SOURCE: source_hash(digests),
        KEY_INPUTS: "".join(f"{digest} {name}\n" for name, digest in sorted(digests.items())),
        KEY_COMMAND: f"{COMMAND} {number}",
    }


def stale(number: int, root: Path = ROOT) -> str | None:
    """Why step ``number``'s picture no longer shows the tree (ending with the command that
    makes it again), or None when it was made from the tree as it is."""
    path = image_path(number, root)
    again = f"make it again: {COMMAND} {number}"
    if not path.is_file():
        return f"{path.name} is missing; {again}"
    try:
        texts = png_text(path.read_bytes())
    except ValueError as e:
        return f"{path.name}: {e}; {again}"
    recorded = texts.get(KEY_SOURCE)
    if recorded is None:
        return f"{path.name} records nothing of what it was made from; {again}"
    digests = input_digests(number, root)
    if recorded == source_hash(digests):
        return None
    then = {}
    for line in texts.get(KEY_INPUTS, "").splitlines():
        digest, _, name = line.partition(" ")
        then[name] = digest
    changed = sorted(n for n in digests.keys() & then.keys() if digests[n] != then[n])
    added = sorted(digests.keys() - then.keys())
    removed = sorted(then.keys() - digests.keys())
    what = "; ".join(
        f"{label} {', '.join(names)}"
        for label, names in (("changed:", changed), ("new:", added), ("gone:", removed))
        if names
    )
    return f"{path.name} was made from another tree ({what or 'its inputs differ'}); {again}"


# --- taking the picture ----------------------------------------------------------------------

# Whether every pattern is in view: some element whose text matches and none of whose children
# does (the innermost), inside the viewport and inside every scrolled box around it (a line
# scrolled out of the timeline is not in the picture). Returns the patterns not in view.
NOT_IN_VIEW_JS = """
const patterns = arguments[0].map((p) => new RegExp(p));
function inView(el) {
  let r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) return false;
  let box = {top: 0, left: 0, bottom: innerHeight, right: innerWidth};
  for (let a = el.parentElement; a; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (/(auto|scroll|hidden)/.test(s.overflow + s.overflowX + s.overflowY)) {
      const ar = a.getBoundingClientRect();
      box = {top: Math.max(box.top, ar.top), left: Math.max(box.left, ar.left),
             bottom: Math.min(box.bottom, ar.bottom), right: Math.min(box.right, ar.right)};
    }
  }
  return r.bottom > box.top && r.top < box.bottom && r.right > box.left && r.left < box.right;
}
const all = [...document.body.querySelectorAll("*")];
return arguments[0].filter((source, i) => {
  const p = patterns[i];
  const innermost = all.filter((el) => p.test(el.innerText || "") &&
    ![...el.children].some((c) => p.test(c.innerText || "")));
  return !innermost.some(inView);
});
"""

# Scroll the innermost element whose text matches to the middle of the view (and of every
# scrolled box around it); false when there is none yet.
CENTRE_JS = """
const p = new RegExp(arguments[0]);
const el = [...document.body.querySelectorAll("*")].find((el) => p.test(el.innerText || "") &&
  ![...el.children].some((c) => p.test(c.innerText || "")));
if (el) el.scrollIntoView({block: "center"});
return Boolean(el);
"""


class ShotFailed(Exception):
    """One step's picture could not be taken: the message is one line for the maintainer."""


def pod_key(view: Any, name: str) -> str | None:
    """The key (namespace/name) of the pod called ``name`` on the page, if it is there."""
    for pod in view.snapshot()["pods"]:
        if pod["key"].rsplit("/", 1)[-1] == name:
            return str(pod["key"])
    return None


def screenshot(number: int, browser: Any) -> Path:
    """Run step ``number``, photograph its page at the end, and write the picture."""
    from rich.console import Console
    from selenium.common.exceptions import (
        StaleElementReferenceException,
        TimeoutException,
        WebDriverException,
    )
    from selenium.webdriver.common.by import By

    from minisched import runner
    from minisched.report import Report
    from minisched.web import WebPage

    shot = SHOTS.get(number)
    if shot is None:
        raise ShotFailed(f"no row for step {number} in SHOTS (hack/screenshots.py)")
    before = provenance(number)
    page = WebPage()
    report = Report(Console(file=io.StringIO(), width=100), live=False)
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            runner.run_step(number, embedded=True, report=report, page=page)
        except BaseException as e:  # reported by the waits below
            failure.append(e)
        finally:
            done.set()

    def until(what: str, condition: Any, timeout: float) -> None:
        """Wait for ``condition(driver)``; a run that failed or a timeout is one line."""
        try:
            browser.wait(lambda d: failure or done.is_set() or condition(d), timeout)
        except TimeoutException:
            raise ShotFailed(f"{what} within {timeout:.0f} s") from None
        if failure:
            raise ShotFailed(f"the run failed: {failure[0]!r}")
        if done.is_set():
            raise ShotFailed(f"the run ended early: {what}")

    thread = threading.Thread(target=run, name=f"step{number}", daemon=True)
    thread.start()
    try:
        until("the page did not start", lambda _: page.url, 60)
        browser.driver.get(page.url)
        until(
            'the page did not say "scenario over"',
            lambda d: "scenario over" in d.find_element(By.ID, "status").text,
            RUN_TIMEOUT,
        )
        key = pod_key(page.view, shot.pod)
        if key is None:
            raise ShotFailed(f"no pod {shot.pod} on the page (SHOTS in hack/screenshots.py)")

        def click(driver: Any) -> bool:
            """Click the pod's first chip; false (try again) when the page redrew it meanwhile."""
            try:
                chips = driver.find_elements(By.CSS_SELECTOR, f'.pod[data-pod="{key}"]')
                chip = next((c for c in chips if c.is_displayed()), None)
                if chip is None:
                    return False
                # In the middle of the view, not at its edge where a click would scroll it to.
                driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", chip)
                chip.click()
                return True
            except StaleElementReferenceException:
                return False

        until(f"no chip to click for {shot.pod} on the page", click, SHOW_TIMEOUT)
        if browser.driver.find_elements(By.ID, "detail"):
            until(
                f"the page did not show {shot.pod}'s detail",
                lambda d: d.find_element(By.ID, "detail").get_attribute("data-pod") == key,
                SHOW_TIMEOUT,
            )
        if shot.centre:
            browser.wait(lambda d: d.execute_script(CENTRE_JS, shot.centre), SHOW_TIMEOUT)
        try:
            browser.wait(
                lambda d: not d.execute_script(NOT_IN_VIEW_JS, list(shot.shows)), SHOW_TIMEOUT
            )
        except TimeoutException:
            hidden = browser.driver.execute_script(NOT_IN_VIEW_JS, list(shot.shows))
            seen = Path(tempfile.gettempdir()) / f"minisched-step{number}-web.png"
            seen.write_bytes(browser.driver.get_screenshot_as_png())
            raise ShotFailed(
                f"with {shot.pod} selected, the page does not show /{'/, /'.join(hidden)}/ in "
                f"view, so the picture would not show the step's feature (SHOTS in "
                f"hack/screenshots.py; what it showed: {seen})"
            ) from None
        # Fonts loaded and two frames drawn since the last change: the picture is what is shown.
        browser.driver.execute_async_script(
            "const done = arguments[0];"
            "document.fonts.ready.then(() => requestAnimationFrame(() =>"
            " requestAnimationFrame(() => done())));"
        )
        png = browser.driver.get_screenshot_as_png()
    except WebDriverException as e:
        raise ShotFailed(f"the browser failed: {e.msg or type(e).__name__}") from None
    finally:
        page.release()
        thread.join(30)
    if before != provenance(number):
        raise ShotFailed("the tree changed while it ran: run it again")
    path = image_path(number)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(with_png_text(png, before))
    return path


# --- the command -----------------------------------------------------------------------------


def parse(argv: list[str]) -> list[int]:
    """The steps to photograph: the arguments, or every built step. ValueError, one line,
    for anything else."""
    from minisched import steps

    built = [s.number for s in steps.built()]
    if any(a in ("-h", "--help") for a in argv):
        raise ValueError(f"usage: {COMMAND} [N ...]  (the steps are {', '.join(map(str, built))})")
    numbers = []
    for arg in argv:
        if not arg.isdigit() or int(arg) not in built:
            raise ValueError(
                f"there is no step {arg}; the steps are {', '.join(map(str, built))} "
                f"(usage: {COMMAND} [N ...])"
            )
        numbers.append(int(arg))
    return numbers or built


def main(argv: list[str]) -> int:
    try:
        numbers = parse(argv)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    from tests.browser import Browser, missing

    reason = missing()
    if reason:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 1
    # The scheduler's own log lines (step 9's refused binding, say) would come out between
    # this script's lines: kept, and printed only for a step that failed.
    logs = io.StringIO()
    handler = logging.StreamHandler(logs)
    logging.getLogger().addHandler(handler)
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    failed = []
    try:
        browser = open_browser(Browser)
    except ShotFailed as e:
        print(e, file=sys.stderr)
        return 1
    try:
        for number in numbers:
            logs.seek(0)
            logs.truncate()
            try:
                path = screenshot(number, browser)
            except ShotFailed as e:
                failed.append(number)
                print(f"step {number}: no picture: {e}", file=sys.stderr)
                sys.stderr.write("".join(f"  {line}\n" for line in tail(logs.getvalue())))
                # A fresh browser for the next step: nothing of this one's page carries over.
                browser.close()
                browser = None
                browser = open_browser(Browser)
                continue
            size = path.stat().st_size // 1024
            print(f"step {number}: {path.relative_to(ROOT)} ({size} KiB)")
    except KeyboardInterrupt:
        print("interrupted: the pictures written so far are kept", file=sys.stderr)
        return 130
    except ShotFailed as e:  # the browser did not start again
        print(e, file=sys.stderr)
        return 1
    finally:
        if browser is not None:
            browser.close()
        logging.getLogger().removeHandler(handler)
    if failed:
        print(f"again, once fixed: {COMMAND} {' '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 0


def open_browser(browser_class: Any) -> Any:
    """A headless Chromium (tests/browser.py's Browser), or ShotFailed in one line."""
    from selenium.common.exceptions import WebDriverException

    try:
        return browser_class()
    except WebDriverException as e:
        raise ShotFailed(f"cannot start Chromium: {e.msg or type(e).__name__}") from None


def tail(text: str, lines: int = 5) -> Iterable[str]:
    return text.splitlines()[-lines:]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
