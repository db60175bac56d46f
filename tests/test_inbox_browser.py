"""The inbox in a real browser: Playwright driving Debian's chromium against a real
`butler serve` on 127.0.0.1. One browser for the worker (``browser`` in conftest.py); a fresh context (no cookies) each
test.

The README's screenshot (docs/inbox.png) is written by tests/test_pending_view.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import call
from serve_support import QuietHandler, Served, eventually, loopback_server, start_serve

WAIT_MS = 20_000


@pytest.fixture
def served(butler_home: Path, workdir: Path) -> Iterator[Served]:
    s = start_serve(butler_home, workdir, "--no-scheduler")
    yield s
    s.stop()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    """A page of a fresh context; every request it makes is recorded in ``page.seen``."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(WAIT_MS)
    tab = context.new_page()
    seen: list[str] = []
    tab.on("request", lambda req: seen.append(req.url))
    tab.seen = seen
    yield tab
    context.close()


def park(butler: Any, script: Any, path: str, content: str) -> str:
    turns = [
        {"tool_calls": [call("write_file", "c1", path=path, content=content)]},
        {"text": f"Wrote {path}."},
    ]
    ran = butler("run", "--model", script(*turns), f"write {path}", "--json")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout)["park_id"])


def audit(home: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (home / "audit.jsonl").read_text().splitlines()]


LONG = "Today\n" + "- a line of the plan\n" * 150 + "\x1b[2J\u202egnp.exe ; END-OF-CONTENT"


def test_a_park_appears_live_shows_every_argument_and_is_approved_or_denied(
    page: Any, served: Served, butler: Any, script: Any, workdir: Path, butler_home: Path
) -> None:
    page.goto(served.url)
    page.get_by_text("No parks awaiting a decision.").wait_for()
    assert page.context.cookies() == []  # the token is in the page and its links, no cookie

    first = park(butler, script, "plan.txt", LONG)
    second = park(butler, script, "notes.txt", "nothing much")
    card = page.locator(f"#park-{first}")
    card.wait_for()  # appears without a reload
    page.locator(f"#park-{second}").wait_for()
    assert page.locator("article.park").first.get_attribute("data-id") == second  # newest first

    # the card shows the call once: the new file whole in its change, and the raw arguments
    # one click away (folded, in the page whole)
    seen = card.inner_text()
    assert "END-OF-CONTENT" in seen and seen.count("- a line of the plan") == 150, seen
    assert card.locator("pre.arguments").inner_text() == ""  # folded until asked for
    card.locator("details.raw summary").click()
    shown = card.locator("pre.arguments").inner_text()
    assert "END-OF-CONTENT" in shown and shown.count("- a line of the plan") == 150  # whole
    assert "\\u001b[2J" in shown and "<U+202E>" in shown  # neutralised as in the terminal
    assert "\x1b" not in shown and "\u202e" not in shown
    assert card.locator(".tool").inner_text() == "write_file"
    assert "asking you first" in card.locator(".reason").inner_text()
    assert card.locator(".task").inner_text() == "write plan.txt"

    page.screenshot(path=str(workdir.parent / "inbox.png"), full_page=False)

    card.locator("button.approve").click()
    page.locator("#flash .ok", has_text=f"park {first} approved").wait_for()
    eventually(lambda: (workdir / "plan.txt").exists())
    assert (workdir / "plan.txt").read_text() == LONG

    other = page.locator(f"#park-{second}")
    other.locator("input.note").fill("not today, thanks")
    other.locator("button.deny").click()
    page.locator("#flash .ok", has_text=f"park {second} denied").wait_for()
    assert not (workdir / "notes.txt").exists()

    page.locator("#outcomes .outcome.done", has_text="Wrote notes.txt.").wait_for()
    page.get_by_text("No parks awaiting a decision.").wait_for()
    decisions = {e["park"]: e for e in audit(butler_home) if e["event"] == "decision"}
    assert decisions[first]["decision"] == "approve"
    assert decisions[second]["decision"] == "deny"
    assert decisions[second]["note"] == "not today, thanks"
    shown_park = json.loads(butler("show", second, "--json").stdout)
    assert shown_park["decision"] == {"approved": False, "note": "not today, thanks"}

    # The park's page (its link carries the token): what `butler show` shows, its audit trail.
    page.locator("#outcomes a", has_text=second).first.click()
    page.locator("table.audit").wait_for()
    trail = page.locator("table.audit").inner_text()
    assert "verdict" in trail and "decision" in trail and "not today, thanks" in trail
    assert all(url.startswith(served.base) for url in page.seen), page.seen


def test_two_tabs_and_the_terminal_decide_once(
    page: Any, served: Served, butler: Any, script: Any, workdir: Path
) -> None:
    pid = park(butler, script, "once.txt", "one")
    page.goto(served.url)
    other = page.context.new_page()
    other.goto(served.url)
    other.locator(f"#park-{pid}").wait_for()
    # A tab left open from before: its view is stale (its refresh stopped), its card still there.
    other.evaluate("() => { for (let i = 1; i < 10000; i++) clearInterval(i); }")
    page.locator(f"#park-{pid} button.approve").click()
    page.locator("#flash .ok", has_text=f"park {pid} approved").wait_for()
    other.locator(f"#park-{pid} button.deny").click()  # its card is still on screen
    other.locator("#flash .refused", has_text="already decided").wait_for()
    assert butler("resume", pid, "--deny").returncode == 5
    eventually(lambda: (workdir / "once.txt").exists())
    assert (workdir / "once.txt").read_text() == "one"


