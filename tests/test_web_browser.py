"""The live page in a real browser: Debian's Chromium, headless, driven by Selenium.

Each scenario runs as ``nox -s stepN -- --web`` runs it (``runner.run_step`` with a page) and
the page is read as a learner sees it. One browser for the module; step 8 runs once for four
tests, step 6 once, step 11 once for its layout. Step 11's nomination and victim last a moment
in a real run: a page fed step 11's events by hand shows them, one state at a time. (That every
built step has its screenshot is checked in test_web_state.py, with or without a browser.)
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator

import pytest
from rich.console import Console

from minisched import runner, steps
from minisched.clock import FakeClock
from minisched.report import Report
from minisched.web import WebPage
from tests.browser import missing
from tests.test_web_state import node, pod, quiet_report, record_step11_preemption, stub_scheduler

reason = missing()
if reason:
    pytest.skip(f"browser tests: {reason}", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402

from tests.browser import Browser  # noqa: E402

# The lines the report prints for recorder events (the page's timeline shows the same).
# The lines the report publishes (the timeline's): the scheduler's and the scenario's.
EVENT_LINE = re.compile(r"^(queue|pending|waiting|bound|error|prescore|assumed) +\S|^scenario: ")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    yield b
    b.close()


class Run:
    """One scenario with its page, in a thread; ``finish`` releases the page and joins."""

    def __init__(self, number: int) -> None:
        self.page = WebPage()
        self.out = io.StringIO()
        # Wide enough that no line wraps: the terminal's lines are compared with the page's.
        self.report = Report(Console(file=self.out, width=500), live=False)
        self.result: runner.Result | None = None
        self.error: BaseException | None = None
        self.opened_after = 0  # how many lines the terminal had printed when the page opened
        self.latest = ""  # the pod whose scheduling cycle ended last (the page's default detail)
        self.report.subscribe(self._decision)
        self.thread = threading.Thread(target=self._run, args=(number,), name=f"step{number}")
        self.thread.start()

    def _run(self, number: int) -> None:
        try:
            self.result = runner.run_step(number, embedded=True, report=self.report, page=self.page)
        except BaseException as e:
            self.error = e

    def _decision(self, event: str, fields: dict[str, object], line: str) -> None:
        if event in ("selected", "unschedulable", "error"):
            self.latest = str(fields["pod"])

    def wait_for_url(self, browser: Browser) -> str:
        browser.wait(lambda _: self.page.url or self.error, timeout=60)
        assert self.error is None, self.error
        return self.page.url

    def wait_for_end(self, browser: Browser) -> None:
        """Until the scenario is over and the page says so."""
        browser.wait(lambda d: "scenario over" in d.find_element(By.ID, "status").text, 60)

    def printed(self) -> list[str]:
        return self.out.getvalue().splitlines()

    def finish(self) -> runner.Result:
        self.page.release()
        self.thread.join(30)
        assert self.error is None, self.error
        assert self.result is not None
        return self.result


def nodes_on_page(browser: Browser) -> dict[str, str]:
    """pod name -> the node box it is bound in."""
    return {
        chip.text: box.get_attribute("data-node")
        for box in browser.driver.find_elements(By.CSS_SELECTOR, ".node")
        for chip in box.find_elements(By.CSS_SELECTOR, ".pod.bound")
    }


def why_rows(browser: Browser) -> list[list[str]]:
    rows = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#why tbody tr"))
    return [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def terminal_rows(report: Report, pod: str) -> list[list[str]]:
    """The rows of the terminal's "Why this node" table for ``pod`` (cells as a browser reads
    them: without their outer spaces, as " <- selected" with no scores before it)."""
    table = report.why_this_node(pod)
    columns = [[str(cell).strip() for cell in column._cells] for column in table.columns]
    return [list(row) for row in zip(*columns, strict=True)]


def shown_by_default(browser: Browser, key: str) -> None:
    """Until the page's detail shows ``key``'s decision with no pod picked."""

    def shown(d: object) -> bool:
        detail = browser.driver.find_element(By.ID, "detail")
        return detail.get_attribute("data-pod") == key and detail.get_attribute("data-auto") == (
            "true"
        )

    browser.wait(shown)
    assert browser.driver.find_element(By.ID, "detail-hint").is_displayed()


def timeline(browser: Browser) -> list[str]:
    """The timeline's lines without their time stamps."""
    items = browser.driver.find_elements(By.CSS_SELECTOR, "#timeline li")
    return [item.text.split(" ", 1)[1] for item in items]


# --- step 8: opened mid-run, ends with every pod bound --------------------------------------------


