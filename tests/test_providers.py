"""The remote models (OpenAI's and Anthropic's wire formats) in the installed butler, against real
HTTP servers on 127.0.0.1 speaking each: streaming, parallel calls, usage, errors, park → resume.
See tests/test_provider_http.py for what the SDKs' HTTP side did and is kept."""

from __future__ import annotations

import json

import pytest
from conftest import json_lines, tool_results
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream, split

KEY = "sk-test-DO-NOT-LEAK-1234567890"


PROVIDERS = {
    "openai": ("openai:gpt-test", "/v1", "OPENAI_API_KEY", openai_stream),
    "anthropic": ("anthropic:claude-test", "", "ANTHROPIC_API_KEY", anthropic_stream),
}


def run_args(kind: str, fake: FakeLLM) -> tuple[list[str], dict[str, str]]:
    model, suffix, env, _ = PROVIDERS[kind]
    return ["--model", model, "--base-url", fake.url + suffix], {env: KEY}


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_streamed_parallel_calls_then_an_answer(kind, fake, butler, workdir) -> None:
    stream = PROVIDERS[kind][3]
    (workdir / "notes.txt").write_text("buy oat milk")
    fake.replies = [
        Reply(
            events=stream(
                "Let me look.",
                [("c1", "read_file", split({"path": "notes.txt"})), ("c2", "now", ["{}"])],
            )
        ),
        Reply(events=stream("You need oat milk.")),
    ]
    args, env = run_args(kind, fake)
    r = butler("run", *args, "what do I need?", "--json", env=env)
    assert r.returncode == 0, r.stderr
    [rep] = json_lines(r.stdout)
    assert rep["text"] == "You need oat milk." and rep["rounds"] == 1
    assert rep["usage"][0]["input_tokens"] > 0 and rep["usage"][0]["output_tokens"] > 0
    res = tool_results(r.stdout)
    assert res[0]["content"] == "buy oat milk" and not res[1]["is_error"]
    first, second = (x["body"] for x in fake.requests)
    tools = {t.get("name") or t["function"]["name"] for t in first["tools"]}
    assert {"read_file", "write_file", "remember", "now"} <= tools
    if kind == "openai":
        assert first["messages"][0]["role"] == "system" and first["messages"][0][
            "content"
        ].startswith("<!-- butler:memory")
        assert first["tools"][0]["function"]["parameters"]["type"] == "object"
        assert [m["role"] for m in second["messages"]][-2:] == ["tool", "tool"]
        assert second["messages"][-2] == {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "buy oat milk",
        }
        assert fake.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    else:
        assert (
            first["system"][0]["text"].startswith("<!-- butler:memory")
            and "input_schema" in first["tools"][0]
        )
        assert second["messages"][-1]["content"][0] == {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": "buy oat milk",
            "is_error": False,
        }
        sent = fake.requests[0]["headers"]
        assert sent.get("x-api-key") == KEY or sent.get("authorization") == f"Bearer {KEY}"


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_park_and_resume_across_processes(kind, fake, butler, workdir, butler_home) -> None:
    stream = PROVIDERS[kind][3]
    fake.replies = [
        Reply(
            events=stream(
                "", [("w1", "write_file", split({"path": "out.txt", "content": "hello"}))]
            )
        )
    ]
    args, env = run_args(kind, fake)
    r = butler("run", *args, "write it", env=env)
    assert r.returncode == 3, r.stderr
    [park] = json.loads(butler("pending", "--json").stdout)
    shown = json.loads(butler("show", park["id"], "--json").stdout)
    assert shown["context"]["model"] == PROVIDERS[kind][0]
    assert shown["context"]["base_url"] == fake.url + PROVIDERS[kind][1]
    fake.replies = [Reply(events=stream("Done: out.txt is written."))]
    r = butler("resume", park["id"], "--approve", "--json", env=env)  # a new process, same server
    assert r.returncode == 0, r.stderr
    assert json_lines(r.stdout)[0]["text"] == "Done: out.txt is written."
    assert (workdir / "out.txt").read_text() == "hello"
    last = fake.requests[-1]["body"]
    assert "wrote 5 bytes" in json.dumps(last["messages"][-1])
    for path in butler_home.rglob("*"):  # the key reaches no file the butler writes
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_bad_argument_json_is_an_error_result_and_the_loop_goes_on(kind, fake, butler) -> None:
    stream = PROVIDERS[kind][3]
    fake.replies = [
        Reply(events=stream("", [("b1", "read_file", ['{"path": "x', "!!"])])),
        Reply(events=stream("sorry")),
    ]
    args, env = run_args(kind, fake)
    r = butler("run", *args, "go", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert "bad JSON in the arguments" in tool_results(r.stdout)[0]["content"]


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_a_call_whose_id_is_not_text_is_a_provider_failure(kind, fake, butler, workdir) -> None:
    """Checked where the call arrives (the loop's blocks are plain dataclasses and check
    nothing themselves): one line, exit 1, nothing run, no second request."""
    stream = PROVIDERS[kind][3]
    args_json = split({"path": "x.txt", "content": "hi"})
    fake.replies = [
        Reply(events=stream("", [(7, "write_file", args_json)])),  # type: ignore[list-item]
        Reply(events=stream("should not be asked")),
    ]
    args, env = run_args(kind, fake)
    r = butler("run", *args, "go", "--yes-safe", env=env)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "'id' must be text" in r.stderr and "Traceback" not in r.stderr
    assert len(fake.requests) == 1 and not (workdir / "x.txt").exists()


def test_a_key_file_the_user_points_to(fake, butler, tmp_path) -> None:
    key_file = tmp_path / "anthropic.key"
    key_file.write_text(KEY + "\n")
    butler("config", "set", "providers.anthropic.api_key_file", str(key_file))
    fake.replies = [Reply(events=anthropic_stream("keyed"))]
    args, _ = run_args("anthropic", fake)
    r = butler("run", *args, "hi", env={"ANTHROPIC_API_KEY": ""})
    assert r.returncode == 0 and "keyed" in r.stdout, r.stderr
    sent = fake.requests[0]["headers"]
    assert KEY in (sent.get("x-api-key", "") + sent.get("authorization", ""))


def test_missing_key_is_a_usage_error_before_anything_runs(fake, butler) -> None:
    args, _ = run_args("anthropic", fake)
    r = butler("run", *args, "hi", env={"ANTHROPIC_API_KEY": ""})
    assert r.returncode == 2 and "ANTHROPIC_API_KEY" in r.stderr
    assert fake.requests == []


@pytest.mark.parametrize(
    "status,needle",
    [
        (401, "refused the API key (401); check OPENAI_API_KEY"),
        (404, "has no model 'gpt-test'"),
        (500, "openai failed (500)"),
    ],
)
def test_error_statuses_are_one_line(status, needle, fake, butler) -> None:
    fake.replies = [Reply(status, body={"error": {"message": "nope", "type": "x"}})]
    args, env = run_args("openai", fake)
    r = butler("run", *args, "hi", env=env)
    assert r.returncode == 1
    assert needle in r.stderr and "Traceback" not in r.stderr and KEY not in r.stderr


def test_context_too_long(fake, butler) -> None:
    fake.replies = [
        Reply(
            400,
            body={
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 300000 tokens > 200000 maximum",
                },
            },
        )
    ]
    args, env = run_args("anthropic", fake)
    r = butler("run", *args, "hi", env=env)
    assert r.returncode == 1 and "too long for 'claude-test'" in r.stderr


