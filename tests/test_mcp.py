"""MCP: a real server written with the SDK, launched over stdio by the butler."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import call, json_lines, tool_results

SERVER = Path(__file__).parent / "mcp_notes_server.py"


@pytest.fixture
def notes(butler_home: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tea.txt").write_text("oolong, 85 °C")
    butler_home.mkdir(exist_ok=True)
    (butler_home / "config.toml").write_text(
        # the notes live under /tmp: a sandboxed server has a private /tmp (issue 31), so
        # the test's folder is named a root, as a person names the folder a server works in
        f"allowed_roots = [{json.dumps(str(tmp_path))}]\n"
        "[mcp.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVER))}]\n"
        f"env = {{ NOTES_DIR = {json.dumps(str(folder))} }}\n"
        'governed = ["create*"]\n'
        'benign = ["count"]\n'
        "start_timeout = 120\n"  # a loaded test machine starts Python slowly
        "\n[mcp.broken]\n"
        'command = "/nonexistent/mcp-server"\n'
    )
    return folder


def test_mcp_list(butler, notes) -> None:
    r = butler("mcp", "list", "--json")
    assert r.returncode == 1, r.stderr  # a server failed to start
    servers = {s["name"]: s for s in json.loads(r.stdout)["servers"]}
    assert servers["broken"]["state"].startswith("failed: No such file or directory")
    kinds = {t["name"]: (t["kind"], t["hints"]) for t in servers["notes"]["tools"]}
    assert kinds["notes__lookup"] == ("benign", "[declared read-only]")
    assert kinds["notes__create_note"][0] == "governed"
    assert kinds["notes__wipe"] == ("governed", "[declared destructive]")
    assert kinds["notes__archive"][0] == "governed"  # no annotations: the MCP defaults govern it
    assert kinds["notes__count"][0] == "benign"  # the config says so


def test_a_tool_without_annotations_asks_first(butler, script, notes) -> None:
    """The MCP defaults are readOnlyHint false and destructiveHint true: a tool the server does
    not mark read-only, and the config does not mark benign, waits for a person."""
    model = script(
        {"tool_calls": [call("notes__count", "n"), call("notes__archive", "a", title="tea")]},
        {"text": "done"},
    )
    r = butler("run", "--model", model, "tidy", "--json", "--yes-safe")
    assert r.returncode == 3, r.stderr
    rep = json_lines(r.stdout)[0]
    assert rep["approval"]["tool"] == "notes__archive"
    assert "does not declare it read-only" in rep["approval"]["reason"]
    assert (notes / "tea.txt").exists() and not (notes / "tea.archived").exists()


def test_mcp_list_with_none_configured(butler) -> None:
    r = butler("mcp", "list")
    assert (
        r.returncode == 0 and "No MCP servers configured" in r.stdout and "[mcp.notes]" in r.stdout
    )


def test_benign_inline_governed_parks_and_runs_on_resume(butler, script, notes) -> None:
    model = script(
        {"tool_calls": [call("notes__lookup", "l", title="tea")]},
        {"tool_calls": [call("notes__create_note", "c", title="shop", text="milk")]},
        {"text": "done"},
    )
    r = butler("run", "--model", model, "notes", "--json")
    assert r.returncode == 3, r.stderr
    assert "MCP server 'broken' did not start" in r.stderr  # reported; the butler went on
    assert tool_results(r.stdout)[0]["content"] == "oolong, 85 °C"
    rep = json_lines(r.stdout)[0]
    assert rep["approval"]["tool"] == "notes__create_note" and not (notes / "shop.txt").exists()
    r = butler("resume", rep["park_id"], "--approve", "--json")  # a new process, a new server
    assert r.returncode == 0, r.stderr
    assert (notes / "shop.txt").read_text() == "milk"  # ran exactly once
    assert butler("resume", rep["park_id"], "--approve").returncode == 5
    assert (notes / "shop.txt").read_text() == "milk"


def test_a_server_crash_mid_call_is_an_error_result(butler, script, notes) -> None:
    model = script(
        {"tool_calls": [call("notes__crash", "x")]},
        {"tool_calls": [call("notes__lookup", "l", title="tea")]},
        {"text": "k"},
    )
    r = butler("run", "--model", model, "crash it", "--json", timeout=150)
    assert r.returncode == 0, r.stderr
    first, second = tool_results(r.stdout)
    assert first["is_error"] and first["content"]  # an error result, not a crash of the butler
    assert second["is_error"]  # the server is gone: later calls fail cleanly too


def test_a_streamable_http_server(butler, script, butler_home, tmp_path) -> None:
    import os
    import socket
    import subprocess
    import time

    folder = tmp_path / "web-notes"
    folder.mkdir()
    (folder / "jazz.txt").write_text("Coltrane")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(SERVER), str(port)],
        env={**os.environ, "NOTES_DIR": str(folder)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        butler_home.mkdir(exist_ok=True)
        (butler_home / "config.toml").write_text(
            f'[mcp.web]\nurl = "http://127.0.0.1:{port}/mcp"\n'
        )
        model = script({"tool_calls": [call("web__lookup", "l", title="jazz")]}, {"text": "k"})
        r = butler("run", "--model", model, "go", "--json")
        assert r.returncode == 0, r.stderr
        assert tool_results(r.stdout)[0]["content"] == "Coltrane"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_policy_rule_can_put_an_mcp_tool_behind_the_gate(butler, script, notes, tmp_path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\nname = "lookups are private"\ntool = "notes__lookup"\ntier = "dangerous"\n'
    )
    model = script({"tool_calls": [call("notes__lookup", "l", title="tea")]}, {"text": "k"})
    r = butler(
        "run", "--model", model, "go", "--json", "--policy", "tiered", "--policy-file", str(rules)
    )
    assert r.returncode == 3, r.stderr
    assert json_lines(r.stdout)[0]["approval"]["reason"].startswith(
        "dangerous — rule 'lookups are private'"
    )


def test_a_declared_destructive_tool_is_never_kept(butler, script, notes, workdir) -> None:
    """Issue 31, case 7: a tool the server declares destructive was offered "always allow
    here", and a kept approval of it ran it unasked under --yes-safe. It is asked every time."""
    folder = json.dumps(str(workdir.resolve()))
    (notes.parent / "home" / "approvals.toml").write_text(
        f'[[approval]]\ntool = "notes__wipe"\nfolder = {folder}\n'
        'arguments = "{}"\nfiles = "{}"\n'  # exactly what the prompt keeps for wipe()
    )
    model = script({"tool_calls": [call("notes__wipe", "w")]}, {"text": "wiped"})
    r = butler("run", "--model", model, "tidy", "--json", "--yes-safe")
    assert r.returncode == 3, r.stdout + r.stderr
    assert (notes / "tea.txt").exists()
    parked = json_lines(r.stdout)[0]
    assert "declares it destructive" in parked["approval"]["reason"]
    shown = json.loads(butler("show", parked["park_id"], "--json").stdout)
    assert shown["verdicts"]["w"]["ask_always"] is True  # no "always allow here" offered