@pytest.fixture(scope="module")
def step8(browser: Browser) -> Iterator[Run]:
    """Step 8's scenario; the page is opened once pods wait on Permit (mid-run)."""
    if not steps.get(8).built:
        pytest.skip("step 8 is not built")
    waiting = threading.Event()
    run = Run(8)
    run.report.subscribe(lambda event, fields, line: event == "waiting" and waiting.set())
    url = run.wait_for_url(browser)
    assert waiting.wait(60)
    run.opened_after = len([line for line in run.printed() if EVENT_LINE.match(line)])
    browser.driver.get(url)
    run.wait_for_end(browser)
    yield run
    run.finish()


def test_a_page_opened_mid_run_catches_up(browser: Browser, step8: Run) -> None:
    printed = [line for line in step8.printed() if EVENT_LINE.match(line)]
    # Opened after some lines (they came in its snapshot), before the last ones (the stream).
    assert 0 < step8.opened_after < len(printed)
    shown = timeline(browser)
    assert shown[-1] == "scenario over: the page stays until Ctrl-C"
    assert shown[:-1] == printed


def test_step8_ends_with_every_pod_on_the_node_the_report_names(
    browser: Browser, step8: Run
) -> None:
    on_page = nodes_on_page(browser)
    named = {pod: step8.report.bound_node(pod) for pod in ("pod1", "pod8")}
    assert named == {"pod1": "node8", "pod8": "node8"}  # the terminal's bindings table
    assert on_page == named
    queues = browser.driver.find_elements(By.CSS_SELECTOR, "#queues .pod")
    assert queues == []  # nothing left waiting


def test_without_a_click_the_page_shows_the_latest_decision(browser: Browser, step8: Run) -> None:
    shown_by_default(browser, step8.latest)
    name = step8.latest.rsplit("/", 1)[-1]
    assert why_rows(browser) == terminal_rows(step8.report, name)
    title = browser.driver.find_element(By.ID, "detail-title").text
    assert title == f"Why this node: {name}"


def test_clicking_a_pod_shows_its_filter_and_score_table(browser: Browser, step8: Run) -> None:
    browser.driver.find_element(By.CSS_SELECTOR, '.node[data-node="node8"] .pod.bound').click()
    pod = browser.wait(lambda d: d.find_element(By.ID, "detail").get_attribute("data-pod"))
    name = pod.rsplit("/", 1)[-1]
    assert name == "pod1"  # the first chip in node8: pods are in name order
    rows = browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#why tbody tr"))
    on_page = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    # The same table as the terminal's "Why this node: pod1".
    table = step8.report.why_this_node(name)
    columns = [list(column._cells) for column in table.columns]
    assert on_page == [list(row) for row in zip(*columns, strict=True)]
    assert ["node8", "passed", "NodeNumber 0 <- selected"] in on_page
    title = browser.driver.find_element(By.ID, "detail-title").text
    assert title == table.title == "Why this node: pod1"


# --- step 6: the pending pod in unschedulableQ ----------------------------------------------------


def test_step6_pending_pod_is_in_unschedulable_q_rejected_by_node_unschedulable(
    browser: Browser,
) -> None:
    if not steps.get(6).built:
        pytest.skip("step 6 is not built")
    run = Run(6)
    try:
        browser.driver.get(run.wait_for_url(browser))
        run.wait_for_end(browser)
        queue = browser.driver.find_element(By.CSS_SELECTOR, '.queue[data-queue="unschedulableQ"]')
        chips = queue.find_elements(By.CSS_SELECTOR, ".pod")
        assert [chip.get_attribute("data-pod").rsplit("/", 1)[-1] for chip in chips] == ["pod1"]
        rejectors = chips[0].find_element(By.CSS_SELECTOR, ".rejectors").text
        assert rejectors == "NodeUnschedulable"
        # Without a click, the right half shows why it is pending: every node cordoned.
        shown_by_default(browser, run.latest)
        assert run.latest.rsplit("/", 1)[-1] == "pod1"
        assert browser.driver.find_element(By.ID, "detail-title").text == "Why no node: pod1"
        rows = why_rows(browser)
        assert len(rows) == 10
        assert {row[1] for row in rows} == {
            "NodeUnschedulable: node(s) were unschedulable",
        }
        cordoned = browser.driver.find_elements(By.CSS_SELECTOR, ".node.unschedulable")
        assert len(cordoned) == 10
        assert nodes_on_page(browser) == {}
        assert run.report.bound_node("pod1") == ""  # the terminal: (pending)
    finally:
        run.finish()


# --- step 11: the layout at the end of the run, the preemption on the cards -----------------------

