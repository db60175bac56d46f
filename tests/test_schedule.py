"""Scheduled tasks: cron times on an injected clock, the unattended contract, the on_park hook,
and two schedulers racing on one home (two real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from fake_llm import POLL

from butler_cli.schedule.runner import Scheduler
from butler_cli.schedule.store import Job, ScheduleStore

REPO = Path(__file__).resolve().parent.parent
PLAN = f"scripted:{REPO / 'examples' / 'plan.json'}"


def parks_in(home: Path) -> list[str]:
    folder = home / "parks"
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def utc_zone() -> Iterator[None]:
    """Cron times are local: this test's local zone is UTC."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_injected_clock_runs_each_due_time_once_and_one_catch_up(
    butler_home: Path, utc_zone: None
) -> None:
    """A weekday-08:00 job: not before 08:00, once at 08:00, and after three missed days one
    catch-up run, not three; its next time is then counted from now."""
    store = ScheduleStore(butler_home)
    monday_7 = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)  # a Monday
    clock = Clock(monday_7)
    job = store.add("0 8 * * 1-5", "t", "scripted:x", "ask", None, "/", None, clock.now)
    assert job.next_due == "2026-11-30T08:00:00+00:00"
    ran: list[str] = []

    def runner(j: Job) -> tuple[str, None, str, None, None]:
        ran.append(j.id)
        return "done", None, "ok", None, None

    sched = Scheduler(store, clock, runner)
    clock.now = monday_7 + timedelta(minutes=59, seconds=59)
    assert sched.tick() == []
    clock.now = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    assert [f.status for f in sched.tick()] == ["done"]
    clock.now += timedelta(seconds=30)
    assert sched.tick() == []
    assert store.get(job.id).next_due == "2026-12-01T08:00:00+00:00"
    clock.now = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)  # Tue, Wed and Thu 08:00 were missed
    assert len(sched.tick()) == 1
    assert sched.tick() == []
    assert ran == [job.id, job.id]
    assert store.get(job.id).next_due == "2026-12-04T08:00:00+00:00"
    # A paused job does not run; resumed, it counts from now (no catch-up for the pause).
    store.set_paused(job.id, True, clock.now)
    clock.now = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
    assert sched.tick() == []
    store.set_paused(job.id, False, clock.now)
    assert store.get(job.id).next_due == "2026-12-08T08:00:00+00:00"
    assert [r.status for r in store.runs()] == ["done", "done"]


def test_shorthands_and_bad_expressions(butler: Any) -> None:
    ok = butler("schedule", "add", "@daily", "t", "--model", PLAN)
    assert ok.returncode == 0, ok.stderr
    bad = butler("schedule", "add", "61 * * * *", "t", "--model", PLAN)
    assert bad.returncode == 2 and "not a cron expression" in bad.stderr
    assert "Traceback" not in bad.stderr
    listed = json.loads(butler("schedule", "list", "--json").stdout)
    assert [row["cron"] for row in listed] == ["@daily"]
    assert listed[0]["model"] == PLAN and listed[0]["policy"] == "ask"


@pytest.mark.parametrize("never", ["0 0 31 2 *", "0 0 30 2 *", "0 12 31 4,6,9,11 *"])
def test_a_time_that_never_comes_is_a_usage_error_naming_it(butler: Any, never: str) -> None:
    """February 31st is valid cron syntax and never comes: one line naming it, exit 2, no
    schedule made (it was a traceback, exit 1)."""
    bad = butler("schedule", "add", never, "t", "--model", PLAN)
    assert bad.returncode == 2, bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert f"'{never}'" in bad.stderr and "never" in bad.stderr, bad.stderr
    assert json.loads(butler("schedule", "list", "--json").stdout) == []


HOOK = """import json, os, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "w") as fh:
    json.dump({"event": event, "env": dict(os.environ)}, fh)
"""