def test_no_token_and_a_wrong_csrf_token_are_refused_in_the_browser(
    browser: Any, page: Any, served: Served, butler: Any, script: Any, workdir: Path
) -> None:
    pid = park(butler, script, "guarded.txt", "x")
    stranger = browser.new_context()
    try:
        tab = stranger.new_page()
        response = tab.goto(served.base + "/")
        assert response.status == 403 and "token" in tab.content()
        assert pid not in tab.content()
    finally:
        stranger.close()
    page.goto(served.url)
    page.locator(f"#park-{pid}").wait_for()
    status = page.evaluate(
        """async (pid) => {
            const body = new URLSearchParams({decision: "approve", csrf: "forged"});
            const res = await fetch(`/park/${pid}/decide`,
                {method: "POST", body, headers: {"X-CSRF-Token": "forged"}});
            return res.status;
        }""",
        pid,
    )
    assert status == 403
    assert not (workdir / "guarded.txt").exists()
    assert [p["id"] for p in json.loads(butler("pending", "--json").stdout)] == [pid]


class OtherPort:
    """A real HTTP server on another 127.0.0.1 port: it records every Cookie header a browser
    sends it, and serves a page whose script tries to read the inbox and approve ``park``."""

    def __init__(self, inbox: str, park: str) -> None:
        self.cookies: list[str] = []
        self.reports: list[dict[str, Any]] = []
        owner = self
        script = """
(async () => {
  const out = {};
  try {
    const r = await fetch(INBOX + "/", {credentials: "include"});
    out.read = r.status + " " + (await r.text()).slice(0, 300);
  } catch (e) { out.read = "blocked: " + e; }
  try {
    await fetch(INBOX + "/park/" + PARK + "/decide", {method: "POST", mode: "no-cors",
      credentials: "include", body: new URLSearchParams({decision: "approve"})});
    out.post = "sent";
  } catch (e) { out.post = "blocked: " + e; }
  await fetch("/report", {method: "POST", body: JSON.stringify(out)});
  document.title = "done";
})();
""".replace("INBOX", json.dumps(inbox)).replace("PARK", json.dumps(park))
        page = f"<!doctype html><title>other</title><script>{script}</script>".encode()

        class Handler(QuietHandler):
            def _cookie(self) -> None:
                if self.headers.get("Cookie"):
                    owner.cookies.append(self.headers["Cookie"])

            def do_GET(self) -> None:  # noqa: N802
                self._cookie()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def do_POST(self) -> None:  # noqa: N802
                self._cookie()
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.reports.append(json.loads(body))
                self.send_response(204)
                self.end_headers()

        self.server = loopback_server(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_another_port_on_this_host_gets_no_credential_and_decides_nothing(
    page: Any, served: Served, butler: Any, script: Any, workdir: Path
) -> None:
    """Cookies ignore ports: with the inbox open, the same browser visiting another server on
    127.0.0.1 sent it the inbox's token cookie, and that server approved a park with it. Now
    the other server receives no credential; its page cannot read the inbox (nor its CSRF
    token) nor approve; replaying every cookie it received, server-side with the inbox's own
    Host, is refused; the park stays pending and nothing is written."""
    pid = park(butler, script, "stolen.txt", "x")
    page.goto(served.url)
    page.locator(f"#park-{pid}").wait_for()  # the person has the inbox open and working
    assert page.context.cookies() == []  # the credential is kept in no cookie at all
    other = OtherPort(served.base, pid)
    try:
        page.goto(other.url)
        page.wait_for_function("document.title === 'done'")
        eventually(lambda: len(other.reports) == 1)
        report = other.reports[0]
        assert report["read"].startswith("blocked"), report  # the page is not readable there
        attempts = []
        for header in other.cookies:  # what a server does with whatever it received
            for pair in header.split(";"):
                value = pair.strip().partition("=")[2]
                for sent in ({"Cookie": pair.strip()}, {"Authorization": f"Bearer {value}"}):
                    status, body = served.request("/", token=None, headers=sent)
                    found = re.search(r"name='csrf-token' content='([^']+)'", body)
                    csrf = {"X-CSRF-Token": found.group(1) if found else "unknown"}
                    decided = served.request(
                        f"/park/{pid}/decide", data={"decision": "approve"}, token=None,
                        headers={**sent, **csrf},
                    )  # fmt: skip
                    attempts.append((status, decided))
        assert all(a[0] == 403 and a[1][0] == 403 for a in attempts), attempts
        assert other.cookies == []  # nothing at all reached it
    finally:
        other.close()
    assert not (workdir / "stolen.txt").exists()
    assert [p["id"] for p in json.loads(butler("pending", "--json").stdout)] == [pid]


def test_a_note_being_typed_keeps_its_focus_and_every_key_while_the_page_refreshes(
    page: Any, served: Served, butler: Any, script: Any
) -> None:
    """The page refreshes its cards every second when anything changed (a new park, an
    outcome): a card the person is typing a note into is never taken out and put back, so
    the note keeps its focus and no key typed goes nowhere."""
    page.goto(served.url)
    page.get_by_text("No parks awaiting a decision.").wait_for()
    first = park(butler, script, "a.txt", "alpha")
    note = page.locator(f"#park-{first} input.note")
    note.wait_for()
    note.click()
    page.keyboard.type("not ")
    second = park(butler, script, "b.txt", "beta")  # the page changes while the note is typed
    page.locator(f"#park-{second}").wait_for()
    third = park(butler, script, "c.txt", "gamma")
    page.locator(f"#park-{third}").wait_for()
    page.keyboard.type("today")
    assert note.input_value() == "not today"
    assert page.evaluate("document.activeElement && document.activeElement.className") == "note"
