"""Issue 35 item 9: where a park came from and when, said alike by `pending`, the inbox and
`show`; the inbox counts what waits; `serve` logs each decision; a decided park's change is
never diffed against today's file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import call
from serve_support import eventually, served_fixture, start_serve  # noqa: F401 (a fixture)

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
READABLE = re.compile(r"\b\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC\b")


def write_park(butler: Any, script: Any, *args: str) -> str:
    turns = [
        {"tool_calls": [call("write_file", "c1", path="notes.txt", content="new line\n")]},
        {"text": "written"},
    ]
    ran = butler("run", "--model", script(*turns), "update the notes", "--json", *args)
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def test_pending_says_where_a_park_came_from_and_when_as_the_inbox_does(
    butler: Any, script: Any, workdir: Path
) -> None:
    pid = write_park(butler, script)
    listed = butler("pending")
    assert listed.returncode == 0, listed.stderr
    first = listed.stdout.splitlines()[0]
    assert first.startswith(pid) and READABLE.search(first), first
    assert not ISO.search(listed.stdout), listed.stdout
    assert "task: update the notes (from butler run)" in listed.stdout
    [row] = json.loads(butler("pending", "--json").stdout)
    assert row["origin"] == "run" and ISO.match(row["created_at"])  # --json keeps the stamp


def test_a_scheduled_park_names_its_schedule(butler: Any, script: Any, workdir: Path) -> None:
    turns = [
        {"tool_calls": [call("write_file", "c1", path="plan.txt", content="plan\n")]},
        {"text": "planned"},
    ]
    added = butler(
        "schedule", "add", "@hourly", "write the plan", "--model", script(*turns),
        "--folder", str(workdir),
    )  # fmt: skip
    job = added.stdout.split()[1].rstrip(":")
    assert butler("schedule", "run", job).returncode == 3
    assert f"(from schedule {job})" in butler("pending").stdout


def test_the_inbox_counts_says_where_from_logs_the_decision_and_show_does_not_rediff(
    served: Any, butler: Any, script: Any, workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("old line\n")
    pid = write_park(butler, script)
    s = served()
    page = s.request("/")[1]
    assert "Waiting for you <span id='waiting' class='count'>(1)</span>" in page
    assert "from butler run" in page
    status, answer = s.decide(pid, "approve")
    assert status == 200 and answer["ok"], answer
    eventually(lambda: (workdir / "notes.txt").read_text() == "new line\n")
    eventually(lambda: "(0)</span>" in s.request("/")[1])
    log = s.stop()  # what the server printed after its URL
    assert f"decision: park {pid} approved; the task is done" in log, log
    shown = butler("show", pid)
    assert shown.returncode == 0, shown.stderr
    assert "not shown: the park is decided" in shown.stdout
    # today's file already holds the new line: a diff against it would show nothing changing
    assert "+new line" not in shown.stdout and "-old line" not in shown.stdout
    assert '"content": "new line\\n"' in shown.stdout  # what was decided, whole


def test_the_decision_line_in_serves_log_is_masked_and_neutralised(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    """The log line of a kept approval names the file the model chose: an escape in its name
    is shown as a stand-in and a known secret as ****, as every line serve prints."""
    secret = "sk-test-log0123456789abcdefgh"
    name = f"notes\x1b[2J{secret}.txt"
    turns = [
        {"tool_calls": [call("write_file", "c1", path=name, content="x\n")]},
        {"text": "written"},
    ]
    ran = butler("run", "--model", script(*turns), "write it", "--json")
    assert ran.returncode == 3, ran.stderr
    pid = json.loads(ran.stdout.splitlines()[0])["park_id"]
    s = start_serve(butler_home, workdir, "--no-scheduler", OPENAI_API_KEY=secret)
    try:
        status, answer = s.decide(pid, "keep")
        assert status == 200 and answer["ok"], answer
        eventually(lambda: (workdir / name).exists())
    finally:
        log = s.stop()
    line = next(x for x in log.splitlines() if x.startswith(f"decision: park {pid}"))
    assert "kept approval 1" in line and "notes\\u001b[" in line and "****" in line, line
    assert "\x1b" not in log and secret not in log, log
