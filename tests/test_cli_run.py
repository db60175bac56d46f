"""`butler run`, `pending`, `show`: the installed program in a subprocess."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import call, json_lines, tool_results

WRITE_PLAN = call("write_file", "w1", path="plan.txt", content="tea\n")


def parks_in(home: Path) -> list[Path]:
    d = home / "parks"
    return sorted(d.glob("*.json")) if d.exists() else []


def test_run_parks_then_pending_show_resume(butler, script, butler_home, workdir) -> None:
    model = script({"text": "writing", "tool_calls": [WRITE_PLAN]}, {"text": "Plan written."})
    r = butler("run", "--model", model, "write my plan")
    assert r.returncode == 3, r.stderr
    [park] = parks_in(butler_home)
    park_id = park.stem
    assert f"butler resume {park_id}" in r.stdout
    assert not (workdir / "plan.txt").exists()

    # private files and dirs
    assert stat.S_IMODE(butler_home.stat().st_mode) == 0o700
    assert stat.S_IMODE((butler_home / "parks").stat().st_mode) == 0o700
    assert stat.S_IMODE(park.stat().st_mode) == 0o600
    assert stat.S_IMODE((butler_home / "park.key").stat().st_mode) == 0o600

    pending = json.loads(butler("pending", "--json").stdout)
    assert pending == [
        {
            "id": park_id,
            "created_at": pending[0]["created_at"],
            "task": "write my plan",
            "tool": "write_file",
            "title": f"write_file: {workdir / 'plan.txt'} (4 characters, 1 line)",
            "reason": "changes files on your machine — asking you first",
            "actions": [
                {
                    "tool": "write_file",
                    "title": f"write_file: {workdir / 'plan.txt'} (4 characters, 1 line)",
                    "reason": "changes files on your machine — asking you first",
                }
            ],
            "origin": "run",
        }
    ]
    shown = json.loads(butler("show", park_id[:4], "--json").stdout)
    assert shown["status"] == "pending" and shown["calls"][0]["input"]["content"] == "tea\n"
    assert "write_file" in butler("show", park_id).stdout

    r = butler("resume", park_id[:3], "--approve")
    assert r.returncode == 0, r.stderr
    assert "Plan written." in r.stdout
    assert (workdir / "plan.txt").read_text() == "tea\n"
    assert json.loads(butler("pending", "--json").stdout) == []
    assert json.loads(butler("show", park_id, "--json").stdout)["status"] == "resolved"

    again = butler("resume", park_id, "--approve")
    assert again.returncode == 5
    assert "never runs twice" in again.stderr


def test_resume_from_another_directory_uses_the_recorded_one(
    butler, script, workdir, tmp_path
) -> None:
    model = script({"tool_calls": [WRITE_PLAN]}, {"text": "ok"})
    butler("run", "--model", model, "plan")
    park_id = json.loads(butler("pending", "--json").stdout)[0]["id"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert butler("resume", park_id, "--approve", cwd=elsewhere).returncode == 0
    assert (workdir / "plan.txt").exists() and not (elsewhere / "plan.txt").exists()


def test_deny_with_note_reaches_the_model_and_runs_nothing(butler, script, workdir) -> None:
    model = script({"tool_calls": [WRITE_PLAN]}, {"text": "Left it alone."})
    butler("run", "--model", model, "plan")
    park_id = json.loads(butler("pending", "--json").stdout)[0]["id"]
    r = butler("resume", park_id, "--deny", "--note", "too risky", "--json")
    assert r.returncode == 0
    [rep] = json_lines(r.stdout)
    assert rep["status"] == "done" and rep["text"] == "Left it alone."
    results = tool_results(r.stdout)
    assert results[-1]["is_error"] and "too risky" in results[-1]["content"]
    assert not (workdir / "plan.txt").exists()


def test_resume_without_decision_and_no_terminal_changes_nothing(
    butler, script, butler_home
) -> None:
    butler("run", "--model", script({"tool_calls": [WRITE_PLAN]}), "plan")
    [park] = parks_in(butler_home)
    before = park.read_bytes()
    r = butler("resume", park.stem)
    assert r.returncode == 2 and "--approve" in r.stderr
    assert park.read_bytes() == before


def test_json_lines_per_task_and_batch_goes_on(butler, script, butler_home, workdir) -> None:
    model = script({"text": "on it", "tool_calls": [WRITE_PLAN]}, {"text": "done"})
    tasks = workdir / "tasks.txt"
    tasks.write_text("# my tasks\nfirst\n\nsecond\n")
    r = butler("run", "--model", model, "--tasks-file", str(tasks), "--json")
    assert r.returncode == 3
    reps = json_lines(r.stdout)
    assert [x["task"] for x in reps] == ["first", "second"]
    for rep in reps:
        assert set(rep) >= {
            "task",
            "status",
            "text",
            "park_id",
            "approval",
            "error",
            "rounds",
            "messages",
        }
        assert rep["status"] == "parked" and rep["rounds"] == 1
        assert rep["approval"]["tool"] == "write_file"
        assert rep["messages"][0] == {
            "role": "user",
            "content": [{"type": "text", "text": rep["task"]}],
        }
    assert len(parks_in(butler_home)) == 2


def test_tasks_from_stdin(butler, script) -> None:
    r = butler(
        "run", "--model", script({"text": "hi"}), "--tasks-file", "-", "--json", input="a\nb\n"
    )
    assert r.returncode == 0
    assert [x["text"] for x in json_lines(r.stdout)] == ["hi", "hi"]


def test_benign_tools_run_inline(butler, script, workdir) -> None:
    (workdir / "notes.txt").write_text("buy milk")
    model = script(
        {
            "tool_calls": [
                call("read_file", path="notes.txt"),
                call("list_dir", path="."),
                call("now"),
            ]
        },
        {"text": "You need milk."},
    )
    r = butler("run", "--model", model, "what do I need?", "--json")
    assert r.returncode == 0, r.stderr
    [rep] = json_lines(r.stdout)
    results = tool_results(r.stdout)
    assert results[0]["content"] == "buy milk"
    assert "notes.txt" in results[1]["content"]
    assert not any(x["is_error"] for x in results)


def test_read_file_is_capped_with_a_note(butler, script, workdir) -> None:
    (workdir / "big.txt").write_text("x" * 200_000)
    r = butler(
        "run",
        "--model",
        script({"tool_calls": [call("read_file", path="big.txt")]}, {"text": "k"}),
        "read",
        "--json",
    )
    content = tool_results(r.stdout)[0]["content"]
    assert len(content) < 70_000 and "cut at 65536 bytes of 200000" in content


def test_round_limit_exits_4(butler, script) -> None:
    turns = [{"text": f"t{i}", "tool_calls": [call("now")]} for i in range(5)]
    r = butler("run", "--model", script(*turns), "loop", "--max-rounds", "2", "--json")
    assert r.returncode == 4
    rep = json_lines(r.stdout)[0]
    assert rep["status"] == "limit" and "aborted after 2 tool-use rounds" in rep["text"]


def test_missing_turn_fails_naming_k(butler, script) -> None:
    r = butler("run", "--model", script({"tool_calls": [call("now")]}), "go")
    assert r.returncode == 1
    assert "no turn 1" in r.stderr


def test_malformed_script_is_a_usage_error_before_anything_runs(
    butler, tmp_path, butler_home
) -> None:
    bad = tmp_path / "bad.json"
    for text in ['{"turns": [{"txet": "typo"}]}', "{not json", '{"turns": "no"}']:
        bad.write_text(text)
        r = butler("run", "--model", f"scripted:{bad}", "go")
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("butler: scripted model file") and "Traceback" not in r.stderr
    assert not butler_home.exists()


@pytest.mark.parametrize(
    ("turn", "where"),
    [
        ({"tool_calls": [{"name": ""}]}, "turns.0.tool_calls.0.name"),
        ({"tool_calls": [{"name": "now", "arguments": [1]}]}, "turns.0.tool_calls.0.arguments"),
        ({"tool_calls": [{"name": "now", "id": 3}]}, "turns.0.tool_calls.0.id"),
        ({"tool_calls": {"name": "now"}}, "turns.0.tool_calls"),
        ({"text": ["a"]}, "turns.0.text"),
        ({"stop_reason": "later"}, "turns.0.stop_reason"),
        ({"tool_calls": [{"name": "now", "args": {}}]}, "turns.0.tool_calls.0.args"),
    ],
)
def test_a_malformed_script_names_the_place_in_one_line(
    turn, where, butler, tmp_path, butler_home
) -> None:
    """The script is checked by hand (a scripted run loads no pydantic): still one line that
    names where the file is wrong, before anything runs."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"turns": [turn]}))
    r = butler("run", "--model", f"scripted:{bad}", "go")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"butler: scripted model file {bad}: {where}: ")
    assert len(r.stderr.strip().splitlines()) == 1 and not butler_home.exists()


