"""Issue 33: one door for a person's decision. Every surface (the chat, `butler resume`, the
inbox, a later channel) hands one typed answer to ``app/parks/door.decide``, which records the
decision and anything kept in the same held step; a kept approval exists only if its
decision was recorded. The first test reads the code and fails if a second way in appears."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any

import pexpect
from conftest import call, spawn_butler

import butler_cli

PACKAGE = Path(butler_cli.__file__).parent
DOOR = "app/parks/door.py"

#: What records a decision, keeps an approval or continues a decided park: called from the
#: door only (the store's own ``keep`` from the one function that keeps, which the door calls).
ONLY_FROM = {
    "record_decision": {DOOR},
    "keep_approval": {DOOR},
    "continue_decided": {DOOR},
    "check_reachable": {DOOR},
    "hold": {DOOR},
    "decision_for": {DOOR},
    "keep": {"app/run/butler.py", "app/parks/approvals.py"},
}


def _sources() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(PACKAGE)): ast.parse(p.read_text(encoding="utf-8"))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def _called(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def test_a_decision_enters_by_one_door_only() -> None:
    """Every call that records a decision, keeps an approval or continues a decided park is
    in ``app/parks/door.py``; one answer type; the old doors are gone. A second door — a
    surface recording a decision itself, keeping before the lock, a type of its own — fails
    here, naming the file."""
    wrong = []
    answers = []
    for name, tree in _sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = _called(node)
                if called in ONLY_FROM and name not in ONLY_FROM[called]:
                    # a set's or a dict's own .keep/.hold would be named here too: there are none
                    wrong.append(f"{name}:{node.lineno} calls {called}")
            if isinstance(node, ast.ClassDef) and re.search("(Answer|Decision)$", node.name):
                answers.append(f"{name}:{node.name}")
            if isinstance(node, ast.FunctionDef) and node.name in (
                "resume_park",
                "decide_and_continue",
            ):
                wrong.append(f"{name}: {node.name} is a second door")
    assert not wrong, wrong
    # the one answer, and the verdict on one call it carries (what a park records); the
    # model's streamed reply on the chat's screen is no person's answer
    other = "repl/progress.py:LiveAnswer"
    assert [a for a in answers if a != other] == [
        "app/parks/decisions.py:Answer",
        "core/park.py:Decision",
    ], answers
    # the door itself: one public function
    door = _sources()[DOOR]
    public = [n.name for n in door.body if isinstance(n, ast.FunctionDef) and n.name[0] != "_"]
    assert public == ["decide"]
    # each surface reaches it: the chat, resume, the inbox
    for surface in ("app/chat/chat.py", "cli/resume.py", "serve/decide.py"):
        tree = _sources()[surface]
        imported = {
            a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module == "butler_cli.app.parks.door"
            for a in n.names
        }
        assert "decide" in imported, surface


def _audit(home: Path) -> list[dict[str, Any]]:
    path = home / "audit.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(x) for x in lines]


def test_a_keep_on_a_park_decided_elsewhere_first_keeps_nothing(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    """The attack: while the chat shows its question, the park is denied with `butler
    resume`; the person then presses `a` ("always allow this here") in the chat. Their
    decision is refused — and nothing is kept, nothing is audited as kept (the old chat kept
    the approval before it took the park's lock)."""
    model = script(
        {"tool_calls": [call("write_file", "w1", path="notes.txt", content="x")]},
        {"text": "written"},
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    try:
        child.expect("you ›")
        child.sendline("write the note")
        child.expect(r"Approve\? \[y/n/l/d/s/a\]")
        [park] = [p.stem for p in (butler_home / "parks").glob("*.json")]
        denied = butler("resume", park, "--deny", "--json")
        assert denied.returncode == 0, denied.stderr
        child.sendline("a")
        child.expect("Always allow write_file")
        child.sendline("y")
        child.expect("already denied")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert not (workdir / "notes.txt").exists()
    assert not (butler_home / "approvals.toml").exists()
    assert json.loads(butler("grants", "list", "--json").stdout) == []
    assert not [e for e in _audit(butler_home) if e.get("event") == "kept"]


def test_the_kept_file_write_runs_at_once_in_the_session_that_kept_it(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    """Like "don't ask again": after `a`, the very next write of that file in the same chat
    (other content) runs without the approval box, and one line names the kept approval that
    let it; `/grants` lists the kept approval beside the session's grants."""
    model = script(
        {"tool_calls": [call("write_file", "w1", path="notes.txt", content="one")]},
        {"text": "first done"},
        {"tool_calls": [call("write_file", "w2", path="notes.txt", content="two")]},
        {"text": "second done"},
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    try:
        child.expect("you ›")
        child.sendline("write it")
        child.expect(r"Approve\? \[y/n/l/d/s/a\]")
        child.sendline("a")
        child.expect("Always allow write_file")
        child.sendline("y")
        child.expect("first done")
        child.expect("you ›")
        child.sendline("write it again")
        index = child.expect([r"runs without asking: kept approval 1", r"Approve\?"])
        assert index == 0, "asked again in the session that kept it"
        child.expect("second done")
        child.expect("you ›")
        child.sendline("/grants")
        child.expect(r"kept 1\. write_file with path matching glob:\S*notes.txt")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (workdir / "notes.txt").read_text() == "two"
    kept = [e for e in _audit(butler_home) if e.get("event") == "verdict"]
    assert "kept approval 1" in kept[-1]["reason"]
    assert os.path.exists(butler_home / "approvals.toml")
