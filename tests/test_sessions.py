"""Sessions and runs (issue 23): `butler serve` keeps one session per recorded context and
reuses it across clicks — the config and policy are built once — while a park of another
context gets its own, and a policy file edited between two clicks is obeyed on the second."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import call
from serve_support import Served, eventually, start_serve

from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.session import Sessions
from butler_cli.app.views.inbox import inbox_outcomes
from butler_cli.schedule.store import ScheduleStore

WRITE_A = {"tool_calls": [call("write_file", "w", path="a.txt", content="a")]}
WRITE_B = {"tool_calls": [call("write_file", "w2", path="b.txt", content="b")]}


def park(butler: Any, model: str, *flags: str, cwd: Path | None = None) -> str:
    ran = butler("run", "--model", model, *flags, "write a", "--json", cwd=cwd)
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def builds(counter: Path) -> list[str]:
    return counter.read_text().splitlines() if counter.exists() else []


def approve(s: Served, home: Path, park_id: str) -> None:
    """Approve on the page and wait until the decision is over — its outcome recorded, which
    the inbox does once the run has closed and given its session back (a click before that
    would rightly get a second session)."""
    done = len(decided(home))
    status, answer = s.decide(park_id, "approve")
    assert status == 200, answer
    eventually(lambda: len(decided(home)) > done)


def decided(home: Path) -> list[str]:
    """What the inbox's decisions came to, newest first (its outcome store)."""
    return [o.status for o in inbox_outcomes(home)[0]]


