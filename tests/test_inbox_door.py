"""Issue 33's inbox stories, in real Chromium against a real `butler serve`: "Decide as
marked" waits for a mark, "Always allow here" asks first and never keeps twice, and a
decided card leaves without sliding the next card's buttons under the pointer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from serve_support import eventually
from test_inbox_browser import WAIT_MS, park, served  # noqa: F401 - the fixtures
from test_pending_view import park_two


def open_page(chromium: Any, inbox: Any, width: int = 1100, height: int = 900) -> Any:
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(inbox.url)
    return page


def pending(butler: Any) -> list[str]:
    return [p["id"] for p in json.loads(butler("pending", "--json").stdout)]


def test_decide_as_marked_waits_for_a_mark(
    browser: Any,
    served: Any,  # noqa: F811
    butler: Any,
    script: Any,
    workdir: Path,
) -> None:
    """With nothing marked, "Decide as marked" would deny every action at once, with no
    undo: it is disabled until a call is marked."""
    pid = park_two(butler, script, workdir)  # a.txt and b.txt in one round
    page = open_page(browser, served)
    each = page.locator(f"#park-{pid} button.each")
    assert each.is_disabled()
    page.locator(f"#park-{pid} section.call[data-call='w1'] input[value='approve']").check()
    assert each.is_enabled()
    each.click()
    page.locator("#flash .ok", has_text=f"park {pid} decided").wait_for()
    eventually(lambda: (workdir / "a.txt").read_text() == "new\n")
    assert not (workdir / "b.txt").exists()  # unmarked: denied (R1)
    page.context.close()


def test_always_allow_here_asks_first_and_never_keeps_twice(
    browser: Any,
    served: Any,  # noqa: F811
    butler: Any,
    script: Any,
    workdir: Path,
) -> None:
    """The button only asks, showing what it would keep (the file, for this folder);
    nothing is decided or kept until the person confirms. Keeping the same file again
    approves, and the file still holds one kept approval."""
    first = park(butler, script, "kept.txt", "k")
    page = open_page(browser, served)
    page.locator(f"#park-{first} button.keep").click()
    ask = page.locator(f"#park-{first} .keep-ask")
    ask.wait_for()
    target = os.path.realpath(workdir / "kept.txt")
    assert f"write_file with path matching glob:{target}" in ask.inner_text()
    assert os.path.realpath(workdir) in ask.inner_text()
    page.wait_for_timeout(300)  # a decision sent by the first click would land by now
    assert first in pending(butler) and not (workdir / "kept.txt").exists()
    assert json.loads(butler("grants", "list", "--json").stdout) == []
    ask.locator("button.keep-no").click()
    assert ask.is_hidden()
    page.locator(f"#park-{first} button.keep").click()
    ask.locator("button.keep-yes").click()
    page.locator("#flash .ok", has_text=f"park {first} approved").wait_for()
    eventually(lambda: (workdir / "kept.txt").exists())
    [kept] = json.loads(butler("grants", "list", "--json").stdout)
    assert kept["patterns"] == {"path": f"glob:{target}"}

    # an unattended run without --yes-safe still parks, though the file is kept
    second = park(butler, script, "kept.txt", "other")
    page.reload()
    page.locator(f"#park-{second} button.keep").click()
    page.locator(f"#park-{second} button.keep-yes").click()
    page.locator("#flash .ok", has_text=f"park {second} approved").wait_for()
    eventually(lambda: (workdir / "kept.txt").read_text() == "other")
    assert len(json.loads(butler("grants", "list", "--json").stdout)) == 1  # no duplicate
    page.context.close()


def test_a_decided_card_leaves_without_moving_the_next_cards_buttons(
    browser: Any,
    served: Any,  # noqa: F811
    butler: Any,
    script: Any,
    workdir: Path,
) -> None:
    """Approve the top card and keep the pointer where it was: once the card has gone, the
    next card's Approve is where it was (not slid up under the pointer, nor pushed down by
    the answer's line); when the pointer leaves the list, the gap closes."""
    ids = [park(butler, script, f"n{i}.txt", "note\n" * 6) for i in range(3)]
    page = open_page(browser, served)
    top, nxt = ids[2], ids[1]  # newest first
    before = page.locator(f"#park-{nxt} button.approve").bounding_box()
    page.locator(f"#park-{top} button.approve").click()
    page.locator("#flash .ok", has_text=f"park {top} approved").wait_for()
    page.locator(f"#park-{top}").wait_for(state="detached")
    page.wait_for_timeout(1500)  # a refresh or two after the card left
    after = page.locator(f"#park-{nxt} button.approve").bounding_box()
    assert before is not None and after is not None
    assert abs(after["y"] - before["y"]) < 1, (before, after)
    page.mouse.move(5, 5)  # out of the list
    page.locator("#parks .gone").wait_for(state="detached")
    moved = page.locator(f"#park-{nxt} button.approve").bounding_box()
    assert moved is not None and moved["y"] < before["y"]
    page.context.close()
