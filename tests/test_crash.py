"""Crash injection: SIGKILL at every step between "round parked" and "result recorded".

After each kill the next `pending` / `resume` finds one coherent park or a clear report, the
action has run at most once, and a park whose action may have run says "outcome unknown".
"""

from __future__ import annotations

import json
import os
import signal

import pexpect
import pytest
from conftest import call, spawn_butler, tool_results

from butler_cli.store.faults import CRASH_ENV, STEPS

WRITE = call("write_file", "w1", path="out.txt", content="v1")
MARK = "changed by the test after the crash"


@pytest.fixture
def model(script) -> str:
    return script({"tool_calls": [WRITE]}, {"text": "All done."})


def crash(step: str) -> dict[str, str]:
    return {CRASH_ENV: step}


def the_park(butler) -> str:
    [park] = json.loads(butler("pending", "--json").stdout)
    return park["id"]


def test_every_step_is_listed_and_each_test_covers_it() -> None:
    covered = {"park-before-rename", "park-written"} | set(RESUME_STEPS)
    assert covered == set(STEPS)


def test_no_crash_without_the_variable(butler, model, workdir) -> None:
    assert CRASH_ENV not in os.environ
    r = butler("run", "--model", model, "w", env={CRASH_ENV: "no-such-step"})
    assert r.returncode == 3
    assert butler("resume", the_park(butler), "--approve").returncode == 0


def test_run_killed_before_the_park_is_renamed(butler, model, butler_home, workdir) -> None:
    r = butler("run", "--model", model, "w", env=crash("park-before-rename"))
    assert r.returncode == -signal.SIGKILL
    p = butler("pending", "--json")
    assert p.returncode == 0 and json.loads(p.stdout) == []
    assert "unfinished write" in p.stderr  # a clear report; the temp file is kept
    assert not (workdir / "out.txt").exists()


def test_run_killed_after_the_park_is_written(butler, model, workdir) -> None:
    r = butler("run", "--model", model, "w", env=crash("park-written"))
    assert r.returncode == -signal.SIGKILL
    park_id = the_park(butler)
    assert not (workdir / "out.txt").exists()
    assert butler("resume", park_id, "--approve").returncode == 0
    assert (workdir / "out.txt").read_text() == "v1"


# step → (file content after the crash, what recovery tells the model, file after recovery)
RESUME_STEPS = {
    "decision-written": (None, "wrote 2 bytes", "v1"),
    "action-started": (None, "Outcome unknown", None),
    "action-ran": ("v1", "Outcome unknown", MARK),
    "round-resolved": ("v1", None, MARK),
    "park-retired": ("v1", None, MARK),
}


@pytest.mark.parametrize("step", sorted(RESUME_STEPS))
def test_resume_killed_at_each_step(step, butler, model, workdir, butler_home) -> None:
    after_crash, told, after_recovery = RESUME_STEPS[step]
    butler("run", "--model", model, "w")
    park_id = the_park(butler)
    r = butler("resume", park_id, "--approve", env=crash(step))
    assert r.returncode == -signal.SIGKILL
    out = workdir / "out.txt"
    assert (out.read_text() if out.exists() else None) == after_crash
    if out.exists():
        out.write_text(MARK)  # any second run of the action would overwrite this
    assert butler("pending", "--json").stdout.strip() == "[]"  # decided: no longer pending
    shown = json.loads(butler("show", park_id, "--json").stdout)
    assert shown["decision"]["approved"] is True
    again = butler("resume", park_id, "--json")
    if told is None:
        assert again.returncode == 5 and "never runs twice" in again.stderr
    else:
        assert again.returncode == 0, again.stderr
        assert told in tool_results(again.stdout)[-1]["content"]
        assert butler("resume", park_id, "--approve").returncode == 5
    want = MARK if after_crash else after_recovery
    assert (out.read_text() if out.exists() else None) == want
    assert json.loads(butler("show", park_id, "--json").stdout)["status"] == "resolved"
    decisions = [
        json.loads(x)
        for x in (butler_home / "audit.jsonl").read_text().splitlines()
        if '"event":"decision"' in x
    ]
    assert len(decisions) == 1


def test_chat_decision_killed_then_recovered(butler, model, workdir, butler_home) -> None:
    child = spawn_butler(
        ["chat", "--model", model], butler_home, workdir, **{CRASH_ENV: "decision-written"}
    )
    child.expect("you ›")
    child.sendline("write it")
    child.expect(r"Approve\? \[y/n/l/d/s(/a)?\]")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.signalstatus == signal.SIGKILL
    assert not (workdir / "out.txt").exists()
    park_id = _only_park(butler_home)
    r = butler("resume", park_id)
    assert r.returncode == 0, r.stderr
    assert (workdir / "out.txt").read_text() == "v1"


def _only_park(home) -> str:
    [path] = list((home / "parks").glob("*.json"))
    return path.stem


def test_a_chat_decision_waits_for_a_resume_holding_the_park(
    butler, model, workdir, butler_home
) -> None:
    """While another process holds the park's lock, neither the chat nor `resume` decides."""
    import fcntl

    butler("run", "--model", model, "w")
    park_id = the_park(butler)
    lock = os.open(butler_home / "parks" / f"{park_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        assert butler("resume", park_id, "--approve").returncode == 5
        child = spawn_butler(["chat", "--model", model], butler_home, workdir)
        child.expect("you ›")
        child.sendline(f"/resume {park_id}")
        child.expect(r"Approve\? \[y/n/l/d/s(/a)?\]")
        child.sendline("y")
        child.expect("being resumed by another process right now")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    finally:
        os.close(lock)
    assert not (workdir / "out.txt").exists()
    assert json.loads(butler("show", park_id, "--json").stdout)["status"] == "pending"
    assert butler("resume", park_id, "--approve").returncode == 0
    assert (workdir / "out.txt").read_text() == "v1"
