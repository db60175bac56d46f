"""How the inbox looks and feels in real Chromium, at a phone's width (390 px) and a desktop's
(1280 px): nothing wider than the screen, buttons a thumb can hit, answers with their lines,
times a person reads, no failed request on load, a dark mode, and feedback the moment a
decision is sent, where the person is looking.

Screenshots go to the test's temp folder (inbox-390.png, inbox-1280.png, inbox-dark.png)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from serve_support import Served, eventually
from test_inbox_browser import park, served  # noqa: F401 - the same fixtures

WAIT_MS = 20_000

#: Every element whose right edge passes the viewport (a few px of rounding allowed).
OVERFLOW_JS = """(width) => {
  const wide = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1) wide.push(el.tagName + "." + el.className);
  }
  return {scroll: document.documentElement.scrollWidth, wide};
}"""


def open_page(chromium: Any, inbox: Served, width: int, height: int, **kw: Any) -> Any:
    context = chromium.new_context(viewport={"width": width, "height": height}, **kw)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    statuses: list[tuple[int, str]] = []
    page.on("response", lambda res: statuses.append((res.status, res.url)))
    page.statuses = statuses
    page.goto(inbox.url)
    return page


@pytest.fixture
def busy_inbox(served: Served, butler: Any, script: Any, workdir: Path) -> Served:  # noqa: F811
    """Parks (one with a long unbroken argument), a decided one whose answer has lines, and a
    schedule."""
    word = "x" * 300
    park(butler, script, "plan.txt", "a plan")
    park(butler, script, f"{word}.txt", word)
    turns = [
        {"tool_calls": [{"id": "c1", "name": "write_file",
                         "arguments": {"path": "d.txt", "content": "d"}}]},
        {"text": "first line of the answer\nsecond line of the answer"},
    ]  # fmt: skip
    ran = butler("run", "--model", script(*turns), "write d.txt", "--json")
    decided = ran.stdout.split('"park_id": "')[1].split('"')[0]
    status, answer = served.decide(decided, "approve")
    assert status == 200, answer
    plan = Path(__file__).resolve().parent.parent / "examples" / "plan.json"
    add = butler("schedule", "add", "@daily", "write the plan every morning", "--model",
                 f"scripted:{plan}")  # fmt: skip
    assert add.returncode == 0, add.stderr
    eventually(lambda: (workdir / "d.txt").exists())
    return served


@pytest.mark.parametrize("width", [390, 1280])
def test_nothing_is_wider_than_the_screen_and_buttons_are_big_enough(
    browser: Any,
    busy_inbox: Served,
    width: int,
    tmp_path: Path,
) -> None:
    page = open_page(browser, busy_inbox, width, 844)
    page.locator("#outcomes .outcome.done").wait_for()
    page.locator("#schedules tr[data-job]").wait_for()
    found = page.evaluate(OVERFLOW_JS, width)
    assert found["scroll"] <= width and found["wide"] == [], found
    for button in page.locator("button:visible").all():  # a confirm shows when asked
        box = button.bounding_box()
        assert box is not None and box["height"] >= 44, box
    for note in page.locator("input.note").all():
        box = note.bounding_box()
        assert box is not None and box["height"] >= 44, box
    # the schedules' headings never break inside a word ("whe/n")
    for th in page.locator("#schedules th").all():
        if th.is_visible():
            assert th.evaluate("e => e.scrollWidth <= e.clientWidth && e.clientHeight < 40")
    page.screenshot(path=str(tmp_path / f"inbox-{width}.png"), full_page=True)
    assert page.context.cookies() == []
    page.context.close()


def test_answers_keep_their_lines_times_are_readable_and_no_request_fails(
    browser: Any,
    busy_inbox: Served,
) -> None:
    page = open_page(browser, busy_inbox, 1280, 900)
    answer = page.locator("#outcomes .answer").first
    answer.wait_for()
    assert answer.inner_text() == "first line of the answer\nsecond line of the answer"
    assert "\\n" not in page.locator("#outcomes").inner_text()
    stamp = page.locator("article.park time").first
    assert re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC", stamp.inner_text())
    assert re.match(r"\d{4}-\d\d-\d\dT", stamp.get_attribute("datetime") or "")
    nxt = page.locator("#schedules td.next").first.inner_text()
    assert re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC", nxt), nxt
    page.wait_for_load_state("networkidle")
    assert [s for s in page.statuses if s[0] >= 400] == [], page.statuses
    assert any(url.split("?")[0].endswith("/static/favicon.svg") for _, url in page.statuses)
    page.context.close()


def test_dark_mode_follows_the_system(
    browser: Any,
    busy_inbox: Served,
    tmp_path: Path,
) -> None:
    page = open_page(browser, busy_inbox, 390, 844, color_scheme="dark")
    page.locator("article.park").first.wait_for()
    rgb = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert sum(int(n) for n in re.findall(r"\d+", rgb)[:3]) < 150, rgb
    page.screenshot(path=str(tmp_path / "inbox-dark.png"), full_page=True)
    page.context.close()


def test_a_decision_shows_at_once_and_its_result_lands_in_view(
    browser: Any,
    served: Served,  # noqa: F811
    butler: Any,
    script: Any,
    workdir: Path,
) -> None:
    ids = [park(butler, script, f"n{i}.txt", "note\n" * 40) for i in range(4)]
    page = open_page(browser, served, 390, 700)
    held: list[Any] = []
    page.route("**/decide*", lambda route: held.append(route))  # the answer waits for us
    last = page.locator(f"#park-{ids[0]}")  # the oldest: at the bottom
    last.scroll_into_view_if_needed()
    last.locator("button.approve").click()
    for _ in range(400):  # Playwright hands the request over while the page is waited on
        if held:
            break
        page.wait_for_timeout(50)
    button = last.locator("button.approve")
    assert button.inner_text() == "Approving…" and button.is_disabled()
    assert last.get_attribute("aria-busy") == "true"
    held[0].continue_()
    flash = page.locator("#flash .ok", has_text=f"park {ids[0]} approved")
    flash.wait_for()
    box = flash.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 700  # in view
    eventually(lambda: (workdir / "n0.txt").exists())
    page.context.close()