def test_scheduled_run_parks_never_self_approves_and_fires_the_hook(
    butler: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """`schedule run` follows `butler run`: the write parks (exit 3, nothing written), the
    hook gets the event on stdin — no arguments, no secrets in its environment."""
    hook, out = tmp_path / "hook.py", tmp_path / "event.json"
    hook.write_text(HOOK)
    added = butler(
        "schedule", "add", "@hourly", "Write today's plan", "--model", PLAN,
        "--folder", str(workdir), "--on-park", f"{sys.executable} {hook} {out}",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    job_id = added.stdout.split()[1].rstrip(":")
    secret = "sk-test-0123456789abcdefghij"
    ran = butler("schedule", "run", job_id, "--json", env={"OPENAI_API_KEY": secret})
    assert ran.returncode == 3, ran.stderr
    report = json.loads(ran.stdout)
    assert report["status"] == "parked" and report["hook"] is None
    assert not (workdir / "plan.txt").exists()
    assert parks_in(butler_home) == [report["park_id"]]
    seen = json.loads(out.read_text())
    assert seen["event"]["park_id"] == report["park_id"]
    assert seen["event"]["tool"] == "write_file" and seen["event"]["schedule"] == job_id
    assert "arguments" not in seen["event"]  # the title (as `pending` shows it), not the args
    assert "OPENAI_API_KEY" not in seen["env"] and secret not in out.read_text()
    listed = json.loads(butler("schedule", "list", "--json").stdout)
    assert listed[0]["last_outcome"] == "parked" and listed[0]["last_park"] == report["park_id"]


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("{py} -c 'import sys; sys.exit(7)'", "exited 7"),
        ("{py} -c 'import time; time.sleep(30)'", "timed out after 1 s"),
        ("/nonexistent/notify", "could not start"),
    ],
)
def test_a_failing_hook_is_reported_and_changes_nothing(
    butler: Any, butler_home: Path, workdir: Path, command: str, says: str
) -> None:
    added = butler(
        "schedule", "add", "@hourly", "plan", "--model", PLAN, "--folder", str(workdir),
        "--on-park", command.format(py=sys.executable), "--hook-timeout", "1",
    )  # fmt: skip
    job_id = added.stdout.split()[1].rstrip(":")
    started = time.monotonic()
    ran = butler("schedule", "run", job_id)
    assert time.monotonic() - started < 20
    assert ran.returncode == 3 and says in ran.stderr, ran.stderr
    assert len(parks_in(butler_home)) == 1
    pending = json.loads(butler("pending", "--json").stdout)
    assert [p["tool"] for p in pending] == ["write_file"]


