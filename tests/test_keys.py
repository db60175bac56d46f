"""Keys stay where they belong: scrubbed child environments, masking of every secret value
in what is printed or stored, and provider keys sent only to the server they are for."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import call, json_lines, tool_results
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream

CANARY = "sk-test-LEAKCANARY-123"
ENV_SERVER = Path(__file__).parent / "mcp_env_server.py"
ASK_FOR_WRITES = (
    "from butler_cli import allow, approve\n\n"
    "def classify(name, args):\n"
    "    return approve('a person looks at files') if name == 'write_file' else allow()\n"
)


def files_holding(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    hits = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if needle.encode() in path.read_bytes():
                hits.append(path)
    return hits


def test_a_canary_key_never_reaches_the_home_or_the_screen(
    butler, script, butler_home, tmp_path, fake
) -> None:
    """printenv through run_command, /proc, an MCP server's environment, a park and its
    resume, and a provider error that echoes the key: the canary appears nowhere."""
    butler_home.mkdir()
    (butler_home / "config.toml").write_text(
        "[mcp.envdump]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(ENV_SERVER))}]\n"
        'env = { PASSED_ON_PURPOSE = "yes" }\n'
        "\n[smtp]\n"
        'password_env = "MAIL_PASS"\n'
    )
    policy = tmp_path / "ask_for_writes.py"
    policy.write_text(ASK_FOR_WRITES)
    env = {
        "OPENAI_API_KEY": CANARY,
        "ANTHROPIC_API_KEY": CANARY,
        "MAIL_PASS": CANARY + "-mail",
        "SOME_SERVICE_TOKEN": CANARY + "-token",
    }
    model = script(
        {
            "tool_calls": [
                call("run_command", "a", argv=["printenv", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"]),
                call("run_command", "b", argv=["sh", "-c", "env; cat /proc/*/environ"]),
                call("envdump__environment", "c"),
            ]
        },
        {"tool_calls": [call("write_file", "d", path="note.txt", content="hello")]},
        {"tool_calls": [call("run_command", "e", argv=["printenv"])]},
        {"text": "done"},
    )
    flags = ["--model", model, "--policy", f"{policy}:classify", "--yes-safe", "--json"]
    first = butler("run", *flags, "go", env=env)
    assert first.returncode == 3, first.stderr
    results = [r["content"] for r in tool_results(first.stdout)]
    assert "PASSED_ON_PURPOSE=yes" in results[2]  # what the config passes does arrive
    park_id = json_lines(first.stdout)[0]["park_id"]
    second = butler("resume", park_id, "--approve", "--yes-safe", "--json", env=env)
    assert second.returncode == 0, second.stderr
    # a provider that echoes the key back in its error
    fake.replies = [Reply(500, body={"error": {"message": f"bad header: Bearer {CANARY}"}})]
    third = butler(
        "run", "--model", "openai:gpt-test", "--base-url", fake.url + "/v1", "hi", env=env
    )
    assert third.returncode == 1 and "openai failed (500)" in third.stderr
    for done in (first, second, third):
        assert CANARY not in done.stdout + done.stderr
    assert files_holding(butler_home, CANARY) == []


def test_openai_compatible_and_ollama_send_no_openai_key(butler, fake) -> None:
    fake.replies = [Reply(events=openai_stream("hi")), Reply(events=openai_stream("hi"))]
    env = {"OPENAI_API_KEY": CANARY}
    for model in ("openai-compatible:local", "ollama:llama3"):
        r = butler("run", "--model", model, "--base-url", fake.url + "/v1", "hi", env=env)
        assert r.returncode == 0, r.stderr
    sent = [req["headers"].get("authorization", "") for req in fake.requests]
    assert len(sent) == 2 and all(CANARY not in header for header in sent)


def test_a_configured_key_goes_only_to_its_configured_server(butler, fake) -> None:
    other = FakeLLM()
    try:
        other.replies = [Reply(events=openai_stream("elsewhere"))]
        butler("config", "set", "providers.openai-compatible.base_url", fake.url + "/v1")
        butler("config", "set", "providers.openai-compatible.api_key_env", "MY_LOCAL_KEY")
        env = {"MY_LOCAL_KEY": CANARY}
        r = butler(
            "run", "--model", "openai-compatible:x", "--base-url", other.url + "/v1", "hi", env=env
        )
        assert r.returncode == 0, r.stderr
        assert CANARY not in other.requests[0]["headers"].get("authorization", "")
    finally:
        other.close()


@pytest.mark.parametrize(
    "model,path,env_name",
    [
        ("anthropic:claude-test", "/v1/messages", "ANTHROPIC_API_KEY"),
        ("openai:gpt-test", "/v1/chat/completions", "OPENAI_API_KEY"),
    ],
)
def test_a_redirect_never_carries_the_key_to_another_server(
    model, path, env_name, butler, fake
) -> None:
    other = FakeLLM()
    try:
        stream = anthropic_stream if model.startswith("anthropic") else openai_stream
        other.replies = [Reply(events=stream("stolen"))]
        fake.replies = [Reply(307, body={"moved": True}, headers={"location": other.url + path})]
        suffix = "" if model.startswith("anthropic") else "/v1"
        r = butler(
            "run", "--model", model, "--base-url", fake.url + suffix, "hi", env={env_name: CANARY}
        )
        assert other.requests == []
        assert r.returncode == 1 and "redirect" in r.stderr and CANARY not in r.stderr
    finally:
        other.close()
