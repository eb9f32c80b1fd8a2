"""A real headless Chromium for the inbox page's tests: Debian's ``chromium`` (``make browser`` installs
it), driven by Playwright. Screenshots go to ``SCREENSHOTS`` (``.screenshots/`` by default)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("SCREENSHOTS", ROOT / ".screenshots"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# How long a browser step may take before it counts as a hang: every wait is for something to happen.
WAIT_MS = 120_000


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium; it fails, saying how to install it, where there is none (never skipped)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        raise RuntimeError(f"no Chromium at {CHROMIUM}: run `make browser` (apt-get install chromium), or set CHROMIUM")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def refreshed(page: Any, times: int = 1) -> None:
    """Wait until the page has refreshed its list ``times`` more times (counted by the page itself)."""
    seen = int(page.evaluate("document.body.dataset.refreshes || '0'"))
    page.wait_for_function(f"() => Number(document.body.dataset.refreshes || 0) >= {seen + times}")


def approve_on(card: Any) -> None:
    """Click a card's Approve, then the second click a destructive question asks for ("Yes, run ...")."""
    card.get_by_role("button", name="Approve").click()
    card.locator(".confirm-yes").click()
