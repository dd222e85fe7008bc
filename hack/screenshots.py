"""Screenshot each step's live page at the end of its scenario: docs/img/stepN-web.png.

    .nox/minisched/bin/python hack/screenshots.py          # every built step
    .nox/minisched/bin/python hack/screenshots.py 6 8      # some steps

Each step runs with the embedded API server and seed 1 (as ``nox -s stepN -- --web``) and the
page in headless Chromium (apt-get install chromium chromium-driver) at 1280x800. Once the
scenario is over, the script clicks the pod worth explaining (a pending one, else the bound
one with the longest table), so the picture shows its Filter and Score table, and saves the
page. pngquant, when installed, makes the PNG smaller.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from minisched import runner, steps  # noqa: E402
from minisched.report import Report  # noqa: E402
from minisched.web import WebPage  # noqa: E402
from minisched.web.state import ClusterView, natural  # noqa: E402
from tests.browser import Browser, missing  # noqa: E402


def image_path(number: int) -> Path:
    return ROOT / "docs" / "img" / f"step{number}-web.png"


def pod_to_explain(view: ClusterView) -> str:
    """A pod still pending, else the bound pod with the longest table (the last one of those,
    in natural order)."""
    pods = sorted(view.snapshot()["pods"], key=lambda p: natural(p["key"]))
    pending = [p["key"] for p in pods if p["where"] not in ("bound", "gone")]
    if pending:
        return pending[0]
    rows = {p["key"]: len((view.pod_detail(p["key"]) or {}).get("table", ())) for p in pods}
    return max(reversed(list(rows)), key=lambda key: rows[key])


def screenshot(number: int, browser: Browser) -> Path:
    from selenium.webdriver.common.by import By

    page = WebPage()
    report = Report(Console(file=io.StringIO(), width=100), live=False)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            runner.run_step(number, embedded=True, report=report, page=page)
        except BaseException as e:
            failure.append(e)
            page.release()

    thread = threading.Thread(target=run, name=f"step{number}")
    thread.start()
    try:
        browser.wait(lambda _: page.url or failure, timeout=60)
        if failure:
            raise failure[0]
        browser.driver.get(page.url)
        browser.wait(lambda _: (page.view is not None and page.view.ended) or failure, 120)
        if failure:
            raise failure[0]
        browser.wait(lambda d: "scenario over" in d.find_element(By.ID, "status").text)
        assert page.view is not None
        key = pod_to_explain(page.view)
        browser.driver.find_element(
            By.CSS_SELECTOR, f'#queues .pod[data-pod="{key}"], #cluster .pod[data-pod="{key}"]'
        ).click()
        browser.wait(lambda d: d.find_element(By.ID, "detail").get_attribute("data-pod") == key)
        browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#why tbody tr"))
        path = image_path(number)
        browser.screenshot(path)
    finally:
        page.release()
        thread.join(30)
    optimise(path)
    return path


def optimise(path: Path) -> None:
    if shutil.which("pngquant"):
        subprocess.run(
            ["pngquant", "--force", "--skip-if-larger", "--quality=70-95", "--output", path, path],
            check=False,
        )


def main(argv: list[str]) -> int:
    reason = missing()
    if reason:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 1
    numbers = [int(a) for a in argv] or [s.number for s in steps.built()]
    browser = Browser()
    try:
        for number in numbers:
            path = screenshot(number, browser)
            print(f"step {number}: {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
