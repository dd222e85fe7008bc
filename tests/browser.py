"""Headless Chromium for the web page's tests and for hack/screenshots.py.

Selenium drives Debian's ``chromium`` through Debian's ``chromium-driver``: the two packages are
built from the same source at the same version, so the driver always speaks the browser's
protocol, and Selenium (a pure-Python wheel) needs nothing downloaded at run time. Playwright
would bring its own driver (a Node.js runtime in its wheel) and supports only the browser builds
it downloads itself, which an offline machine cannot fetch.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

# Flags for a closed network and a container: no sandbox (root), no GPU, nothing fetched.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
WIDTH, HEIGHT = 1280, 800


def chromium() -> tuple[str, str] | None:
    """The paths of Chromium and its driver, or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if chromium() is None:
        return "no Chromium: apt-get install chromium chromium-driver (.ci/run does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "no selenium: pip install -e '.[dev]'"
    return None


class Browser:
    """One headless Chromium with a fresh profile, closed by ``close()``."""

    def __init__(self, width: int = WIDTH, height: int = HEIGHT) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        paths = chromium()
        if paths is None:
            raise RuntimeError(missing())
        browser, driver = paths
        self._profile = tempfile.mkdtemp(prefix="minisched-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self._profile}")
        options.add_argument(f"--window-size={width},{height}")
        self.driver: Any = webdriver.Chrome(options=options, service=Service(driver))
        # The viewport itself, not the window around it: screenshots are exactly this size.
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def wait(self, predicate: Any, timeout: float = 20.0) -> Any:
        """Wait until ``predicate(driver)`` is truthy and return it (Selenium's WebDriverWait).

        The page redraws its nodes and queues on every change, so an element the predicate
        found can be gone by the time it reads it: that try counts as not yet.
        """
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(
            self.driver,
            timeout,
            poll_frequency=0.05,
            ignored_exceptions=(StaleElementReferenceException,),
        ).until(predicate)

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.driver.get_screenshot_as_png())

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self._profile, ignore_errors=True)
