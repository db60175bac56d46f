"""`butler models`, [aliases], model options (-o) recorded for a resume, and the Anthropic
request as the SDK sends it: no 4096-token cut, a visible line when a reply hits the limit,
cache breakpoints after the tools, the memory block and the system prompt, cache usage."""

from __future__ import annotations

import json

import pytest
from conftest import call, json_lines
from fake_llm import Reply, anthropic_stream, openai_stream, split

KEY = "sk-test-models-0123456789"
ANTHROPIC = {"ANTHROPIC_API_KEY": KEY}
OPEN = "<!-- butler:memory -->"
CLOSE = "<!-- /butler:memory -->"


def with_cache_usage(frames: list[str], read: int, write: int) -> list[str]:
    """The first frame (message_start) reporting cache reads and writes."""
    head = frames[0].split("data: ", 1)
    data = json.loads(head[1])
    data["message"]["usage"].update(cache_read_input_tokens=read, cache_creation_input_tokens=write)
    return [f"{head[0]}data: {json.dumps(data)}\n\n", *frames[1:]]


def test_the_anthropic_request_body_caches_tools_memory_and_system(fake, butler) -> None:
    fake.replies = [Reply(events=with_cache_usage(anthropic_stream("hello"), 1500, 300))]
    flags = ["--model", "anthropic:claude-sonnet-4-5", "--base-url", fake.url]
    r = butler("run", *flags, "--system", "Be brief.", "hi", "--json", env=ANTHROPIC)
    assert r.returncode == 0, r.stderr
    body = fake.requests[0]["body"]
    assert set(body) == {"model", "max_tokens", "messages", "system", "tools", "stream"}
    assert body["model"] == "claude-sonnet-4-5" and body["stream"] is True
    assert body["max_tokens"] == 64000  # the model's own limit, not 4096
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    memory, persona = body["system"]
    assert memory["type"] == "text" and memory["cache_control"] == {"type": "ephemeral"}
    assert memory["text"].startswith(OPEN) and memory["text"].endswith(CLOSE)
    assert persona == {
        "type": "text",
        "text": "\n\nBe brief.",
        "cache_control": {"type": "ephemeral"},
    }
    *rest, last = body["tools"]
    assert last["cache_control"] == {"type": "ephemeral"}
    assert all(set(t) == {"name", "description", "input_schema"} for t in rest)
    usage = json_lines(r.stdout)[0]["usage"][0]
    assert usage["cache_read_tokens"] == 1500 and usage["cache_write_tokens"] == 300
    # the whole body, exactly: the same task through Chat Completions gives the same system
    # text and tools, which the Anthropic body must carry with its three breakpoints
    fake.replies = [Reply(events=openai_stream("hello"))]
    flags = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1", "--system", "Be brief."]
    assert butler("run", *flags, "hi", env={"OPENAI_API_KEY": KEY}).returncode == 0
    other = fake.requests[1]["body"]
    system_text = other["messages"][0]["content"]
    cut = system_text.index(CLOSE) + len(CLOSE)
    cache = {"type": "ephemeral"}
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in other["tools"]
    ]
    tools[-1]["cache_control"] = cache
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64000,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "system": [
            {"type": "text", "text": system_text[:cut], "cache_control": cache},
            {"type": "text", "text": system_text[cut:], "cache_control": cache},
        ],
        "tools": tools,
    }


def test_a_reply_cut_at_max_tokens_says_so(fake, butler) -> None:
    fake.replies = [
        Reply(events=anthropic_stream("The first half of a long", stop="max_tokens")),
        Reply(events=anthropic_stream("Short again", stop="max_tokens")),
    ]
    flags = ["--model", "anthropic:claude-test", "--base-url", fake.url]
    r = butler("run", *flags, "-o", "max_tokens", "5", "write a lot", "--json", env=ANTHROPIC)
    assert r.returncode == 0, r.stderr
    assert fake.requests[0]["body"]["max_tokens"] == 5
    [rep] = json_lines(r.stdout)
    assert rep["stop_reason"] == "max_tokens"
    assert rep["text"].startswith("The first half of a long")
    assert rep["text"].endswith(
        "[butler: the reply stopped at the model's length limit (max_tokens)]"
    )
    text = butler("run", *flags, "write a lot", env=ANTHROPIC)
    assert "stopped at the model's length limit" in text.stdout


def test_model_options_are_checked_sent_and_kept_for_the_resume(fake, butler, workdir) -> None:
    fake.replies = [
        Reply(
            events=openai_stream(
                "", [("w1", "write_file", split({"path": "o.txt", "content": "x"}))]
            )
        )
    ]
    flags = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    env = {"OPENAI_API_KEY": KEY}
    # both spellings: -o KEY VALUE and -o KEY=VALUE
    r = butler("run", *flags, "-o", "temperature", "0.25", "-o", "max_tokens=300", "go", env=env)
    assert r.returncode == 3, r.stderr
    first = fake.requests[0]["body"]
    assert first["temperature"] == 0.25 and first["max_completion_tokens"] == 300
    [park] = json.loads(butler("pending", "--json").stdout)
    shown = json.loads(butler("show", park["id"], "--json").stdout)
    assert shown["context"]["model_options"] == {"temperature": 0.25, "max_tokens": 300}
    fake.replies = [Reply(events=openai_stream("done"))]
    resumed = butler("resume", park["id"], "--approve", env=env)
    assert resumed.returncode == 0, resumed.stderr
    again = fake.requests[-1]["body"]
    assert again["temperature"] == 0.25 and again["max_completion_tokens"] == 300