# Every box on a node card, and how far it reaches past the card's edges (0 when inside);
# each resource row, queue title and the timeline's first visible line as the browser laid
# them out.
LAYOUT = """
const out = {overflow: [], wrapped: [], timeline: null};
for (const card of document.querySelectorAll(".node")) {
  const box = card.getBoundingClientRect();
  for (const item of card.querySelectorAll("h3, .badge, .resource, .resource span, .pod")) {
    const r = item.getBoundingClientRect();
    // Text wider than its box spills out of it, unless the box cuts it (an ellipsis).
    const visible = getComputedStyle(item).overflowX === "visible";
    const spills = visible && item.scrollWidth > item.clientWidth + 1 ? 1 : 0;
    const past = Math.max(box.left - r.left, r.right - box.right, spills);
    if (past > 0.5) out.overflow.push([card.dataset.node, item.className, item.textContent]);
  }
}
for (const item of document.querySelectorAll(".resource, .queue h3")) {
  const size = parseFloat(getComputedStyle(item).fontSize);
  if (item.getBoundingClientRect().height >= 2 * size) out.wrapped.push(item.textContent);
  const column = item.closest(".queue");
  if (column && item.scrollWidth > column.clientWidth) out.wrapped.push(item.textContent);
}
const list = document.getElementById("timeline");
const top = list.getBoundingClientRect().top;
const first = [...list.children].find((li) => li.getBoundingClientRect().bottom > top + 0.5);
out.timeline = {
  cut: first ? top - first.getBoundingClientRect().top : 0,
  atBottom: list.scrollTop + list.clientHeight >= list.scrollHeight - 1,
  scrolls: list.scrollHeight > list.clientHeight,
};
return out;
"""


def test_step11_every_chip_fits_its_card_and_no_line_is_cut(browser: Browser) -> None:
    if not steps.get(11).built:
        pytest.skip("step 11 is not built")
    run = Run(11)
    try:
        browser.driver.get(run.wait_for_url(browser))
        run.wait_for_end(browser)
        shown_by_default(browser, run.latest)
        layout = browser.driver.execute_script(LAYOUT)
        taints = browser.driver.find_elements(By.CSS_SELECTOR, ".badge.taint")
        assert taints, "step 11's nodes are tainted"
        # The long taint is cut to its card; its title has all of it.
        assert {t.get_attribute("title") for t in taints} == {
            "minisched.io/scenario=preemption:NoSchedule"
        }
        assert layout["overflow"] == []
        assert layout["wrapped"] == []  # memory values and queue names on one line each
        timeline = layout["timeline"]
        assert timeline["scrolls"] and timeline["atBottom"]  # following the run, overflowing
        assert timeline["cut"] <= 0.5  # the first visible line starts at the top edge
        # The latest decision: payments on its nominated node, as the terminal says.
        assert run.latest.rsplit("/", 1)[-1] == "payments"
        assert why_rows(browser) == terminal_rows(run.report, "payments")
    finally:
        run.finish()


def test_step11_the_nominated_pod_and_its_victim_are_on_the_cards(browser: Browser) -> None:
    page = WebPage()
    report = quiet_report()
    scheduler = stub_scheduler(FakeClock())
    page.attach(report, scheduler, 11)
    nodes, pods = scheduler.node_informer.handlers[0], scheduler.pod_informer.handlers[0]
    page.start()
    try:
        browser.driver.get(page.url)
        nodes.add(node("north"))
        pods.add(pod("batch-c", "north"))
        report.record("bound", pod="ns/batch-c", node="north")
        record_step11_preemption(report)
        north = '.node[data-node="north"] '
        nominated = browser.wait(
            lambda d: d.find_elements(By.CSS_SELECTOR, north + ".pod.nominated")
        )
        assert [c.get_attribute("data-pod") for c in nominated] == ["ns/payments"]
        assert nominated[0].text == "payments nominated"
        victim = browser.driver.find_element(By.CSS_SELECTOR, north + ".pod.bound.victim")
        assert victim.get_attribute("data-pod") == "ns/batch-c"
        assert victim.text == "batch-c preempted"
        assert victim.get_attribute("title") == "preempted for payments: terminating"
        # The victim is gone, payments bound: nothing is marked any more.
        pods.delete(pod("batch-c", "north"))
        report.record("bound", pod="ns/payments", node="north")
        pods.update(None, pod("payments", "north"))
        browser.wait(lambda d: nodes_on_page(browser) == {"payments": "north"})
        assert browser.driver.find_elements(By.CSS_SELECTOR, ".pod.nominated, .pod.victim") == []
    finally:
        page.close()
