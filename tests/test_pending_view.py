"""Issue 22: one typed view of what waits (``app.parks.PendingApproval``), and every surface
rendering only it — `butler show`, the chat's question, `butler resume`'s, the inbox card
(real Chromium against a real `butler serve`). A round of two governed calls — an overwrite and
a new file — is shown whole, each call with its change as plain ``-``/``+`` lines; a secret in
an argument is masked on every surface; the inbox's cached page is never older than the file
a preview shows.

Set BUTLER_UPDATE_SCREENSHOTS=1 to write the README's screenshot (the two-call card) to
docs/inbox.png."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pexpect
from conftest import call, spawn_butler
from serve_support import eventually, start_serve
from test_inbox_browser import served  # noqa: F401 - the same fixtures
from test_inbox_look import open_page

PASSWORD = "hunter2-VIEWCANARY"
DOCS = Path(__file__).resolve().parent.parent / "docs"


def two_writes(script: Any, *, secret: bool = False) -> str:
    """An overwrite of a.txt (which holds "old") and a new b.txt, asked in one round; with
    ``secret``, the second carries a credential-named argument."""
    extra = {"password": PASSWORD} if secret else {}
    return str(
        script(
            {
                "tool_calls": [
                    call("write_file", "w1", path="a.txt", content="new\n"),
                    call("write_file", "w2", path="b.txt", content="beta\n", **extra),
                ]
            },
            {"text": "Both done."},
        )
    )


def park_two(butler: Any, script: Any, workdir: Path, *, secret: bool = False) -> str:
    (workdir / "a.txt").write_text("old\n")
    ran = butler("run", "--model", two_writes(script, secret=secret), "write both", "--json")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def test_show_lists_every_asked_call_with_its_change(
    butler: Any, script: Any, workdir: Path
) -> None:
    park_id = park_two(butler, script, workdir, secret=True)
    shown = butler("show", park_id)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "action 1 of 2" in text and "action 2 of 2" in text, text
    assert re.search(r"^\s+-old$", text, re.M) and re.search(r"^\s+\+new$", text, re.M), text
    assert re.search(r"new file .*b\.txt", text) and "1 | beta" in text, text
    assert text.index("-old") < text.index("action 2 of 2") < text.index("1 | beta")
    assert PASSWORD not in text and '"password": "****"' in text, text
    exact = json.loads(butler("show", park_id, "--json").stdout)  # --json keeps it exact
    assert PASSWORD in json.dumps(exact["calls"])


def test_pending_lists_every_asked_call(butler: Any, script: Any, workdir: Path) -> None:
    park_id = park_two(butler, script, workdir, secret=True)
    listed = butler("pending")
    assert listed.returncode == 0, listed.stderr
    assert "2 actions" in listed.stdout, listed.stdout
    assert "action 1 of 2" in listed.stdout and "action 2 of 2" in listed.stdout
    assert "a.txt" in listed.stdout and "b.txt" in listed.stdout
    [row] = json.loads(butler("pending", "--json").stdout)
    assert row["id"] == park_id and [a["title"] for a in row["actions"]][1].count("b.txt") == 1
    assert PASSWORD not in listed.stdout + json.dumps(row)


def test_resume_and_the_park_page_show_both_calls_masked(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    park_id = park_two(butler, script, workdir, secret=True)
    child = spawn_butler(["resume", park_id], butler_home, workdir)
    child.logfile_read = io.StringIO()
    child.expect("action 2 of 2")
    child.expect(r"Approve all 2 actions shown\? \[y/n/e")
    child.sendline("n")
    child.expect("Note for the model")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    seen = child.logfile_read.getvalue()
    assert "-old" in seen and "1 | beta" in seen and '"password": "****"' in seen, seen
    assert PASSWORD not in seen
    s = start_serve(butler_home, workdir, "--no-scheduler")
    try:
        status, page = s.request(f"/park/{park_id}")
    finally:
        s.stop()
    assert (
        status == 200
        and "action 2 of 2" in page
        and "&quot;password&quot;: &quot;****&quot;" in page
    )
    # decided now: its change is not diffed against today's files (issue 35 item 9)
    assert page.count("not shown: the park is decided") == 2, page
    assert PASSWORD not in page


def test_show_of_a_name_too_long_for_the_disk_says_so_without_a_traceback(
    butler: Any, script: Any
) -> None:
    """The preview stat()s the path: a name past the file system's limit raised OSError out
    of `butler show` (and took the inbox page down with a 500)."""
    name = "x" * 300 + ".txt"
    model = script({"tool_calls": [call("write_file", "c1", path=name, content="a")]})
    ran = butler("run", "--model", model, "write it", "--json")
    park_id = json.loads(ran.stdout.splitlines()[0])["park_id"]
    shown = butler("show", park_id)
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stderr and "no preview: File name too long" in shown.stdout


def test_the_chat_shows_each_call_with_its_change_masks_and_runs_both_once(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    (workdir / "a.txt").write_text("old\n")
    child = spawn_butler(["chat", "--model", two_writes(script, secret=True)], butler_home, workdir)
    child.expect("you ›")
    child.logfile_read = io.StringIO()
    child.sendline("write both")
    child.expect("action 1 of 2")
    child.expect(r"-old")
    child.expect(r"\+new")
    child.expect("action 2 of 2")
    child.expect(r"1 \| beta")
    child.expect(r"Approve all 2 actions shown\? \[y/n/e/l\]")
    seen = child.logfile_read.getvalue()
    assert not (workdir / "b.txt").exists()
    child.sendline("y")
    child.expect("Both done.")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert "password: ****" in seen and PASSWORD not in seen  # the one argument not shown above
    assert (workdir / "a.txt").read_text() == "new\n"
    assert (workdir / "b.txt").read_text() == "beta\n"
    audit = [json.loads(x) for x in (butler_home / "audit.jsonl").read_text().splitlines()]
    assert [x["outcome"] for x in audit if x["event"] == "resume"] == ["ran", "ran"]


def test_the_inbox_card_shows_both_calls_as_changes_and_approving_runs_both_once(
    browser: Any,
    served: Any,  # noqa: F811
    butler: Any,
    script: Any,
    workdir: Path,
    butler_home: Path,
) -> None:
    park_id = park_two(butler, script, workdir, secret=True)
    page = open_page(browser, served, 1100, 900)
    card = page.locator(f"#park-{park_id}")
    card.wait_for()
    calls = card.locator("section.call")
    assert calls.count() == 2
    first, second = calls.nth(0).inner_text(), calls.nth(1).inner_text()
    assert "a.txt" in first and re.search(r"^-old$", first, re.M), first
    assert re.search(r"^\+new$", first, re.M), first
    assert "b.txt" in second and "1 | beta" in second, second
    assert PASSWORD not in card.inner_text() and PASSWORD not in page.content()
    assert card.locator("pre.change span.del").first.inner_text() == "-old"
    shot = DOCS / "inbox.png" if os.environ.get("BUTLER_UPDATE_SCREENSHOTS") else None
    card.screenshot(path=str(shot or workdir.parent / "inbox.png"))
    card.locator("input.note").fill("typed before the file changed")
    (workdir / "a.txt").write_text("older still\n")  # the open card follows the file
    card.locator("pre.change span.del", has_text="-older still").wait_for()
    assert card.locator("input.note").input_value() == "typed before the file changed"
    card.locator("button.approve").click()
    page.locator("#flash .ok", has_text=f"park {park_id} approved").wait_for()
    eventually(lambda: (workdir / "b.txt").exists())
    page.locator("#outcomes .outcome.done", has_text="Both done.").wait_for()
    assert (workdir / "a.txt").read_text() == "new\n"
    assert (workdir / "b.txt").read_text() == "beta\n"
    audit = [json.loads(x) for x in (butler_home / "audit.jsonl").read_text().splitlines()]
    assert [x["outcome"] for x in audit if x["event"] == "resume"] == ["ran", "ran"]
    page.context.close()


def test_the_inbox_decides_each_call_as_marked(
    browser: Any,
    served: Any,  # noqa: F811
    butler: Any,
    script: Any,
    workdir: Path,
) -> None:
    park_id = park_two(butler, script, workdir)
    page = open_page(browser, served, 1100, 900)
    card = page.locator(f"#park-{park_id}")
    card.locator("section.call").nth(0).get_by_label("deny").check()
    card.locator("section.call").nth(1).get_by_label("approve").check()
    card.locator("input.note").fill("keep a as it is")
    card.locator("button.each").click()
    page.locator("#flash .ok", has_text="1 approved, 1 denied").wait_for()
    eventually(lambda: (workdir / "b.txt").exists())
    page.locator("#outcomes .outcome.done").wait_for()
    assert (workdir / "a.txt").read_text() == "old\n"
    shown = json.loads(butler("show", park_id, "--json").stdout)
    assert {k: v["approved"] for k, v in shown["decisions"].items()} == {"w1": False, "w2": True}
    assert shown["decisions"]["w1"]["note"] == "keep a as it is"
    page.context.close()


def test_the_inbox_page_follows_the_file_a_preview_shows(
    butler: Any, script: Any, workdir: Path, butler_home: Path
) -> None:
    """The inbox keeps its rendered page while its version holds: the version covers the files
    the previews read, so an edit to the file being overwritten shows at once."""
    park_two(butler, script, workdir)
    s = start_serve(butler_home, workdir, "--no-scheduler")
    try:
        assert "-old" in s.request("/")[1]
        status, body = s.request("/parts?v=")
        version = json.loads(body)["version"]
        assert s.request(f"/parts?v={version}")[0] == 204  # kept: nothing changed
        (workdir / "a.txt").write_text("older still\n")
        page = s.request("/")[1]
        assert "-older still" in page and "\n-old\n" not in page, page
        status, body = s.request(f"/parts?v={version}")
        assert status == 200 and "-older still" in json.loads(body)["parks"]
        newer = json.loads(body)["version"]
        assert newer != version and s.request(f"/parts?v={newer}")[0] == 204
    finally:
        s.stop()