def test_rate_limited_then_success_says_so(fake, butler) -> None:
    fake.replies = [
        Reply(429, body={"error": {"message": "slow down"}}, headers={"retry-after": "0.1"}),
        Reply(events=openai_stream("made it")),
    ]
    args, env = run_args("openai", fake)
    r = butler("run", *args, "hi", env=env)
    assert r.returncode == 0, r.stderr
    assert "made it" in r.stdout and "rate limited the request; retrying in 0.1 s" in r.stderr
    assert len(fake.requests) == 2


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_a_dropped_stream_is_not_retried(kind, fake, butler) -> None:
    stream = PROVIDERS[kind][3]
    fake.replies = [
        Reply(events=stream("a long answer that never ends"), drop_after=3),
        Reply(events=stream("should not be asked")),
    ]
    args, env = run_args(kind, fake)
    r = butler("run", *args, "hi", env=env)
    assert r.returncode == 1, r.stdout
    assert len(fake.requests) == 1
    assert "Traceback" not in r.stderr


def test_unreachable_server_is_named(butler) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    r = butler("run", "--model", "openai-compatible:local", "--base-url", url, "hi")
    assert r.returncode == 1 and f"cannot reach {url}" in r.stderr


def test_ollama_needs_no_key_and_compatible_needs_a_url(butler) -> None:
    r = butler("run", "--model", "openai-compatible:x", "hi")
    assert r.returncode == 2 and "--base-url" in r.stderr


