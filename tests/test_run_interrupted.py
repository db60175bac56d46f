"""Issue 32, story 5: Ctrl-C in `butler run` ends like every other ending.

SIGINT reaches a real `butler run` process while its model call is in flight (a real HTTP
server on 127.0.0.1 that has sent the first frame of its answer and holds the rest): one line on
stderr, exit 130, the ``error`` (and, in stream-json, ``done``) events a script waits for, valid
against docs/output.schema.json, the task's conversation marked ``interrupted`` in `butler log`,
and no later task started. Before, typer swallowed the interrupt: exit 130, nothing said, and
the conversation stayed ``running`` for ever.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import butler_exe
from fake_llm import Reply, openai_stream
from test_output_events import checked

LINE = "butler: interrupted (Ctrl-C): the task was stopped; no later task ran"


def _interrupted_run(fake: Any, home: Path, cwd: Path, fmt: list[str]) -> tuple[int, str, str]:
    """`butler run` with two tasks against ``fake``, SIGINT once the first model call is in
    flight; its exit code, stdout and stderr."""
    fake.replies.append(Reply(events=openai_stream("never finished"), hold_after=1))
    proc = subprocess.Popen(
        [butler_exe(), "run", "--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
        + [*fmt, "first task", "second task"],
        cwd=cwd,
        env={**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1", "OPENAI_API_KEY": "sk-t"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not [r for r in fake.requests if r.get("method") != "GET"]:
            assert time.monotonic() < deadline, "the model was never called"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.2)  # the first frame is on its way: the call is mid-answer
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        fake.release.set()
    return proc.returncode, out, err


def _conversations(butler: Any) -> list[dict[str, Any]]:
    shown = butler("log", "--json")
    assert shown.returncode == 0, shown.stderr
    return list(json.loads(shown.stdout))


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--output", "stream-json"]], ids=str)
def test_ctrl_c_mid_model_call_is_said_and_recorded(
    fake: Any, butler: Any, butler_home: Path, workdir: Path, fmt: list[str]
) -> None:
    code, out, err = _interrupted_run(fake, butler_home, workdir, fmt)
    assert code == 130, err
    said = [line for line in err.splitlines() if not line.startswith("▶ task")]
    assert said == [LINE]  # one line, no traceback, no "Aborted!"
    assert len([r for r in fake.requests if r.get("method") != "GET"]) == 1  # task 2 never began

    [conversation] = _conversations(butler)  # the second task never started one
    assert conversation["title"] == "first task"
    assert conversation["status"] == "interrupted"

    if not fmt:
        assert "never finished" not in out
        return
    events = checked(out)
    if fmt == ["--json"]:
        assert [e["type"] for e in events] == ["error"]
    else:
        assert [e["type"] for e in events] == ["start", "error", "done"]
        assert events[-1]["status"] == "interrupted" and events[-1]["exit_code"] == 130
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "interrupted" and error["exit_code"] == 130
    assert error["message"] == LINE.removeprefix("butler: ")
    assert {e["conversation"] for e in events} == {conversation["id"]}
