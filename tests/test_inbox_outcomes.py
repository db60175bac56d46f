"""What became of a decision made in the inbox is kept in a store of its own
(``inbox-outcomes.jsonl``), not in the scheduler's ``schedule.db``: a real `butler serve` on
127.0.0.1, real HTTP, real files. A corrupt or unreadable store is named in one line and left
as it is while the page serves; an outcome is listed once however often the page refreshes;
a server with nothing scheduled makes no ``schedule.db``; rows an older inbox kept in
``schedule.db`` are still shown."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from serve_support import Served, eventually, park_writing, served_fixture  # noqa: F401 (a fixture)

from butler_cli.schedule.store import ScheduleStore

OUTCOMES = "inbox-outcomes.jsonl"


def outcomes_of(s: Served) -> str:
    status, body = s.request("/parts")
    assert status == 200, body
    return str(json.loads(body)["outcomes"])


def test_serve_with_nothing_scheduled_or_decided_makes_no_schedule_db(
    served: Any, butler_home: Path
) -> None:
    """The scheduler marked interrupted runs and claimed due jobs in write transactions that
    created ``schedule.db`` on every start, though there was nothing to run."""
    s = served()
    status, page = s.request("/")
    assert status == 200 and "Nothing has run yet." in page and "No schedules" in page
    assert "Nothing has run yet." in outcomes_of(s)
    out = s.stop()
    assert s.proc.returncode == 0, out
    assert sorted(p.name for p in butler_home.glob("schedule.db*")) == []
    assert not (butler_home / OUTCOMES).exists()


def test_a_decision_in_the_inbox_is_kept_in_its_own_store(
    served: Any, butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    """The outcome is one line of ``inbox-outcomes.jsonl`` (no ``schedule.db`` made for it),
    shown under Recent outcomes, and still shown by the next server."""
    pid = park_writing(butler, script, "out.txt", "Wrote out.txt for you.")
    s = served("--no-scheduler")
    status, answer = s.decide(pid, "approve")
    assert status == 200 and answer["ok"], answer
    eventually(lambda: "Wrote out.txt for you." in outcomes_of(s))
    s.stop()
    assert (workdir / "out.txt").read_text() == "hello"
    assert list(butler_home.glob("schedule.db*")) == []
    kept = [json.loads(x) for x in (butler_home / OUTCOMES).read_text().splitlines()]
    assert [(k["park"], k["status"], k["text"]) for k in kept] == [
        (pid, "done", "Wrote out.txt for you.")
    ]
    assert (butler_home / OUTCOMES).stat().st_mode & 0o777 == 0o600
    again = served("--no-scheduler")
    shown = outcomes_of(again)
    assert "Wrote out.txt for you." in shown and f">{pid}</a>" in shown
    assert "class='outcome done'" in shown and "inbox" in shown


OLDER = (
    '{"park":"abcdefgh","task":"an older task","status":"done","started_at":'
    '"2026-12-01T08:00:00+00:00","finished_at":"2026-12-01T08:00:01+00:00","text":"older"}\n'
)


@pytest.mark.parametrize("damage", ["garbage", "torn", "directory"])
def test_a_corrupt_or_unreadable_outcome_store_is_named_and_left_in_place(
    served: Any, butler: Any, script: Any, butler_home: Path, workdir: Path, damage: str
) -> None:
    """The page still serves and says in one line what is wrong with the store; the store is
    not rewritten or removed (garbage stays byte for byte, a new outcome goes after it); a
    decision still runs when its outcome cannot be kept, and the server says so in one line."""
    pid = park_writing(butler, script, "out.txt", "Wrote it.")
    store = butler_home / OUTCOMES
    bad = b'{"park": "torn\n\x00\xff not json at all\n'
    if damage == "torn":  # a crash in the middle of the last line
        bad = OLDER.encode() + b'{"park":"abcdefgh","task":"half'
    if damage == "directory":
        store.mkdir()
    else:
        store.write_bytes(bad)
    s = served("--no-scheduler")
    status, page = s.request("/")
    assert status == 200, page
    problems = re.findall(r"<p class='problem'>[^<]*</p>", outcomes_of(s))
    assert len(problems) == 1 and OUTCOMES in problems[0], outcomes_of(s)
    assert "left as it is" in problems[0]
    status, answer = s.decide(pid, "approve")
    assert status == 200 and answer["ok"], answer
    eventually(lambda: (workdir / "out.txt").exists())
    if damage != "directory":
        eventually(lambda: "Wrote it." in outcomes_of(s))
        assert store.read_bytes().startswith(bad)
        assert len(re.findall("<p class='problem'>", outcomes_of(s))) == 1
    if damage == "torn":  # the line after the torn one is whole, and the older one still shown
        assert "older" in outcomes_of(s) and "Wrote it." in outcomes_of(s)
        assert store.read_bytes()[len(bad) : len(bad) + 2] == b"\n{"
    out = s.stop()
    assert s.proc.returncode == 0 and "Traceback" not in out, out
    if damage == "directory":
        assert store.is_dir() and list(store.iterdir()) == []
        said = [line for line in out.splitlines() if OUTCOMES in line]
        assert len(said) == 1 and pid in said[0], out


def test_an_outcome_is_listed_once_while_the_page_refreshes(
    served: Any, butler: Any, script: Any, butler_home: Path
) -> None:
    """A page refreshing while decisions end never lists one decision twice (its "continuing"
    line and its outcome, or its outcome half-written): the outcome is kept and the decision
    leaves the running list in one step."""
    parks = [park_writing(butler, script, f"f{i}.txt", f"answer-{i}") for i in range(6)]
    s = served("--no-scheduler")
    seen: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def refresh() -> None:
        while not stop.is_set():
            status, body = s.request("/parts")
            if status != 200:  # kept: an exception here would end the thread unseen
                failed.append(f"{status}: {body}")
                continue
            seen.append(str(json.loads(body)["outcomes"]))

    pollers = [threading.Thread(target=refresh) for _ in range(2)]
    for t in pollers:
        t.start()
    try:
        for i, pid in enumerate(parks):
            status, answer = s.decide(pid, "approve")
            assert status == 200 and answer["ok"], answer
            eventually(lambda i=i: f"answer-{i}" in outcomes_of(s))
    finally:
        stop.set()
        for t in pollers:
            t.join()
    assert failed == [], s.stop()[-3000:]
    assert len(seen) > 20
    for page in seen:
        items = re.findall(r"<li class='outcome.*?</li>", page)
        for i, pid in enumerate(parks):
            about = [x for x in items if pid in x or f"write f{i}.txt" in x]
            assert len(about) <= 1, about
    final = re.findall(r"<li class='outcome.*?</li>", outcomes_of(s))
    assert len(final) == 6 and all("outcome done" in x for x in final)


def test_outcomes_an_older_inbox_kept_in_schedule_db_are_still_shown(
    served: Any, butler_home: Path
) -> None:
    """Before this store, the inbox wrote its outcomes as runs in ``schedule.db``: they stay
    on the page beside the new ones."""
    old = ScheduleStore(butler_home)
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    run = old.start_run(None, "inbox", "an old decision's task", now)
    old.finish_run(run, "done", now, park_id="abcdefgh", text="done the old way")
    s = served("--no-scheduler")
    shown = outcomes_of(s)
    assert "an old decision&#x27;s task" in shown or "an old decision's task" in shown
    assert "done the old way" in shown and ">abcdefgh</a>" in shown


def test_a_corrupt_schedule_db_is_named_and_left_in_place_while_the_page_serves(
    served: Any, butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    """The page's outcomes and schedules read ``schedule.db`` too: a file there that is not a
    database was a 500 for the whole page and a traceback from the scheduler's thread. Now the
    parks and the inbox's outcomes still show, one line names the file, and it stays as it
    was; a decision still runs."""
    pid = park_writing(butler, script, "out.txt", "Wrote it.")
    db = butler_home / "schedule.db"
    bad = b"this is not a database\n" * 100
    db.write_bytes(bad)
    s = served()
    status, page = s.request("/")
    assert status == 200, page
    assert f"data-park='{pid}'" in page or pid in page
    problems = re.findall(r"<p class='problem'>[^<]*</p>", page)
    assert problems and all("schedule.db" in p for p in problems), problems
    status, answer = s.decide(pid, "approve")
    assert status == 200 and answer["ok"], answer
    eventually(lambda: "Wrote it." in outcomes_of(s))
    out = "".join(s.lines) + s.stop()  # the scheduler may say it before the URL is printed
    assert s.proc.returncode == 0 and "Traceback" not in out, out
    assert len([line for line in out.splitlines() if "schedule.db" in line]) == 1, out
    assert db.read_bytes() == bad
    listed = butler("schedule", "list")
    assert listed.returncode != 0 and "Traceback" not in listed.stderr, listed.stderr
    assert "schedule.db" in listed.stderr and len(listed.stderr.strip().splitlines()) == 1


def test_the_page_version_is_read_while_parks_are_decided_and_removed(tmp_path: Path) -> None:
    """The page's version lists the parks folder and stamps each file: a park decided and
    removed between the two (every decision removes one) was a FileNotFoundError and a 500
    for the page that asked then. Here files come and go while the version is read."""
    from butler_cli.app.views.inbox import signature

    parks = tmp_path / "parks"
    parks.mkdir()
    done = threading.Event()

    def churn() -> None:
        for i in range(4000):
            park = parks / f"p{i % 8}.json"
            park.write_bytes(b"{}")
            park.unlink()
        done.set()

    worker = threading.Thread(target=churn)
    worker.start()
    reads = 0
    try:
        while not done.is_set():
            signature(tmp_path)
            reads += 1
    finally:
        worker.join()
    assert reads > 10
