"""`butler memory` and memory in the loop: the installed program and the real wiring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call, json_lines

from butler_cli.app.config.options import RunOptions
from butler_cli.app.parks.door import Answer, decide
from butler_cli.app.run.butler import Butler
from butler_cli.core.provider import ModelRequest, ModelResponse
from butler_cli.memory.block import OPEN
from butler_cli.providers import PROVIDERS


def test_add_list_search_forget(butler) -> None:
    r = butler("memory", "add", "Ana likes oolong tea", "--importance", "high")
    assert r.returncode == 0, r.stderr
    entry_id = r.stdout.split()[2]
    butler("memory", "add", "我开了家卖奶茶的小店")
    listed = json.loads(butler("memory", "list", "--json").stdout)
    assert [e["text"] for e in listed] == ["Ana likes oolong tea", "我开了家卖奶茶的小店"]
    assert listed[0]["meta"]["importance"] == 4
    assert "奶茶" in butler("memory", "search", "奶茶店").stdout
    assert json.loads(butler("memory", "search", "OOLONG", "--json").stdout)[0]["id"] == entry_id
    assert butler("memory", "forget", entry_id).returncode == 0
    assert butler("memory", "forget", entry_id).returncode == 2
    assert "oolong" not in butler("memory", "list").stdout


def test_bad_importance_and_kind_are_usage_errors(butler) -> None:
    assert butler("memory", "add", "x", "--importance", "purple").returncode == 2
    assert butler("memory", "list", "--kind", "dreams").returncode == 2


def test_forget_all_asks_first(butler) -> None:
    butler("memory", "add", "one")
    r = butler("memory", "forget", "--all")
    assert r.returncode == 2 and "--yes" in r.stderr
    assert "one" in butler("memory", "list").stdout
    r = butler("memory", "forget", "--all", "--yes")
    assert r.returncode == 0 and "Forgot 1" in r.stdout


def test_export_import_roundtrip_and_malformed_refused_whole(butler, tmp_path) -> None:
    butler("memory", "add", "fact one")
    butler("memory", "add", "fact two", "--importance", "pin")
    exported = butler("memory", "export").stdout
    path = tmp_path / "mem.json"
    path.write_text(exported)
    assert "fact two" in butler("memory", "export", "--format", "md").stdout
    r = butler("memory", "import", str(path), "--profile", "other")
    assert r.returncode == 0 and "Imported 2" in r.stdout
    other = json.loads(butler("memory", "list", "--json", "--profile", "other").stdout)
    assert sorted(e["text"] for e in other) == ["fact one", "fact two"]
    assert butler("memory", "import", str(path), "--profile", "other").stdout.startswith(
        "Imported 0"
    )
    data = json.loads(exported)
    data["entries"].append({"kind": "semantic", "text": "", "ts": "2026"})
    path.write_text(json.dumps(data))
    r = butler("memory", "import", str(path), "--profile", "third")
    assert r.returncode == 2 and "entry 2 has no text" in r.stderr
    assert json.loads(butler("memory", "list", "--json", "--profile", "third").stdout) == []


def test_show_block_and_profiles(butler) -> None:
    butler("memory", "add", "works at the harbour", "--profile", "work")
    assert "harbour" in butler("memory", "show-block", "--profile", "work").stdout
    block = butler("memory", "show-block").stdout
    assert block.startswith(OPEN) and "_(no memories yet)_" in block


def test_turns_are_captured_and_consolidated_by_the_model(butler, script) -> None:
    model = script({"text": "Sure, noted."})
    for i in range(3):
        assert butler("run", "--model", model, f"remember thing {i}").returncode == 0
    episodes = json.loads(butler("memory", "list", "--kind", "episodic", "--json").stdout)
    assert len(episodes) == 3 and episodes[0]["text"].startswith("Asked: remember thing")
    assert "Nothing to consolidate" in butler("memory", "consolidate", "--model", model).stdout
    for i in range(10):
        butler("run", "--model", model, f"I grow basil {i}")
    # turns 4 and 5 say it; turn 3 does not say "jazz"; a line without a citation is not a fact
    summary = script({"text": "- grows basil [4, 5]\n- likes jazz [3]\n- owns a boat"})
    r = butler("memory", "consolidate", "--model", summary)
    assert r.returncode == 0 and "Folded 5 turns into 1 new fact." in r.stdout, r.stderr
    [fact] = json.loads(butler("memory", "list", "--new", "--json").stdout)
    # shown where it was made, with its id to forget it by
    assert f"- [{fact['id']}] grows basil" in r.stdout and "jazz" not in r.stdout
    assert [c["text"] for c in fact["meta"]["cites"]] == [
        "Asked: I grow basil 0",
        "Asked: I grow basil 1",
    ]
    assert "grows basil" in butler("memory", "show-block").stdout
    assert len(json.loads(butler("memory", "list", "--kind", "episodic", "--json").stdout)) == 8


def test_run_tasks_keep_what_was_asked_and_done_not_the_reply(butler, script, workdir) -> None:
    """Issue 36: `run` filled `memory list` with ``User: … Butler: …`` pairs, the model's
    reply kept as if it were a fact. A turn keeps the person's words and the tools that ran."""
    (workdir / "notes.txt").write_text("tomatoes\n")
    model = script(
        {"tool_calls": [call("read_file", path="notes.txt")]},
        {"text": "First answer: hello there. Your notes mention oat milk."},
    )
    assert butler("run", "--model", model, "what is in my notes").returncode == 0
    [episode] = json.loads(butler("memory", "list", "--json").stdout)
    assert episode["text"] == "Asked: what is in my notes\nDone: read_file"
    listed = butler("memory", "list").stdout
    assert "User:" not in listed and "Butler:" not in listed and "oat milk" not in listed


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("", "answer was empty"),
        ("   \n ", "answer was empty"),
        ("First answer: hello there. Your notes mention oat milk.", "cited none"),
        ("- likes oat milk [99]", "cited none"),  # a turn it was not given
        ("- likes oat milk [1]", "cited none"),  # a turn that does not say so
    ],
)
def test_a_failed_or_uncited_consolidation_writes_nothing(butler, script, answer, why) -> None:
    model = script({"text": "ok"})
    for i in range(10):
        butler("run", "--model", model, f"t{i}")
    before = butler("memory", "export").stdout
    r = butler("memory", "consolidate", "--model", script({"text": answer}))
    assert r.returncode == 1 and why in r.stderr, r.stderr
    assert butler("memory", "export").stdout == before


