"""The inbox with 1,000 parks waiting: the page served by a real `butler serve`, beside
`butler pending` on the same parks, and the page's live refresh when nothing changed.

Run: python bench/bench_inbox.py [PARKS]  (default 1000; prints a Markdown table)
Target: the whole inbox page, every argument of every park, in under a second.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import BIN, sample_state  # noqa: E402

from butler_cli.store.parks import ParkStore  # noqa: E402

RUNS = 11


def make_home(root: Path, parks: int) -> Path:
    home = root / "home"
    store = ParkStore(home)
    for i in range(parks):
        state = sample_state(store.new_id(), 12)
        state.created_at = f"2026-12-03T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00"
        store.save(state)
    return home


def start_serve(
    env: dict[str, str], cwd: Path | None = None
) -> tuple[subprocess.Popen[str], int, str]:
    """`butler serve` on a free loopback port: the process, its port and its token."""
    proc = subprocess.Popen(
        [str(BIN / "butler"), "serve", "--port", "0", "--no-scheduler"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        if found:
            return proc, int(found.group(1)), found.group(2)
    proc.kill()
    raise AssertionError("butler serve printed no URL")


def fetch(url: str, token: str, headers: dict[str, str] | None = None) -> tuple[int, int]:
    req = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}", **(headers or {})}
    )
    with urllib.request.urlopen(req, timeout=60) as res:
        return res.status, len(res.read())


def in_browser(base: str, token: str, parks: int) -> list[float]:
    """Playwright on Debian's chromium (if installed): navigation start to the load event."""
    if not Path("/usr/bin/chromium").exists():
        return []
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=[
                "--no-sandbox",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
            ],
        )
        page = browser.new_page()
        page.goto(f"{base}/?token={token}")
        for _ in range(7):
            page.goto(base + "/")
            page.locator("article.park").nth(parks - 1).wait_for(state="attached")
            nav = page.evaluate(
                "JSON.stringify(performance.getEntriesByType('navigation')[0].toJSON())"
            )
            # The browser's own clock: request start to the load event (every card parsed,
            # styled, laid out), not the driver's round trips.
            times.append(json.loads(nav)["loadEventEnd"] / 1000)
        browser.close()
    return times


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--no-browser"]  # a busy machine: the server only
    parks = int(args[0]) if args else 1000
    butler = str(BIN / "butler")
    with tempfile.TemporaryDirectory() as tmp:
        home = make_home(Path(tmp), parks)
        env = {**os.environ, "BUTLER_HOME": str(home)}
        proc, port, token = start_serve(env)
        base = f"http://127.0.0.1:{port}"
        try:
            start = time.perf_counter()
            status, size = fetch(base + "/", token)  # cold: every park file read and verified
            cold = time.perf_counter() - start
            assert status == 200
            cards = None
            page_t, pending_t, idle_t = [], [], []
            for _ in range(RUNS):
                start = time.perf_counter()
                _, size = fetch(base + "/", token)
                page_t.append(time.perf_counter() - start)
                start = time.perf_counter()
                out = subprocess.run(
                    [butler, "pending"], env=env, capture_output=True, text=True, check=True
                )
                pending_t.append(time.perf_counter() - start)
                cards = out.stdout.count("\n          task:")
                req = urllib.request.Request(
                    base + "/parts?v=", headers={"Authorization": f"Bearer {token}"}
                )
                with urllib.request.urlopen(req, timeout=60) as res:
                    version = json.loads(res.read())["version"]
                start = time.perf_counter()
                status, _ = fetch(base + f"/parts?v={version}", token)
                idle_t.append(time.perf_counter() - start)
                assert status == 204
            browser_t = [] if "--no-browser" in sys.argv else in_browser(base, token, parks)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    commit = os.popen("git rev-parse --short HEAD").read().strip()
    print(
        f"commit {commit}, {parks:,} pending parks ({cards} listed by pending), medians of {RUNS}"
    )
    print("| measure | median | p-max |")
    print("|---|---|---|")
    print(
        f"| inbox page `GET /` (every park, every argument; {size / 1e6:.1f} MB of HTML) | {statistics.median(page_t) * 1000:.0f} ms | {max(page_t) * 1000:.0f} ms |"
    )
    print(
        f"| inbox page, first request after start (every park file read, verified) | {cold * 1000:.0f} ms | |"
    )
    print(
        f"| `butler pending` (a new process) | {statistics.median(pending_t) * 1000:.0f} ms | {max(pending_t) * 1000:.0f} ms |"
    )
    if browser_t:
        print(
            f"| chromium: navigation start to the load event, all {parks:,} cards (browser's clock) | {statistics.median(browser_t) * 1000:.0f} ms | {max(browser_t) * 1000:.0f} ms |"
        )
    print(
        f"| live refresh, nothing changed (`GET /parts`, 204) | {statistics.median(idle_t) * 1000:.1f} ms | {max(idle_t) * 1000:.1f} ms |"
    )


if __name__ == "__main__":
    main()