def test_the_hook_command_never_goes_through_a_shell(
    butler: Any, workdir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    added = butler(
        "schedule", "add", "@hourly", "plan", "--model", PLAN, "--folder", str(workdir),
        "--on-park", f"echo $(touch {marker}) ; touch {marker}",
    )  # fmt: skip
    ran = butler("schedule", "run", added.stdout.split()[1].rstrip(":"))
    assert ran.returncode == 3, ran.stderr
    assert not marker.exists()


def test_the_hook_can_post_to_a_url(butler: Any, workdir: Path) -> None:
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/park"
        added = butler(
            "schedule", "add", "@hourly", "plan", "--model", PLAN, "--folder", str(workdir),
            "--on-park", url,
        )  # fmt: skip
        ran = butler("schedule", "run", added.stdout.split()[1].rstrip(":"), "--json")
        assert ran.returncode == 3 and json.loads(ran.stdout)["hook"] is None
        assert [e["park_id"] for e in got] == [json.loads(ran.stdout)["park_id"]]
    finally:
        server.shutdown()


def test_pause_resume_remove(butler: Any) -> None:
    job_id = butler("schedule", "add", "@daily", "t", "--model", PLAN).stdout.split()[1][:-1]
    assert butler("schedule", "pause", job_id[:4]).returncode == 0
    assert json.loads(butler("schedule", "list", "--json").stdout)[0]["paused"] is True
    assert butler("schedule", "resume", job_id).returncode == 0
    assert json.loads(butler("schedule", "list", "--json").stdout)[0]["paused"] is False
    assert butler("schedule", "remove", job_id).returncode == 0
    assert json.loads(butler("schedule", "list", "--json").stdout) == []
    gone = butler("schedule", "run", job_id)
    assert gone.returncode == 2 and "no schedule" in gone.stderr


RACER = """import sys, time
from pathlib import Path
from butler_cli.schedule.runner import Scheduler
from butler_cli.schedule.store import ScheduleStore
go = Path(sys.argv[2])
sched = Scheduler(ScheduleStore(Path(sys.argv[1])))
Path(sys.argv[3]).touch()  # imported and opened: ready for the start signal
while not go.exists():
    time.sleep(0.001)
print(len(sched.tick()))
"""


def test_two_schedulers_racing_run_a_due_job_once(
    butler: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """Two processes tick the same home at the same instant: one run, one park."""
    job_id = butler(
        "schedule", "add", "@hourly", "plan", "--model", PLAN, "--folder", str(workdir)
    ).stdout.split()[1][:-1]  # fmt: skip
    store = ScheduleStore(butler_home)
    store.set_next_due(job_id, datetime.now(UTC) - timedelta(seconds=1))
    racer, go = tmp_path / "racer.py", tmp_path / "go"
    racer.write_text(RACER)
    env = {**os.environ, "BUTLER_HOME": str(butler_home)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(racer), str(butler_home), str(go), str(tmp_path / f"ready{n}")],
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for n in range(2)
    ]
    deadline = time.monotonic() + 60  # both have imported and opened the store
    while not all((tmp_path / f"ready{n}").exists() for n in range(2)):
        assert time.monotonic() < deadline, "the racers never got ready"
        time.sleep(0.01)
    go.touch()
    counts = sorted(int(p.communicate(timeout=60)[0].strip()) for p in procs)
    assert counts == [0, 1]
    assert len(parks_in(butler_home)) == 1
    assert [r.status for r in store.runs()] == ["parked"]


def test_reading_schedules_on_a_fresh_home_creates_nothing(butler: Any, butler_home: Path) -> None:
    for args in (("schedule", "list"), ("schedule", "list", "--json")):
        r = butler(*args)
        assert r.returncode == 0, r.stderr
    assert not butler_home.exists()
    assert butler("schedule", "run", "nosuch").returncode == 2
    assert not butler_home.exists()


def test_a_schedules_on_park_and_the_config_hook_send_one_event(
    butler: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """`--on-park` and `[hooks] on_park` are told the same thing, field for field: one event
    shape a person's script can read either way."""
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK)
    from_schedule, from_config = tmp_path / "schedule.json", tmp_path / "config.json"
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(
        f"[hooks]\non_park = {json.dumps([sys.executable, str(hook), str(from_config)])}\n"
    )
    added = butler(
        "schedule", "add", "@hourly", "Write today's plan", "--model", PLAN,
        "--folder", str(workdir), "--on-park", f"{sys.executable} {hook} {from_schedule}",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    job_id = added.stdout.split()[1].rstrip(":")
    ran = butler("schedule", "run", job_id, "--json")
    assert ran.returncode == 3, ran.stderr
    park_id = json.loads(ran.stdout)["park_id"]
    one = json.loads(from_schedule.read_text())["event"]
    other = json.loads(from_config.read_text())["event"]
    assert one == other
    assert one == {
        "event": "on_park",
        "status": "parked",
        "task": "Write today's plan",
        "park_id": park_id,
        "tool": "write_file",
        "title": one["title"],
        "actions": [{"tool": "write_file", "title": one["title"]}],
        "approve": f"butler resume {park_id} --approve",
        "deny": f"butler resume {park_id} --deny",
        "schedule": job_id,
    }


def test_schedule_list_says_when_a_park_it_left_was_decided(
    butler: Any, butler_home: Path, workdir: Path
) -> None:
    added = butler(
        "schedule",
        "add",
        "@hourly",
        "Write today's plan",
        "--model",
        PLAN,
        "--folder",
        str(workdir),
    )
    job_id = added.stdout.split()[1].rstrip(":")
    park_id = json.loads(butler("schedule", "run", job_id, "--json").stdout)["park_id"]
    [row] = json.loads(butler("schedule", "list", "--json").stdout)
    assert (row["last_outcome"], row["last_park_decision"]) == ("parked", "pending")
    assert "since" not in butler("schedule", "list").stdout
    assert butler("resume", park_id, "--deny").returncode == 0
    [row] = json.loads(butler("schedule", "list", "--json").stdout)
    assert (row["last_park"], row["last_park_decision"]) == (park_id, "denied")
    assert f"parked ({park_id})" in (listed := butler("schedule", "list").stdout)
    assert "since denied" in listed


def test_a_tick_with_nothing_due_builds_nothing(
    butler: Any, butler_home: Path, workdir: Path
) -> None:
    """The scheduler's tick (every poll of `butler serve`) runs — and so builds a butler, its
    config, policy and MCP servers — only for a job that is due: with none due, nothing."""
    added = butler("schedule", "add", "@daily", "plan", "--model", PLAN, "--folder", str(workdir))
    job_id = added.stdout.split()[1].rstrip(":")
    store = ScheduleStore(butler_home)
    built: list[str] = []

    def runner(job: Job) -> tuple[str, None, str, None, None]:
        built.append(job.id)
        return "done", None, "", None, None

    sched = Scheduler(store, runner=runner)
    assert sched.tick() == [] and built == []  # due tomorrow
    store.set_next_due(job_id, datetime.now(UTC) - timedelta(seconds=1))
    assert [f.status for f in sched.tick()] == ["done"] and built == [job_id]
    assert sched.tick() == [] and built == [job_id]  # once, then not due again
