"""`butler keys`: keys kept in the system keyring (or a 0600 file outside BUTLER_HOME), never
echoed, used when the variable is unset (the variable wins), masked like the environment's
keys, and never found in a park, the audit, a child's environment or any output."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path

import pexpect
import pytest
from conftest import call, json_lines, tool_results
from fake_llm import Reply, anthropic_stream
from test_keys import ASK_FOR_WRITES, ENV_SERVER, files_holding

CANARY = "sk-stored-CANARY-7f3a9c2e"
TESTS = Path(__file__).parent


def sent_key(request: dict) -> str:
    """The key a request carried (the SDK sends x-api-key or a bearer token)."""
    headers = request["headers"]
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


@pytest.fixture
def user_home(tmp_path: Path) -> dict[str, str]:
    """A temp HOME with its config dir inside it (an allowed root for tools, as the real
    one is): the keys file lands there, never in the real home."""
    home = tmp_path / "person"
    home.mkdir()
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def keyring_env(tmp_path: Path, backend: str) -> dict[str, str]:
    """No keyring backend (this machine, CI) or a working one (tests/fake_keyring.py)."""
    if backend == "file":
        return {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    return {
        "PYTHON_KEYRING_BACKEND": "fake_keyring.FileKeyring",
        "FAKE_KEYRING_FILE": str(tmp_path / "system-keyring.json"),
        "PYTHONPATH": str(TESTS),
    }


@pytest.mark.parametrize("backend", ["file", "keyring"])
def test_keys_set_list_remove_never_show_the_key(butler, butler_home, user_home, tmp_path, backend):
    env = {**user_home, **keyring_env(tmp_path, backend)}
    r = butler("keys", "set", "ANTHROPIC_API_KEY", input=CANARY + "\n", env=env)
    assert r.returncode == 0, r.stderr
    assert CANARY not in r.stdout + r.stderr
    keys_file = Path(user_home["XDG_CONFIG_HOME"]) / "butler" / "keys.toml"
    assert stat.S_IMODE(os.stat(keys_file).st_mode) == 0o600
    assert not str(keys_file).startswith(str(butler_home))
    if backend == "keyring":
        assert "system keyring" in r.stdout
        assert CANARY not in keys_file.read_text()  # only the name is kept beside it
        assert CANARY in (tmp_path / "system-keyring.json").read_text()
    else:
        assert str(keys_file) in r.stdout
    listed = butler("keys", "list", env=env)
    assert listed.stdout.split() == ["ANTHROPIC_API_KEY"] and CANARY not in listed.stdout
    shown = butler("config", "show", env={**env, "ANTHROPIC_API_KEY": ""})
    assert "ANTHROPIC_API_KEY: **** (stored)" in shown.stdout and CANARY not in shown.stdout
    models = butler("models", env={**env, "ANTHROPIC_API_KEY": ""})
    assert "ANTHROPIC_API_KEY (stored)" in models.stdout and CANARY not in models.stdout
    doctor = butler("doctor", env={**env, "ANTHROPIC_API_KEY": ""})
    assert "stored (`butler keys`): ANTHROPIC_API_KEY" in doctor.stdout
    assert "ANTHROPIC_API_KEY: set" in doctor.stdout and CANARY not in doctor.stdout
    assert str(keys_file) in doctor.stdout  # hidden from tools and commands
    assert butler("keys", "remove", "ANTHROPIC_API_KEY", env=env).returncode == 0
    assert butler("keys", "list", env=env).stdout.strip() == ""
    if backend == "keyring":
        assert CANARY not in (tmp_path / "system-keyring.json").read_text()
    gone = butler("keys", "remove", "ANTHROPIC_API_KEY", env=env)
    assert gone.returncode == 2 and "no stored key" in gone.stderr


def test_bad_names_and_empty_keys_are_usage_errors(butler, user_home) -> None:
    for name in ("../x", "A B", "1ABC", ""):
        r = butler("keys", "set", name, input="sk-whatever-123\n", env=user_home)
        assert r.returncode == 2 and "Traceback" not in r.stderr, name
    r = butler("keys", "set", "EMPTY", input="\n", env=user_home)
    assert r.returncode == 2 and "no key given" in r.stderr


@pytest.mark.parametrize("backend", ["file", "keyring"])
def test_a_stored_key_is_sent_and_the_environment_wins(butler, fake, user_home, tmp_path, backend):
    env = {**user_home, **keyring_env(tmp_path, backend)}
    assert butler("keys", "set", "ANTHROPIC_API_KEY", input=CANARY, env=env).returncode == 0
    fake.replies = [Reply(events=anthropic_stream("one")), Reply(events=anthropic_stream("two"))]
    flags = ["--model", "anthropic:claude-test", "--base-url", fake.url]
    first = butler("run", *flags, "hi", env={**env, "ANTHROPIC_API_KEY": ""})
    assert first.returncode == 0, first.stderr
    second = butler("run", *flags, "hi", env={**env, "ANTHROPIC_API_KEY": "sk-from-the-env-99"})
    assert second.returncode == 0, second.stderr
    sent = [sent_key(r) for r in fake.requests]
    assert sent == [CANARY, "sk-from-the-env-99"]


@pytest.mark.parametrize("backend", ["file", "keyring"])
def test_a_stored_canary_key_reaches_no_file_no_child_and_no_output(
    butler, script, butler_home, workdir, fake, user_home, tmp_path, backend
) -> None:
    """The stored key is used (anthropic) but never in the environment: printenv, env,
    /proc/*/environ, an MCP server's environment, reading the keys file with the file tools
    and with a program, a park and its resume, and a provider error that echoes the key."""
    env = {**user_home, **keyring_env(tmp_path, backend), "ANTHROPIC_API_KEY": ""}
    assert butler("keys", "set", "ANTHROPIC_API_KEY", input=CANARY, env=env).returncode == 0
    keys_file = Path(user_home["XDG_CONFIG_HOME"]) / "butler" / "keys.toml"
    butler_home.mkdir(exist_ok=True)
    (butler_home / "config.toml").write_text(
        "[mcp.envdump]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(ENV_SERVER))}]\n"
    )
    policy = tmp_path / "ask_for_writes.py"
    policy.write_text(ASK_FOR_WRITES)
    model = script(
        {
            "tool_calls": [
                call("run_command", "a", argv=["sh", "-c", "env; cat /proc/*/environ"]),
                call("run_command", "b", argv=["cat", str(keys_file)]),
                call("read_file", "c", path=str(keys_file)),
                call("envdump__environment", "d"),
            ]
        },
        {"tool_calls": [call("write_file", "e", path="note.txt", content="hello")]},
        {"tool_calls": [call("run_command", "f", argv=["printenv"])]},
        {"text": "done"},
    )
    flags = ["--model", model, "--policy", f"{policy}:classify", "--yes-safe", "--json"]
    first = butler("run", *flags, "go", env=env)
    assert first.returncode == 3, first.stderr
    results = [r["content"] for r in tool_results(first.stdout)]
    assert "ANTHROPIC_API_KEY" not in results[1]  # the program sees no keys file
    assert results[2].startswith("Refused") or "off limits" in results[2], results[2]
    park_id = json_lines(first.stdout)[0]["park_id"]
    second = butler("resume", park_id, "--approve", "--yes-safe", "--json", env=env)
    assert second.returncode == 0, second.stderr
    # the real provider with the stored key, and a server that echoes it back in an error
    fake.replies = [Reply(500, body={"error": {"message": f"bad key: {CANARY}"}})]
    third = butler("run", "--model", "anthropic:claude-test", "--base-url", fake.url, "hi", env=env)
    assert sent_key(fake.requests[0]) == CANARY  # it was used
    assert third.returncode == 1 and "anthropic failed (500)" in third.stderr
    for done in (first, second, third):
        assert CANARY not in done.stdout + done.stderr
    assert files_holding(butler_home, CANARY) == []
    assert files_holding(workdir, CANARY) == []


