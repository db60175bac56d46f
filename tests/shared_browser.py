"""Debian's chromium through Playwright, shared by the browser tests of one worker.

Five test modules drive a browser; started once per module it was started up to five times
per worker, each start about a CPU-second (the browser and Playwright's driver). Here it starts
when a test first asks for ``browser`` and stays up while the tests that follow use it too;
each test still opens a fresh context of its own (no cookies, no storage) and closes it.

It is stopped before any test that does not use it: Playwright's sync API keeps its event
loop marked as the thread's running loop between calls, so a test running an asyncio loop of
its own (the Matrix person's client) would fail with "another loop is running" while it is up.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",  # the tests run as root
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

#: The running Playwright and its browser, while browser tests follow one another.
_RUNNING: list[Any] = []


def _stop() -> None:
    if _RUNNING:
        playwright, chromium = _RUNNING
        _RUNNING.clear()
        try:
            chromium.close()
        finally:
            playwright.stop()


@pytest.fixture(autouse=True)
def browser_only_where_used(request: pytest.FixtureRequest) -> None:
    """Stop the shared browser before a test that does not use it (see the module's text)."""
    if "browser" not in request.fixturenames:
        _stop()


@pytest.fixture
def browser() -> Any:
    """The worker's chromium (started on first use); open a fresh context per test."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium: .ci/run installs it (apt-get install chromium)")
        pytest.skip("no /usr/bin/chromium: apt-get install -y chromium (CI installs it)")
    if not _RUNNING:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        try:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        except BaseException:
            playwright.stop()
            raise
        _RUNNING[:] = [playwright, chromium]
    return _RUNNING[1]


def pytest_sessionfinish() -> None:
    _stop()