def test_usage_errors_are_one_line_exit_2(butler, butler_home) -> None:
    for args in (
        ["run", "--model", "nope:x", "x"],
        ["run", "--model", "scripted:/no/such.json", "x"],
        ["resume", "zzzzzzzz", "--approve"],
        ["show", "!!"],
    ):
        r = butler(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    # no model at all: the one error line, then how to choose one (issue 35 item 7)
    r = butler("run", "x")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("butler: no model chosen") and "butler config set model" in r.stderr
    assert not butler_home.exists()


def test_model_from_environment(butler, script) -> None:
    r = butler("run", "hi", env={"BUTLER_MODEL": script({"text": "from env"})})
    assert r.returncode == 0 and "from env" in r.stdout


def test_pending_with_no_home_is_empty_and_creates_nothing(butler, butler_home) -> None:
    r = butler("pending")
    assert r.returncode == 0 and "No parks" in r.stdout
    assert json.loads(butler("pending", "--json").stdout) == []
    assert not butler_home.exists()


def test_help_and_module_entry(butler) -> None:
    assert butler("--help").returncode == 0
    env = {**os.environ, "BUTLER_HOME": "/nonexistent-butler-home"}
    r = subprocess.run(
        [sys.executable, "-m", "butler_cli", "--help"], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0 and "resume" in r.stdout


def test_an_unknown_command_suggests_a_close_one_once(butler) -> None:
    for args, hint in ((["rnu"], "Did you mean 'run'?"), (["memory", "lst"], "'list'")):
        r = butler(*args)
        assert r.returncode == 2 and r.stderr.count(hint) == 1, r.stderr


def test_no_color_output_has_no_escape_codes(butler, script) -> None:
    model = script({"tool_calls": [WRITE_PLAN]})
    r = butler("run", "--model", model, "plan")
    assert "\x1b[" not in r.stdout + r.stderr


def test_audit_log_records_verdicts_and_decisions(butler, script, butler_home) -> None:
    butler("run", "--model", script({"tool_calls": [WRITE_PLAN]}, {"text": "k"}), "plan")
    park_id = json.loads(butler("pending", "--json").stdout)[0]["id"]
    butler("resume", park_id, "--deny", "--note", "not today")
    lines = [json.loads(x) for x in (butler_home / "audit.jsonl").read_text().splitlines()]
    assert [(x["event"], x["park"], x["tool"]) for x in lines] == [
        ("verdict", park_id, "write_file"),
        ("decision", park_id, "write_file"),
        ("resume", park_id, "write_file"),  # judged again at resume: what came of it
    ]
    assert lines[2]["outcome"] == "declined" and lines[2]["verdict"] == "approve"
    assert lines[0]["verdict"] == "approve" and lines[1]["decision"] == "deny"
    assert lines[1]["note"] == "not today" and len(lines[0]["args_sha256"]) == 64
    assert lines[0]["args_sha256"] == lines[1]["args_sha256"]
    assert stat.S_IMODE((butler_home / "audit.jsonl").stat().st_mode) == 0o600


def test_a_task_as_the_first_word_runs_as_butler_run(butler, script) -> None:
    """`butler "TASK"` is `butler run "TASK"` when the first word is no command and no near miss
    of one: a typo still gets "Did you mean", unquoted words are one task, never split (more in
    tests/test_plain_words.py)."""
    model = script({"text": "Plan written."})
    for first in ("summarize my notes", "hello"):
        r = butler(first, "--model", model, "--json")
        assert r.returncode == 0, r.stderr
        [report] = json_lines(r.stdout)
        assert (report["task"], report["text"]) == (first, "Plan written.")
    for typo, hint in (("lgo", "Did you mean 'log'?"), ("pendng", "Did you mean 'pending'?")):
        r = butler(typo, "--model", model)
        assert r.returncode == 2 and hint in r.stderr, r.stderr
    r = butler("summarize", "my", "notes", "--model", model, "--json")
    assert [report["task"] for report in json_lines(r.stdout)] == ["summarize my notes"]
    assert len(json.loads(butler("log", "--json").stdout)) == 3  # the typos ran nothing