def test_a_locked_keyring_is_one_line_not_a_traceback(butler, fake, user_home, tmp_path) -> None:
    env = {**user_home, **keyring_env(tmp_path, "keyring"), "ANTHROPIC_API_KEY": ""}
    assert butler("keys", "set", "ANTHROPIC_API_KEY", input=CANARY, env=env).returncode == 0
    locked = {**env, "FAKE_KEYRING_LOCKED": "1"}
    assert butler("keys", "list", env=locked).stdout.split() == ["ANTHROPIC_API_KEY"]
    flags = ["--model", "anthropic:claude-test", "--base-url", fake.url]
    r = butler("run", *flags, "hi", env=locked)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "system keyring could not read ANTHROPIC_API_KEY" in r.stderr
    assert fake.requests == []


def test_a_key_typed_at_the_terminal_is_not_echoed(butler, butler_home, workdir, user_home):
    from conftest import spawn_butler

    child = spawn_butler(["keys", "set", "OPENAI_API_KEY"], butler_home, workdir, **user_home)
    child.logfile_read = transcript = io.StringIO()  # everything the terminal showed
    child.expect("not shown")
    child.sendline(CANARY)
    child.expect("OPENAI_API_KEY stored in")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "stored in" in transcript.getvalue() and CANARY not in transcript.getvalue()
    listed = butler("keys", "list", env=user_home)
    assert listed.stdout.split() == ["OPENAI_API_KEY"]


@pytest.mark.parametrize("backend", ["file", "keyring"])
def test_the_chat_masks_a_stored_key_from_its_first_turn(
    butler, butler_home, workdir, script, user_home, tmp_path, backend
) -> None:
    """The chat draws its first prompt before reading the stored keys (BENCHMARKS.md, "Chat
    start"); the first turn still runs with them masked: a file echoing the key is `****` in
    the tool result the chat shows and in everything it stores."""
    from conftest import spawn_butler

    env = {**user_home, **keyring_env(tmp_path, backend), "OPENAI_API_KEY": ""}
    assert butler("keys", "set", "OPENAI_API_KEY", input=CANARY, env=env).returncode == 0
    (workdir / "echo.txt").write_text(f"the key is {CANARY} (echoed)\n")
    model = script({"tool_calls": [call("read_file", path="echo.txt")]}, {"text": "read it"})
    child = spawn_butler([], butler_home, workdir, BUTLER_MODEL=model, **env)
    child.logfile_read = transcript = io.StringIO()  # everything the terminal showed
    child.expect("you ›")
    child.sendline("read echo.txt")
    child.expect("read it")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert CANARY not in transcript.getvalue()
    assert files_holding(butler_home, CANARY) == []
