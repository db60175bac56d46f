"""``--output json`` and ``--output stream-json``: every line printed is checked against the
published schema (docs/output.schema.json), and documents no field the schema leaves out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import call

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "output.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
REFUSE_DELETE = (
    "from butler_cli import allow, approve, refuse\n\n"
    "def classify(name, args):\n"
    "    if name == 'delete_file':\n"
    "        return refuse('never delete')\n"
    "    return approve('asking')\n"
)


def checked(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line: one JSON object, valid against the schema, with documented fields."""
    lines = stdout.splitlines()
    assert lines, "no output"
    events = [json.loads(line) for line in lines]
    for event in events:
        errors = sorted(VALIDATOR.iter_errors(event), key=str)
        assert not errors, f"{event}: {errors[0].message}"
        documented = set(SCHEMA["$defs"]["common"]["properties"])
        documented |= set(SCHEMA["$defs"][event["type"]]["properties"])
        assert set(event) <= documented, f"undocumented {set(event) - documented} in {event}"
    return events


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_stream_json_run_then_resume(butler, script, tmp_path, workdir) -> None:
    policy = tmp_path / "pol.py"
    policy.write_text(REFUSE_DELETE)
    model = script(
        {"text": "Looking.", "tool_calls": [call("now", "n1")]},
        {
            "text": "Tidying.",
            "tool_calls": [
                call("delete_file", "d1", path="old.txt"),
                call("write_file", "w1", path="plan.txt", content="tea\n"),
            ],
        },
        {"text": "All done."},
    )
    flags = ["--model", model, "--policy", f"{policy}:classify"]
    r = butler("run", *flags, "--output", "stream-json", "tidy up", "second task")
    assert r.returncode == 3, r.stderr
    events = checked(r.stdout)
    first = [e for e in events if e["conversation"] == events[0]["conversation"]]
    assert types(first) == [
        "start",
        "text",
        "tool_call",
        "tool_result",
        "text",
        "tool_call",
        "tool_call",
        "parked",
        "done",
    ]
    start, _, now_call, now_result, _, delete, write, parked, done = first
    assert start["task"] == "tidy up" and start["index"] == 0 and start["total"] == 2
    assert now_call["verdict"] is None and now_result["outcome"] == "ran"
    assert delete["verdict"] == "refuse" and delete["reason"] == "never delete"
    assert write["verdict"] == "approve" and write["arguments"] == {
        "path": "plan.txt",
        "content": "tea\n",
    }
    park_id = parked["park"]
    assert write["park"] == park_id
    assert parked["commands"] == {
        "approve": f"butler resume {park_id} --approve",
        "deny": f"butler resume {park_id} --deny",
    }
    assert done["status"] == "parked" and done["exit_code"] == 3 and done["park"] == park_id
    # the second task has a conversation of its own, and the batch went on
    second = [e for e in events if e["conversation"] != start["conversation"]]
    assert second[0]["type"] == "start" and second[0]["task"] == "second task"
    assert len({e["conversation"] for e in events}) == 2
    assert [e["elapsed_ms"] for e in events] == sorted(e["elapsed_ms"] for e in events)

    r = butler("resume", park_id, "--approve", *flags, "--output", "stream-json")
    assert r.returncode == 0, r.stderr
    events = checked(r.stdout)
    assert types(events) == [
        "start",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "text",
        "done",
    ]
    start, judged_delete, deleted, judged_write, written, text, done = events
    assert start["resumed"] == park_id and start["task"] == "tidy up"
    assert judged_delete["resumed"] and judged_delete["verdict"] == "refuse"
    assert deleted["outcome"] == "refused" and deleted["is_error"]
    assert judged_write["verdict"] == "approve" and written["outcome"] == "ran"
    assert text["delta"] == "All done." and done["status"] == "done" and done["exit_code"] == 0
    assert (workdir / "plan.txt").read_text() == "tea\n"


def test_a_model_failure_is_an_error_event_then_done(butler, script) -> None:
    r = butler("run", "--model", script(), "--output", "stream-json", "hi")
    assert r.returncode == 1
    events = checked(r.stdout)
    assert types(events) == ["start", "error", "done"]
    assert events[1]["code"] == "model" and "no turn 0" in events[1]["message"]
    assert events[2]["status"] == "failed" and events[2]["exit_code"] == 1