def test_new_facts_are_listed_with_their_sources_and_forgotten(butler, script) -> None:
    model = script({"text": "ok"})
    for i in range(9):
        butler("run", "--model", model, f"my sister Mei lives in Lisbon, note {i}")
    butler("memory", "add", "Ana is allergic to peanuts")
    r = butler("memory", "consolidate", "--model", script({"text": "- Mei lives in Lisbon [1]"}))
    assert r.returncode == 0, r.stderr
    shown = butler("memory", "list", "--new").stdout.splitlines()
    assert "Mei lives in Lisbon" in shown[0] and "peanuts" not in "\n".join(shown)
    assert shown[1].startswith("    from [") and "Asked: my sister Mei lives in Lisbon" in shown[1]
    fact_id = shown[0].split("]")[0][1:]
    assert butler("memory", "forget", fact_id).returncode == 0
    assert butler("memory", "list", "--new").stdout.strip() == "No memories."


def test_an_old_memory_db_migrates(butler, butler_home: Path) -> None:
    """A home made by the butler before issue 36 (tests/old_stores/make_profile.py): its
    captured ``User: … / Butler: …`` turns keep what was asked, no row is lost, and its old
    uncited profile is listed for review."""
    butler_home.mkdir(parents=True, exist_ok=True)
    old = Path(__file__).parent / "old_stores" / "profile_memory.db"
    (butler_home / "memory.db").write_bytes(old.read_bytes())
    listed = json.loads(butler("memory", "list", "--json").stdout)
    assert len(listed) == 36
    episodes = [e["text"] for e in listed if e["kind"] == "episodic"]
    assert len(episodes) == 34 and all(t.startswith("Asked: ") for t in episodes)
    assert not any("Butler:" in t or "Welcome" in t for t in episodes)
    assert "I moved to Porto in 2027" in butler("memory", "search", "Porto 2027").stdout
    assert "Welcome" not in butler("memory", "search", "welcome").stdout
    assert "oat milk" in butler("memory", "list", "--new").stdout


