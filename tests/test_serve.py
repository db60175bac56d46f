"""`butler serve` over plain HTTP: the token, CSRF, exactly-once decisions under 20 concurrent
requests, page then terminal, a clean stop with a run in flight, a restart that picks up, and
the scheduler on the real clock."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import call
from serve_support import eventually, served_fixture, start_serve  # noqa: F401 (a fixture)

from butler_cli.schedule.store import ScheduleStore

needs_bwrap = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (CI installs it: apt-get install bubblewrap)",
)


def park_with(butler: Any, script: Any, *turns: dict[str, Any]) -> str:
    ran = butler("run", "--model", script(*turns), "task", "--json")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def appender(butler: Any, script: Any, seconds: float = 0) -> str:
    """A park whose action appends one line to ran.txt (after ``seconds``)."""
    argv = ["sh", "-c", f"sleep {seconds}; echo ran >> ran.txt"]
    turns = [{"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": "appended"}]
    return park_with(butler, script, *turns)


def test_every_request_without_the_token_is_refused(served: Any) -> None:
    s = served()
    for path in ["/", "/parts", "/park/abcdefgh", "/static/inbox.js"]:
        assert s.request(path, token=None)[0] == 403
        assert s.request(path, token="wrong")[0] == 403
    status, body = s.request("/park/abcdefgh/decide", data={"decision": "approve"}, token=None)
    assert status == 403 and "token" in body
    assert s.request("/", token=None, headers={"Cookie": f"butler_token_{s.port}=x"})[0] == 403
    # No cookie authenticates, even one holding the right token: a browser sends 127.0.0.1's
    # cookies to every port on it, so another local server would receive it.
    for name in (f"butler_token_{s.port}", "butler_token", "token"):
        cookie = {"Cookie": f"{name}={s.token}"}
        assert s.request("/", token=None, headers=cookie)[0] == 403, name
    assert s.request("/")[0] == 200
    # DNS rebinding: the right token through another host name is still refused.
    assert s.request("/", headers={"Host": f"evil.example:{s.port}"})[0] == 403


def test_the_page_loads_nothing_from_another_origin(served: Any) -> None:
    s = served()
    import urllib.request

    req = urllib.request.Request(s.base + "/", headers={"Authorization": f"Bearer {s.token}"})
    with urllib.request.urlopen(req, timeout=10) as res:
        csp = res.headers["Content-Security-Policy"]
        page = res.read().decode()
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "http" not in page.replace(s.base, "")  # no absolute address to anywhere


@needs_bwrap
def test_wrong_or_missing_csrf_decides_nothing(
    served: Any, butler: Any, script: Any, workdir: Path
) -> None:
    pid = appender(butler, script)
    s = served()
    for headers in ({}, {"X-CSRF-Token": "forged"}):
        status, body = s.request(
            f"/park/{pid}/decide", data={"decision": "approve"}, headers=headers
        )
        assert status == 403 and "CSRF" in body
    status, _ = s.request(
        f"/park/{pid}/decide",
        data={"decision": "approve"},
        headers={"X-CSRF-Token": s.csrf(), "Origin": "http://evil.example"},
    )
    assert status == 403
    assert not (workdir / "ran.txt").exists()
    assert [p["id"] for p in json.loads(butler("pending", "--json").stdout)] == [pid]


@needs_bwrap
def test_twenty_concurrent_approvals_run_the_action_once(
    served: Any, butler: Any, script: Any, workdir: Path, butler_home: Path
) -> None:
    pid = appender(butler, script, seconds=0.3)
    s = served()
    csrf = s.csrf()

    def approve(_: int) -> tuple[int, dict[str, Any]]:
        status, body = s.request(
            f"/park/{pid}/decide", data={"decision": "approve"}, headers={"X-CSRF-Token": csrf}
        )
        return status, json.loads(body)

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(approve, range(20)))
    s.stop()
    assert (workdir / "ran.txt").read_text() == "ran\n"  # the side effect, once
    assert sorted(a[0] for a in answers) == [200] + [409] * 19
    assert all("already" in a[1]["message"] for a in answers if a[0] == 409)
    decisions = [
        json.loads(line)
        for line in (butler_home / "audit.jsonl").read_text().splitlines()
        if '"event":"decision"' in line
    ]
    assert len(decisions) == 1 and decisions[0]["park"] == pid


@needs_bwrap
def test_page_then_terminal_runs_once(served: Any, butler: Any, script: Any, workdir: Path) -> None:
    pid = appender(butler, script)
    s = served()
    status, answer = s.decide(pid, "approve")
    assert status == 200 and answer["ok"], answer
    eventually(lambda: (workdir / "ran.txt").exists())
    again = butler("resume", pid, "--approve")
    assert again.returncode == 5 and "already" in again.stderr
    status, answer = s.decide(pid, "deny")
    assert status == 409 and "already decided" in answer["message"]
    eventually(lambda: "outcome done" in s.request("/")[1])  # the outcome is on the page
    assert (workdir / "ran.txt").read_text() == "ran\n"


@needs_bwrap
def test_sigterm_lets_the_decision_in_flight_finish(
    served: Any, butler: Any, script: Any, workdir: Path
) -> None:
    pid = appender(butler, script, seconds=4)
    s = served()
    status, answer = s.decide(pid, "approve")  # answers after 3 s: the task continues
    assert status == 200 and answer["status"] is None, answer
    out = s.stop()
    assert s.proc.returncode == 0, out
    assert (workdir / "ran.txt").read_text() == "ran\n"
    assert butler("show", pid, "--json").stdout.count('"status": "resolved"') == 1


def test_a_restart_continues_a_park_decided_before_a_stop(
    served: Any, butler: Any, script: Any, workdir: Path
) -> None:
    pid = park_with(
        butler,
        script,
        {"tool_calls": [call("write_file", "c1", path="out.txt", content="hello")]},
        {"text": "written"},
    )
    crashed = butler("resume", pid, "--approve", env={"BUTLER_TEST_CRASH_AT": "decision-written"})
    assert crashed.returncode != 0 and not (workdir / "out.txt").exists()
    s = served()
    deadline = time.monotonic() + 20
    while not (workdir / "out.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    s.stop()
    assert (workdir / "out.txt").read_text() == "hello"
    assert f"continuing park {pid}" in "".join(s.lines)


def test_a_non_loopback_address_needs_expose(butler: Any, butler_home: Path, workdir: Path) -> None:
    refused = butler("serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "--expose" in refused.stderr
    assert "Traceback" not in refused.stderr
    s = start_serve(butler_home, workdir, "--host", "0.0.0.0", "--expose")
    try:
        assert "WARNING" in "".join(s.lines) and "approve" in "".join(s.lines)
        assert s.request("/", token=None)[0] == 403
    finally:
        s.stop()


def test_a_taken_port_says_how_to_get_a_free_one(butler: Any) -> None:
    """Another program on the port: one line that says so and names `--port 0` (issue 35)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        refused = butler("serve", "--port", str(port), "--no-scheduler")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in refused.stderr
    assert "--port 0 takes any free port" in refused.stderr


