"""One butler per chat session: deciding a park at the prompt continues the task on the
session's own butler — no second model, policy, memory or MCP server is built — and Ctrl-D
still leaves promptly after an approval, a denial and a "later". A real pty, a real MCP server
(stdio, the official SDK) that records each start."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pexpect
from conftest import call, spawn_butler

SERVER = Path(__file__).parent / "mcp_notes_server.py"
APPROVE = r"Approve\? \[y/n/l/d/s"


def configure(home: Path, tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    starts = tmp_path / "starts.log"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        # a sandboxed server writes only where it may (issue 31): the test's folder is named
        # a root, as a person names the folder a server works in
        f"allowed_roots = [{json.dumps(str(tmp_path))}]\n"
        "[mcp.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVER))}]\n"
        f"env = {{ NOTES_DIR = {json.dumps(str(notes))}, NOTES_STARTS = {json.dumps(str(starts))} }}\n"
    )
    return starts


def write(cid: str, name: str) -> dict:
    return {"tool_calls": [call("write_file", cid, path=name, content=cid)]}


def test_three_approvals_one_butler_one_mcp_server(script, butler_home, workdir, tmp_path):
    starts = configure(butler_home, tmp_path)
    model = script(
        write("a", "a.txt"),
        {"text": "one"},
        write("b", "b.txt"),
        {"text": "two"},
        write("c", "c.txt"),
        {"text": "three"},
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    for word in ("one", "two", "three"):
        child.expect("you ›")
        child.sendline(f"write {word}")
        child.expect(APPROVE)
        child.sendline("y")
        child.expect(word)
    child.expect("you ›")
    child.sendeof()
    child.expect(pexpect.EOF, timeout=30)
    assert [p.read_text() for p in sorted(workdir.glob("*.txt"))] == ["a", "b", "c"]
    assert len(starts.read_text().splitlines()) == 1  # one butler, one server, all session


def test_ctrl_d_leaves_promptly_after_any_decision(script, butler_home, workdir, tmp_path):
    configure(butler_home, tmp_path)
    for answer in ("y", "n", "l"):
        model = script(write("w", f"{answer}.txt"), {"text": "finished"})
        child = spawn_butler(["chat", "--model", model], butler_home, workdir)
        child.expect("you ›")
        child.sendline("go")
        child.expect(APPROVE)
        child.sendline(answer)
        if answer == "n":
            child.expect("Note")
            child.sendline("")
        child.expect("you ›")
        began = time.monotonic()
        child.sendeof()
        child.expect(pexpect.EOF, timeout=30)
        assert time.monotonic() - began < 10, answer  # generous: it takes well under a second