def test_serve_builds_one_session_per_recorded_context(
    butler: Any, script: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    model = script(WRITE_A, {"text": "written"})
    first, second = park(butler, model), park(butler, model)  # one context, two parks
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = park(butler, model, cwd=elsewhere)  # another folder: another context
    assert butler("memory", "add", "The person's cat is called Ada.").returncode == 0
    newer = park(butler, model)  # this folder, but another memory block was sent
    counter = tmp_path / "sessions.txt"
    s = start_serve(butler_home, workdir, BUTLER_TEST_COUNT_SESSIONS=str(counter))
    try:
        for pid in (first, second):
            approve(s, butler_home, pid)
        assert len(builds(counter)) == 1, builds(counter)  # the second click built nothing
        approve(s, butler_home, other)
        assert (elsewhere / "a.txt").read_text() == "a"  # in its own folder, not the first's
        approve(s, butler_home, newer)
    finally:
        s.stop()
    assert decided(butler_home) == ["done"] * 4
    assert [line.split()[0] for line in builds(counter)] == [
        str(workdir),
        str(elsewhere),
        str(workdir),
    ]


def test_a_policy_file_edited_between_two_clicks_is_obeyed_on_the_second(
    butler: Any, script: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """The rule for b.txt goes from "ask" to "refuse" between two approvals of one context:
    same size, same inode, its modification time put back — only the bytes changed."""
    rules = tmp_path / "rules.toml"
    rule = '[[rule]]\nname = "b"\ntool = "write_file"\nargs = {path = "b.txt"}\n'
    rules.write_text(rule + 'tier = "dangerous"\n')
    flags = ("--policy", "tiered", "--policy-file", str(rules))
    model = script(WRITE_A, WRITE_B, {"text": "done"})
    first, second = park(butler, model, *flags), park(butler, model, *flags)
    counter = tmp_path / "sessions.txt"
    s = start_serve(butler_home, workdir, BUTLER_TEST_COUNT_SESSIONS=str(counter))
    try:
        approve(s, butler_home, first)
        before = os.stat(rules)
        with open(rules, "r+", encoding="utf-8") as fh:  # in place: the same inode and size
            fh.write(rule + 'tier = "forbidden"\n')
        os.utime(rules, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert os.stat(rules).st_size == before.st_size
        approve(s, butler_home, second)
    finally:
        s.stop()
    assert decided(butler_home) == ["done", "parked"]
    pending = json.loads(butler("pending", "--json").stdout)
    # the first asked again for b.txt (one new park); the second was refused it, as edited
    assert len(pending) == 1 and "b.txt" in json.dumps(pending[0]), pending
    assert not (workdir / "b.txt").exists()
    assert len(builds(counter)) == 2  # the edit rebuilt the session


def test_a_policy_file_swapped_for_a_fifo_between_clicks_refuses_and_never_hangs(
    butler: Any, script: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """Comparing the kept session's files must not wait on a FIFO put in a rule file's place:
    the second click is refused in one line, nothing runs, and the server stops cleanly."""
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nname = "b"\ntool = "write_file"\ntier = "dangerous"\n')
    flags = ("--policy", "tiered", "--policy-file", str(rules))
    model = script(WRITE_A, {"text": "done"})
    first, second = park(butler, model, *flags), park(butler, model, *flags)
    s = start_serve(butler_home, workdir)
    try:
        approve(s, butler_home, first)
        (workdir / "a.txt").unlink()
        rules.unlink()
        os.mkfifo(rules)
        status, answer = s.decide(second, "approve")
        assert status != 200 or not answer["ok"], answer
        assert "policy file" in answer["message"] and "cannot be read" in answer["message"]
    finally:
        s.stop(timeout=30)
    assert not (workdir / "a.txt").exists()
    assert [p["id"] for p in json.loads(butler("pending", "--json").stdout)] == [second]


def test_a_kept_session_is_lent_to_one_run_at_a_time(
    butler_home: Path, workdir: Path, script: Any
) -> None:
    """Two runs at once get two sessions (the inbox decides on threads); given back, the
    next run of that context takes one of them, built nothing new."""
    sessions = Sessions(butler_home)
    opts = RunOptions(model=script({"text": "hi"}))
    one, two = sessions.lend(opts, workdir), sessions.lend(opts, workdir)
    assert one is not two and one.block == two.block
    sessions.give_back(one)
    sessions.give_back(two)
    again = sessions.lend(opts, workdir)
    assert again in (one, two)
    other = sessions.lend(RunOptions(model=script({"text": "other"})), workdir)
    assert other not in (one, two)
    sessions.give_back(again)
    sessions.give_back(other)
    sessions.close()
    assert one.memory is not None


def test_a_fact_forgotten_between_two_clicks_is_not_sent_by_the_second(
    fake: Any, butler: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """Two parks of one context were sent the same block; the person forgets a fact of it
    after the first approval: the kept session's block is stale, the second resume sends the
    block composed afresh (as `butler resume` would), never the forgotten fact."""
    from fake_llm import Reply, openai_stream, split

    for fact in ("Ana's passport number is X1234567.", "Ana prefers short answers."):
        assert butler("memory", "add", fact, "--importance", "high").returncode == 0
    facts = json.loads(butler("memory", "list", "--kind", "semantic", "--json").stdout)
    passport = next(e["id"] for e in facts if "passport" in e["text"])
    env = {"OPENAI_API_KEY": "sk-test-sessions-000000000"}
    args = ("--model", "openai:gpt-test", "--base-url", fake.url + "/v1")
    write = split({"path": "a.txt", "content": "hi"})
    parks = []
    for _ in range(2):
        fake.replies = [Reply(events=openai_stream("", [("w1", "write_file", write)]))]
        ran = butler("run", *args, "write a.txt", "--json", env=env)
        assert ran.returncode == 3, ran.stderr
        parks.append(json.loads(ran.stdout)["park_id"])
    sent = [q["body"]["messages"][0]["content"] for q in fake.requests]
    assert sent[0] == sent[1] and "passport" in sent[0]  # one context
    counter = tmp_path / "sessions.txt"
    fake.replies = [Reply(events=openai_stream("Done.")) for _ in range(2)]
    s = start_serve(butler_home, workdir, BUTLER_TEST_COUNT_SESSIONS=str(counter), **env)
    try:
        approve(s, butler_home, parks[0])
        assert "passport" in fake.requests[-1]["body"]["messages"][0]["content"]
        assert butler("memory", "forget", passport).returncode == 0
        approve(s, butler_home, parks[1])
    finally:
        s.stop()
    assert decided(butler_home) == ["done", "done"]
    assert len(fake.requests) == 4
    assert "passport" not in fake.requests[-1]["body"]["messages"][0]["content"]
    assert "short answers" in fake.requests[-1]["body"]["messages"][0]["content"]


def test_the_scheduler_keeps_a_session_across_ticks_until_its_config_changes(
    butler: Any,
    script: Any,
    butler_home: Path,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each due run of a job is a run on the session its model, policy and folder share; a
    config file edited between two ticks (one byte) is read for the next run."""
    from datetime import UTC, datetime, timedelta

    from butler_cli.schedule.runner import Scheduler

    model = script({"text": "planned"})
    added = butler("schedule", "add", "@daily", "plan", "--model", model, "--folder", str(workdir))
    assert added.returncode == 0, added.stderr
    job_id = added.stdout.split()[1].rstrip(":")
    counter = tmp_path / "sessions.txt"
    monkeypatch.setenv("BUTLER_TEST_COUNT_SESSIONS", str(counter))
    config = butler_home / "config.toml"
    config.write_text("# mine\n")
    store, sessions = ScheduleStore(butler_home), Sessions(butler_home)
    sched = Scheduler(store, sessions=sessions)

    def due_run() -> str:
        store.set_next_due(job_id, datetime.now(UTC) - timedelta(seconds=1))
        [done] = sched.tick()
        return done.status

    assert [due_run(), due_run()] == ["done", "done"]
    assert len(builds(counter)) == 1
    config.write_text("# mind\n")
    assert due_run() == "done"
    assert len(builds(counter)) == 2
    sessions.close()


def test_a_run_on_a_kept_session_reads_the_kept_approvals_as_they_are_now(
    butler_home: Path, workdir: Path, script: Any
) -> None:
    """Kept approvals are the run's, not the session's: one revoked since a session was built
    never covers a call of a later run on it (fail closed), one kept since does."""
    from butler_cli.app.parks.approvals import keep, revoke
    from butler_cli.app.run.butler import Butler
    from butler_cli.core.grants import Grant, canonical

    sessions = Sessions(butler_home)
    opts = RunOptions(model=script({"text": "hi"}))

    def run_config() -> Any:
        with Butler(sessions.lend(opts, workdir), release=sessions.give_back) as run:
            return run.config.kept

    assert run_config() is None
    judged = {"path": os.path.realpath(workdir / "a.txt"), "content": "a"}
    grant = Grant("write_file", canonical({"path": "a.txt", "content": "a"}), (), canonical(judged))
    keep(butler_home, grant, workdir, "2026-12-04T00:00:00Z")
    assert run_config() is not None  # kept since: the next run on the same session has it
    revoke(butler_home, 1)
    assert run_config() is None  # revoked: the next run on the same session has it no more
    assert len(sessions._idle) == 1  # one session all along
    sessions.close()


def test_a_session_whose_run_failed_is_closed_not_kept(
    butler_home: Path, workdir: Path, script: Any
) -> None:
    from butler_cli.app.run.butler import Butler

    sessions = Sessions(butler_home)
    opts = RunOptions(model=script({"text": "hi"}))
    session = sessions.lend(opts, workdir)
    with pytest.raises(RuntimeError), Butler(session, release=sessions.give_back):
        raise RuntimeError("the run failed half-way")
    assert sessions.lend(opts, workdir) is not session
    sessions.close()