def test_the_scheduler_runs_a_job_due_in_a_few_seconds(
    served: Any, butler: Any, butler_home: Path, workdir: Path
) -> None:
    plan = Path(__file__).resolve().parent.parent / "examples" / "plan.json"
    added = butler("schedule", "add", "@daily", "plan", "--model", f"scripted:{plan}")
    job_id = added.stdout.split()[1].rstrip(":")
    store = ScheduleStore(butler_home)
    s = served()
    store.set_next_due(job_id, datetime.now(UTC) + timedelta(seconds=3))
    # the run is recorded, then its line is printed (s.lines holds only what came before the
    # URL: waiting on it took the whole 30 s every time)
    eventually(lambda: [r.status for r in store.runs()] == ["parked"])
    out = s.stop()
    runs = store.runs()
    assert [r.status for r in runs] == ["parked"], out
    assert datetime.fromisoformat(runs[0].started_at) >= datetime.now(UTC) - timedelta(seconds=40)
    assert store.get(job_id).next_due > runs[0].started_at  # the next one is tomorrow
    assert f"schedule {job_id}: parked" in out
    assert json.loads(butler("pending", "--json").stdout)[0]["tool"] == "write_file"


def test_sigterm_lets_a_scheduled_run_in_flight_finish(
    served: Any, butler: Any, butler_home: Path
) -> None:
    """A model that takes 3 s to answer: SIGTERM while it thinks; the run still ends `done`
    with its answer recorded, and the process exits 0."""
    from fake_llm import FakeLLM, Reply, openai_stream

    fake = FakeLLM()
    try:
        fake.replies.append(Reply(events=openai_stream("all summarized"), delay_s=3))
        base = f"{fake.url}/v1"
        assert butler("config", "set", "providers.openai-compatible.base_url", base).returncode == 0
        added = butler("schedule", "add", "@daily", "summarize", "--model", "openai-compatible:x")
        job_id = added.stdout.split()[1].rstrip(":")
        store = ScheduleStore(butler_home)
        store.set_next_due(job_id, datetime.now(UTC))
        s = served()
        eventually(lambda: len(fake.requests) == 1)  # the run is in flight
        out = s.stop()
        assert s.proc.returncode == 0, out
        runs = store.runs()
        assert [(r.status, r.text) for r in runs] == [("done", "all summarized")], out
    finally:
        fake.close()


@pytest.mark.parametrize(
    ("tamper", "says"),
    [
        (lambda b: b.replace(b'"content": "hello"', b'"content": "pwned"', 1), "tampered"),
        (lambda b: b[: len(b) // 2], "corrupt"),
    ],
)
def test_a_tampered_park_is_named_tampered_not_already_decided(
    served: Any, butler: Any, script: Any, workdir: Path, butler_home: Path, tamper: Any, says: str
) -> None:
    """Nobody decided it: the inbox says what is wrong with the file and that nothing ran (it
    said "already decided"), and the file is left as it is."""
    pid = park_with(
        butler,
        script,
        {"tool_calls": [call("write_file", "c1", path="out.txt", content="hello")]},
        {"text": "written"},
    )
    park = butler_home / "parks" / f"{pid}.json"
    bad = tamper(park.read_bytes())
    park.write_bytes(bad)
    s = served("--no-scheduler")
    status, answer = s.decide(pid, "approve")
    assert status == 409 and not answer["ok"], answer
    assert "already" not in answer["message"] and says in answer["message"], answer
    assert "nothing ran" in answer["message"], answer
    assert park.read_bytes() == bad and not (workdir / "out.txt").exists()