@pytest.mark.parametrize(
    "option,needle",
    [
        ("temperature=hot", "must be a number"),
        ("temperature=9", "between 0 and 2"),
        ("temperature=nan", "between 0 and 2"),
        ("max_tokens=1.5", "whole number"),
        ("colour=blue", "unknown model option 'colour'"),
        ("top_k=5", "openai does not take the model option 'top_k'"),
        ("temperature hot", "must be a number"),
        ("top_k 5", "openai does not take the model option 'top_k'"),
    ],
)
def test_bad_model_options_are_usage_errors_before_anything_runs(option, needle, fake, butler):
    flags = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    r = butler("run", *flags, "-o", *option.split(" "), "hi", env={"OPENAI_API_KEY": KEY})
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert fake.requests == []


def test_aliases_resolve_and_models_lists_them(butler, script, butler_home) -> None:
    model = script({"tool_calls": [call("write_file", "w", path="a.txt", content="1")]})
    assert butler("config", "set", "aliases.quick", model).returncode == 0
    listed = butler("models")
    assert listed.returncode == 0 and f"quick = {model}" in listed.stdout
    for provider in ("scripted:", "openai:", "anthropic:", "ollama:", "openai-compatible:"):
        assert provider in listed.stdout
    data = json.loads(butler("models", "--json").stdout)
    assert data["aliases"] == {"quick": model}
    r = butler("run", "--model", "quick", "go")
    assert r.returncode == 3, r.stderr
    [park] = json.loads(butler("pending", "--json").stdout)
    shown = json.loads(butler("show", park["id"], "--json").stdout)
    assert shown["context"]["model"] == model  # the spec, so a changed alias cannot redirect it
    bad = butler("config", "set", "aliases.broken", "no-colon")
    assert bad.returncode == 2 and "aliases" in bad.stderr


def test_the_chat_takes_model_options_too(fake, butler_home, workdir) -> None:
    from conftest import spawn_butler

    fake.replies = [Reply(events=openai_stream("warm answer"))]
    flags = [
        "--model",
        "openai:gpt-test",
        "--base-url",
        fake.url + "/v1",
        "-o",
        "temperature",
        "1.5",
    ]
    child = spawn_butler(["chat", *flags], butler_home, workdir, OPENAI_API_KEY=KEY)
    child.expect("you ›")
    child.sendline("hi")
    child.expect("warm answer")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect("Goodbye")
    assert fake.requests[0]["body"]["temperature"] == 1.5


def test_a_lone_option_word_is_a_usage_error_and_runs_nothing(fake, butler) -> None:
    flags = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    r = butler("run", *flags, "hi", "-o", "temperature", env={"OPENAI_API_KEY": KEY})
    assert r.returncode == 2 and "-o takes KEY VALUE" in r.stderr
    assert fake.requests == []


def test_models_lists_what_a_provider_offers_cached_briefly(fake, butler, butler_home) -> None:
    """`butler models openai` asks the server's /models (through the SDK, with the key), shows
    each as the spec --model takes, marks the aliases, and asks again only after 10 minutes
    or with --refresh; the cache holds ids, never the key."""
    fake.models = ["gpt-test", "gpt-test-mini", "o-test"]
    assert butler("config", "set", "aliases.fast", "openai:gpt-test-mini").returncode == 0
    flags = ["--base-url", fake.url + "/v1"]
    env = {"OPENAI_API_KEY": KEY}
    r = butler("models", "openai", *flags, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "openai:gpt-test",
        "openai:gpt-test-mini   (alias: fast)",
        "openai:o-test",
    ]
    [asked] = fake.requests
    assert asked["path"] == "/v1/models" and asked["headers"]["authorization"] == f"Bearer {KEY}"
    again = butler("models", "openai", *flags, "--json", env=env)
    listed = json.loads(again.stdout)
    assert listed["models"] == ["openai:gpt-test", "openai:gpt-test-mini", "openai:o-test"]
    assert listed["cached_s"] is not None and listed["aliases"] == {"fast": "openai:gpt-test-mini"}
    assert len(fake.requests) == 1  # from the cache
    cache = butler_home / "models-cache.json"
    assert KEY not in cache.read_text() and oct(cache.stat().st_mode & 0o777) == "0o600"
    assert butler("models", "openai", *flags, "--refresh", env=env).returncode == 0
    assert len(fake.requests) == 2
    fake.requests.clear()
    r = butler("models", "anthropic", "--base-url", fake.url, env=ANTHROPIC)
    assert r.returncode == 0 and "anthropic:o-test" in r.stdout, r.stderr
    missing = butler("models", "openai", "--base-url", fake.url + "/v1", "--refresh")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert butler("models", "scripted").returncode == 2


def test_models_shows_each_providers_options_as_the_readme_says(butler) -> None:
    shown = butler("models").stdout
    assert "options: max_tokens, temperature, top_k, top_p" in shown  # anthropic
    assert "options: max_tokens, seed, temperature, top_p" in shown  # the Chat Completions ones
    assert "butler models PROVIDER" in shown
