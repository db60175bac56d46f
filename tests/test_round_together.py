"""The benign calls of a round run side by side (issue 26): through the installed butler with a
third party's slow plug-in tools (tests/thirdparty_policy, ``acme_butler_policy.slow_tools``),
each call steered by files, so nothing here is timed.

- the results reach the model in the model's order, each masked, whatever order they end in;
- a tool that declares itself not thread-safe, and every governed call, run after them, one
  at a time;
- Ctrl-C in the chat, or SIGINT to ``butler run``, stops every call of the round, and the chat
  goes on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pexpect
import test_policies
from conftest import call, json_lines, tool_results

acme_venv = test_policies.acme_venv
TOKEN = "acme-canary-7f3a9c2e1d"


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1", "ACME_API_TOKEN": TOKEN}


def _wait_for(paths: list[Path], limit: float = 20) -> None:
    deadline = time.monotonic() + limit
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, (
            f"never appeared: {[p for p in paths if not p.exists()]}"
        )
        time.sleep(0.02)


def test_a_rounds_benign_calls_run_together_and_answer_in_the_models_order(
    acme_venv, butler_home, workdir, script, allow_all
) -> None:
    """``a`` waits for ``c`` to finish and ``b`` for ``a``: one after another they could never
    end (each gives up after 20 s). Run together they end c, a, b — and the model still gets
    a, b, c, each masked. The governed write, asked first, runs after them; so does the tool
    that is not thread-safe, alone."""
    calls = workdir / "calls"
    model = script(
        {
            "tool_calls": [
                call("write_file", "w", path="calls/governed.txt", content="x"),
                call("acme_slow", "a", key="a", until="c.finished"),
                call("acme_serial", "s", key="s"),
                call("acme_slow", "b", key="b", until="a.finished"),
                call("acme_slow", "c", key="c"),
            ]
        },
        {"text": "done"},
    )
    r = subprocess.run(
        [str(acme_venv), "-m", "butler_cli", "run", "--model", model, "go", "--json", *allow_all],
        cwd=workdir,
        env=_env(butler_home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert [x["tool_use_id"] for x in results] == ["w", "a", "s", "b", "c"]
    assert [x["content"] for x in results[1:]] == [f"{n} done; token ****" for n in "asbc"]
    assert TOKEN not in r.stdout + r.stderr
    log = (calls / "log").read_text().split("\n")
    ends = [log.index(f"finished {n}") for n in "abc"]
    assert log.index("finished c") < log.index("finished a") < log.index("finished b")
    assert log.index("started s") > max(ends)  # not thread-safe: after the others, alone
    governed = (calls / "governed.txt").stat().st_mtime_ns
    assert all((calls / f"{n}.finished").stat().st_mtime_ns <= governed for n in "abcs")


def test_ctrl_c_in_the_chat_stops_every_call_of_the_round_and_the_chat_goes_on(
    acme_venv, butler_home, workdir, script
) -> None:
    """Three calls wait for a file; Ctrl-C while all three run. The file then appears, and the
    next line asks again (the scripted model, not having seen the cancelled turn, repeats it):
    the new calls end at once, the three that were stopped never end."""
    calls = workdir / "calls"
    model = script(
        {"tool_calls": [call("acme_slow", n, key=n, until="release") for n in "xyz"]},
        {"text": "all done"},
    )
    child = pexpect.spawn(
        str(acme_venv),
        ["-m", "butler_cli", "chat", "--model", model],
        cwd=str(workdir),
        env={**_env(butler_home), "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"},
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 220),
    )
    child.expect("you ›")
    child.sendline("look everything up")
    _wait_for([calls / f"{n}.started" for n in "xyz"])  # all three at once
    child.sendcontrol("c")
    child.expect(r"stopped: acme_slow.* were interrupted; they may have partly run")
    child.expect("cancelled")
    child.expect("you ›")
    (calls / "release").write_text("")
    child.sendline("again, please")
    child.expect("all done")
    child.expect("you ›")
    log = (calls / "log").read_text().splitlines()
    assert [log.count(f"started {n}") for n in "xyz"] == [2, 2, 2]
    assert [log.count(f"finished {n}") for n in "xyz"] == [1, 1, 1]  # the stopped ones: never
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_sigint_to_run_stops_every_call_of_the_round_at_once(
    acme_venv, butler_home, workdir, script
) -> None:
    calls = workdir / "calls"
    model = script(
        {"tool_calls": [call("acme_slow", n, key=n, until="release") for n in "xyz"]},
        {"text": "never reached"},
    )
    proc = subprocess.Popen(
        [str(acme_venv), "-m", "butler_cli", "run", "--model", model, "go", "--json"],
        cwd=workdir,
        env=_env(butler_home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for([calls / f"{n}.started" for n in "xyz"])
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)  # not the 20 s the calls would wait
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "never reached" not in out
    assert not [n for n in "xyz" if (calls / f"{n}.finished").exists()]
    [ended] = json_lines(out)  # one ending, said like every other (issue 32): no report
    assert ended["type"] == "error" and ended["code"] == "interrupted"


def test_mcp_calls_of_a_round_go_through_their_session_together(
    butler, butler_home, workdir, script
) -> None:
    """``a`` waits for ``b``'s lookup to finish: on one session, one after another, it never
    would (it gives up after 20 s)."""
    import json
    import sys

    calls = workdir / "calls"
    butler_home.mkdir(exist_ok=True)
    (butler_home / "config.toml").write_text(
        "[mcp.far]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(Path(__file__).parent / 'mcp_slow_server.py'))}]\n"
        f"env = {{ CALLS_DIR = {json.dumps(str(calls))} }}\n"
        "sandbox = false\n"
    )
    model = script(
        {
            "tool_calls": [
                call("far__lookup", "a", key="a", until="b.finished"),
                call("far__lookup", "b", key="b"),
            ]
        },
        {"text": "done"},
    )
    r = butler("run", "--model", model, "look", "--json", timeout=90)
    assert r.returncode == 0, r.stderr
    assert [x["content"] for x in tool_results(r.stdout)] == ["a found", "b found"]