def test_a_parked_turn_is_captured_by_its_resume(butler, script) -> None:
    model = script(
        {"tool_calls": [call("write_file", "w", path="a.txt", content="x")]}, {"text": "wrote it"}
    )
    r = butler("run", "--model", model, "write a", "--json")
    assert json.loads(butler("memory", "list", "--kind", "episodic", "--json").stdout) == []
    butler("resume", json_lines(r.stdout)[0]["park_id"], "--approve")
    [episode] = json.loads(butler("memory", "list", "--kind", "episodic", "--json").stdout)
    assert episode["text"] == "Asked: write a\nDone: write_file"


def test_the_model_can_remember_through_its_tool(butler, script) -> None:
    model = script(
        {"tool_calls": [call("remember", text="prefers tea", importance="pin")]}, {"text": "noted"}
    )
    r = butler("run", "--model", model, "I prefer tea", "--json")
    assert r.returncode == 0
    assert "Remembered as" in r.stdout
    [fact] = json.loads(butler("memory", "list", "--kind", "semantic", "--json").stdout)
    assert fact["text"] == "prefers tea" and fact["meta"]["importance"] == 5


class Recording:
    """A provider that records the system prompt of every request it gets."""

    systems: list[str] = []
    replies: list[ModelResponse] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        Recording.systems.append(request.system)
        k = sum(1 for m in request.messages if m.role == "assistant")
        return Recording.replies[k]


@pytest.fixture
def recording(monkeypatch):
    monkeypatch.setitem(
        PROVIDERS, "recording", lambda model, base_url, settings, options=None: Recording()
    )
    Recording.systems = []
    return Recording


def test_block_is_frozen_in_a_session_and_seen_next_session(
    recording, workdir: Path, butler_home
) -> None:
    from butler_cli.core.messages import ToolUseBlock

    remember = ToolUseBlock(id="r", name="remember", input={"text": "has a cat called Miso"})
    recording.replies = [
        ModelResponse(tool_calls=[remember], stop_reason="tool_use"),
        ModelResponse(text="noted"),
    ]
    opts = RunOptions(model="recording:x", system="Be kind.")
    butler = Butler.build(opts, cwd=workdir)
    butler.run_task("I have a cat called Miso")
    butler.run_task("again")
    assert len(set(recording.systems)) == 1  # byte-identical all session
    assert recording.systems[0].startswith(OPEN)  # F5: the block leads…
    assert recording.systems[0].endswith("Be kind.")  # …the persona follows
    assert "Miso" not in recording.systems[0]
    Butler.build(opts, cwd=workdir).run_task("next session")
    assert "has a cat called Miso" in recording.systems[-1]


def test_resume_sends_the_block_it_parked_with(recording, workdir: Path, butler_home) -> None:
    from butler_cli.core.messages import ToolUseBlock

    write = ToolUseBlock(id="w", name="write_file", input={"path": "a.txt", "content": "x"})
    recording.replies = [
        ModelResponse(tool_calls=[write], stop_reason="tool_use"),
        ModelResponse(text="done"),
    ]
    report = Butler.build(RunOptions(model="recording:x"), cwd=workdir).run_task("write")
    from butler_cli.memory.store import open_memory

    open_memory(butler_home).remember("added while parked")
    decide(report.park_id, Answer(True), opts=RunOptions())
    assert recording.systems[-1] == recording.systems[0]  # the same conversation, same bytes
    assert "added while parked" not in recording.systems[-1]


def test_new_facts_are_shown_neutralised(butler, script) -> None:
    """A concluded fact is the model's text: where it is shown (consolidate, list --new) its
    terminal escapes and invisible characters are neutralised, not run."""
    model = script({"text": "ok"})
    for i in range(9):
        butler("run", "--model", model, f"I grow basil {i}")
    hostile = "- grows basil \x1b]0;pwned\x07\x1b[2J\u202e [1]"
    r = butler("memory", "consolidate", "--model", script({"text": hostile}))
    assert r.returncode == 0 and "grows basil" in r.stdout, r.stderr
    listed = butler("memory", "list", "--new").stdout
    for shown in (r.stdout, listed):
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