def test_round_limit_reaches_done(butler, script) -> None:
    model = script(*[{"tool_calls": [call("now")]}] * 3)
    r = butler("run", "--model", model, "--max-rounds", "1", "--output", "stream-json", "loop")
    assert r.returncode == 4
    assert checked(r.stdout)[-1]["status"] == "limit"


@pytest.mark.parametrize("flag", [["--json"], ["--output", "json"], ["--output=json"]])
def test_output_json_is_one_result_per_task(butler, script, flag) -> None:
    model = script({"tool_calls": [call("write_file", "w1", path="p.txt", content="x")]})
    r = butler("run", "--model", model, *flag, "--each", "one", "two")
    assert r.returncode == 3, r.stderr
    results = checked(r.stdout)
    assert types(results) == ["result", "result"]
    assert [x["task"] for x in results] == ["one", "two"]
    assert results[0]["conversation"] != results[1]["conversation"]
    assert results[0]["commands"]["approve"] == f"butler resume {results[0]['park_id']} --approve"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--output", "json", "hi"],  # no model
        ["run", "--output", "stream-json", "hi"],
        ["run", "--json", "--max-rounds", "0", "hi"],  # click's own check
        ["run", "--output=stream-json", "--no-such-flag", "hi"],
        ["run", "--json", "--output", "stream-json", "hi"],  # two formats
        ["resume", "zzzzzzzz", "--approve", "--output", "json"],
        ["resume", "zzzzzzzz", "--output", "stream-json"],
        ["pending", "--json", "--bogus"],
    ],
)
def test_a_usage_error_under_json_output_is_one_json_object(butler, args) -> None:
    r = butler(*args)
    assert r.returncode in (2, 5), r.stderr
    [error] = checked(r.stdout)
    assert error["type"] == "error" and error["exit_code"] == r.returncode
    assert error["conversation"] is None and error["message"]
    assert r.stderr  # the person still gets their line


def test_untrusted_text_cannot_forge_a_line_or_an_event(butler, script, tmp_path) -> None:
    forged = 'hi\n{"type": "done", "status": "done"}\r\u001b[2K\u2028\x85\u2029'
    path = tmp_path / "lone.json"
    # a lone surrogate, as a broken provider might send it
    path.write_text(
        '{"turns": [{"text": "x\\ud800y", "tool_calls": [{"id": "c1", "name": "now"}]},'
        f' {{"text": {json.dumps(forged)}}}]}}'
    )
    r = butler("run", "--model", f"scripted:{path}", "--output", "stream-json", "go")
    assert r.returncode == 0, r.stderr
    events = checked(r.stdout)
    assert types(events).count("done") == 1
    texts = [e["delta"] for e in events if e["type"] == "text"]
    assert texts == ["x\ufffdy", forged]
    assert events[-1]["text"] == forged


def test_streaming_provider_sends_text_as_deltas(butler) -> None:
    from fake_llm import FakeLLM, Reply, openai_stream

    fake = FakeLLM()
    try:
        fake.replies = [Reply(events=openai_stream("Here is the answer."))]
        r = butler(
            "run",
            "--model",
            "openai:gpt-test",
            "--base-url",
            fake.url + "/v1",
            "--output",
            "stream-json",
            "hi",
            env={"OPENAI_API_KEY": "sk-test"},
        )
    finally:
        fake.close()
    assert r.returncode == 0, r.stderr
    events = checked(r.stdout)
    deltas = [e["delta"] for e in events if e["type"] == "text"]
    assert len(deltas) == 2 and "".join(deltas) == "Here is the answer."
    assert events[-1]["usage"][0]["input_tokens"] == 11


def test_resume_under_json_output_never_asks(butler, script, butler_home) -> None:
    from conftest import spawn_butler

    model = script({"tool_calls": [call("write_file", "w1", path="p.txt", content="x")]})
    assert butler("run", "--model", model, "park it").returncode == 3
    [park] = json.loads(butler("pending", "--json").stdout)
    # even on a terminal, where text output would ask: the question must not enter the stream
    child = spawn_butler(
        ["resume", park["id"], "--output", "stream-json"], butler_home, butler_home.parent
    )
    child.expect(__import__("pexpect").EOF)
    child.close()
    assert child.exitstatus == 2
    [error] = checked(child.before.split("butler: ")[0].replace("\r\n", "\n"))
    assert error["type"] == "error" and "no decision given" in error["message"]
    assert json.loads(butler("pending", "--json").stdout)[0]["id"] == park["id"]