def test_config_file_precedence_and_errors(fake, butler, butler_home) -> None:
    fake.replies = [Reply(events=openai_stream("from the config"))]
    assert butler("config", "set", "model", "openai-compatible:local").returncode == 0
    assert (
        butler("config", "set", "providers.openai-compatible.base_url", fake.url + "/v1").returncode
        == 0
    )
    assert (
        butler(
            "config", "set", "providers.openai-compatible.api_key_env", "MY_LOCAL_KEY"
        ).returncode
        == 0
    )
    r = butler("run", "hi", env={"MY_LOCAL_KEY": KEY})
    assert r.returncode == 0 and "from the config" in r.stdout, r.stderr
    assert fake.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    shown = butler("config", "show", env={"MY_LOCAL_KEY": KEY})
    assert "MY_LOCAL_KEY: ****" in shown.stdout and KEY not in shown.stdout
    assert KEY not in (butler_home / "config.toml").read_text()
    # the environment beats the file, a flag beats both
    r = butler("run", "hi", env={"BUTLER_MODEL": "nope:x"})
    assert r.returncode == 2 and "unknown model 'nope:x'" in r.stderr
    assert butler("config", "path").stdout.strip() == str(butler_home / "config.toml")
    (butler_home / "config.toml").write_text('model = "a"\nmax_rounds = = 3\n')
    before = (butler_home / "config.toml").read_bytes()
    for args in (["run", "hi"], ["config", "set", "model", "x"], ["config", "show"]):
        r = butler(*args)
        assert r.returncode == 2 and "config.toml" in r.stderr and "line" in r.stderr, args
    assert (butler_home / "config.toml").read_bytes() == before


def test_no_http_client_is_imported_for_quick_commands(butler_home) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from butler_cli.cli.main import app\n"
        "for args in (['pending'], ['policy', 'list'], ['memory', 'list'], ['--help']):\n"
        "    try:\n        app(args)\n    except SystemExit:\n        pass\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'httpx2', 'urllib.request') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"BUTLER_HOME": str(butler_home), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr


def test_chat_streams_the_answer_and_shows_usage(fake, butler_home, workdir) -> None:
    from conftest import spawn_butler

    fake.replies = [Reply(events=openai_stream("Here is a **streamed** answer."))]
    args, env = run_args("openai", fake)
    child = spawn_butler(["chat", *args], butler_home, workdir, **env)
    child.expect("you ›")
    child.sendline("hi")
    child.expect(r"Here is a \S*streamed\S* answer")  # bold is kept even with NO_COLOR
    child.expect(r"1 model call\(s\) · 11 tokens in \(3 cached\) · 7 out")
    child.expect("you ›")
    after = child.before
    assert "answer" not in after  # rendered once while it streamed, not again at the end
    child.sendcontrol("d")
    child.expect("Goodbye")
