"""Issue 22, item 3: a decision the person interrupts ends as interrupted, never continued.

SIGINT to `butler resume` while the approved action runs is the person stopping it: the call
is reported "stopped by you; it may have partly run", the park is finished, and neither a later
`butler resume` nor `butler serve`'s recovery continues the task. (A process that *died* —
SIGKILL — is still recovered: tests/test_crash.py.)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from conftest import butler_exe, call, sleepers
from serve_support import start_serve

MARKER = "986.4321"  # an unusual sleep, so pgrep finds only this test's


def _park(butler: Any, script: Any) -> str:
    argv = ["sh", "-c", f"sleep {MARKER}"]
    model = script(
        {"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": "never reached"}
    )
    ran = butler("run", "--model", model, "task", "--json")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def test_sigint_to_resume_finishes_the_park_as_interrupted(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    pid = _park(butler, script)
    proc = subprocess.Popen(
        [butler_exe(), "resume", pid, "--approve"],
        cwd=workdir,
        env={**os.environ, "BUTLER_HOME": str(butler_home), "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not sleepers(MARKER) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleepers(MARKER), "the approved command never started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
        for p in sleepers(MARKER):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "never reached" not in out
    assert "stopped by you; it may have partly run" in out + err

    shown = json.loads(butler("show", pid, "--json").stdout)
    assert shown["status"] == "resolved" and shown["interrupted"] is True
    result = shown["results"]["c1"]
    assert "stopped by you; it may have partly run" in result["content"].lower()
    assert json.loads(butler("pending", "--json").stdout) == []
    trail = [json.loads(x) for x in (butler_home / "audit.jsonl").read_text().splitlines()]
    stopped = [e for e in trail if e["event"] == "interrupted" and e["park"] == pid]
    assert len(stopped) == 1 and stopped[0]["tool"] == "run_command"  # the audit says so too
    assert "argv" not in json.dumps(stopped[0])  # a hash of the arguments, never their values

    again = butler("resume", pid, "--approve")
    assert again.returncode == 5 and "never reached" not in again.stdout
    assert "stopped" in again.stderr

    s = start_serve(butler_home, workdir)
    lines = "".join(s.lines)
    s.stop()
    assert f"continuing park {pid}" not in lines


def test_resume_reads_and_verifies_the_park_once(
    butler: Any, script: Any, tmp_path: Path, workdir: Path
) -> None:
    """Issue 22: one owner opens, verifies and locks a park once per `butler resume`."""
    from butler_cli.store.faults import READS_ENV

    model = script(
        {"tool_calls": [call("write_file", "w1", path="out.txt", content="v1")]},
        {"text": "done"},
    )
    ran = butler("run", "--model", model, "task", "--json")
    pid = str(json.loads(ran.stdout.splitlines()[0])["park_id"])
    reads = tmp_path / "reads.txt"
    resumed = butler("resume", pid, "--approve", env={READS_ENV: str(reads)})
    assert resumed.returncode == 0, resumed.stderr
    assert (workdir / "out.txt").read_text() == "v1"
    assert len(reads.read_text().splitlines()) == 1, reads.read_text()


def test_ctrl_c_on_an_approved_action_in_the_chat_leaves_it_interrupted(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    """Issue 33: Ctrl-C while an approved action runs in the chat. The conversation says
    the park was interrupted — not "waiting", and no `butler resume` (which would refuse it,
    exit 5) is suggested anywhere it is shown."""
    import pexpect
    from conftest import spawn_butler

    argv = ["sh", "-c", f"sleep {MARKER}"]
    model = script(
        {"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": "never reached"}
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    try:
        child.expect("you ›")
        child.sendline("sleep a while")
        child.expect(r"Approve\? \[y/n")
        child.sendline("y")
        deadline = time.monotonic() + 20
        while not sleepers(MARKER) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleepers(MARKER), "the approved command never started"
        child.sendintr()
        child.expect("stopped by you")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
        for p in sleepers(MARKER):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
    [listed] = json.loads(butler("log", "--json").stdout)
    assert listed["status"] == "interrupted", listed
    shown = butler("log", "show", listed["id"])
    assert shown.returncode == 0, shown.stderr
    assert "interrupted" in shown.stdout
    assert "butler resume" not in shown.stdout and "waiting" not in shown.stdout
