"""Real Chromium for the web pages: Debian's package, driven by Playwright's Python API.

Playwright cannot download browsers here, so it launches ``/usr/bin/chromium`` (installed by
``scripts/install.sh``); a missing browser fails the tests, it does not skip them. Each test
can save screenshots with ``shoot(page, name)`` into ``out/screenshots/`` (git-ignored) to be
looked at: a page that passes its asserts can still look broken.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from playwright.sync_api import Error as PlaywrightError

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "out" / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for one test module. Not longer: while Playwright's sync API is open its event
    loop counts as running in this thread, which breaks the asyncio tests that a pytest worker
    runs after the browser tests."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install.sh (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page (its own context: no cookies shared between tests), 1280x800."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    yield opened
    context.close()


@pytest.fixture
def shoot() -> Callable[[Page, str], Path]:
    """``shoot(page, "runs-en")`` saves a full-page PNG and returns its path."""

    def save(page: Page, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        for attempt in range(3):  # a busy Chromium now and then cannot capture at once
            try:
                page.screenshot(path=str(path), full_page=True)
                break
            except PlaywrightError:
                if attempt == 2:
                    raise
                page.wait_for_timeout(500)
        return path

    return save
