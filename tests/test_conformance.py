"""The OpenAI-compatible wire as the servers people run send it: each capture in
tests/captures/ (recorded from a real llama.cpp server, or written from what Ollama, vLLM and
LM Studio are documented to send) is replayed by a real HTTP server on 127.0.0.1 to the
installed butler, which must do the right thing with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import json_lines, spawn_butler, tool_results
from fake_llm import FakeLLM, Reply, openai_stream, replay


def local(fake: FakeLLM, provider: str = "openai-compatible") -> list[str]:
    return ["--model", f"{provider}:local", "--base-url", fake.url + "/v1"]


def calls_sent(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for m in body["messages"] for c in m.get("tool_calls") or []]


def read_notes(capture: str, fake: FakeLLM, butler: Any, workdir: Path, provider: str) -> Any:
    """Replay ``capture`` (calls that read notes.txt), then a plain answer; the run must
    end done, with the file's text as the first result."""
    (workdir / "notes.txt").write_text("buy oat milk")
    fake.replies = [replay(capture), Reply(events=openai_stream("ok"))]
    r = butler("run", *local(fake, provider), "what do I need?", "--json")
    assert r.returncode == 0, r.stderr
    assert tool_results(r.stdout)[0]["content"] == "buy oat milk"
    return r


# -- Ollama -----------------------------------------------------------------------------------
def test_ollama_parallel_calls_all_at_index_0_are_two_calls(fake, butler, workdir) -> None:
    r = read_notes("ollama/parallel-calls-all-index-0.sse", fake, butler, workdir, "ollama")
    assert [x["is_error"] for x in tool_results(r.stdout)] == [False, False]
    sent = calls_sent(fake.requests[1]["body"])
    assert [c["function"]["name"] for c in sent] == ["read_file", "now"]
    assert [c["id"] for c in sent] == ["call_k1v0bq3z", "call_9x2mfw7a"]


def test_ollama_call_without_index_ending_with_stop_still_runs(fake, butler, workdir) -> None:
    r = read_notes("ollama/no-index-finish-stop.sse", fake, butler, workdir, "ollama")
    [rep] = json_lines(r.stdout)
    assert rep["text"] == "ok" and rep["rounds"] == 1
    assert rep["usage"][0]["input_tokens"] is None  # not reported: unknown, never 0


# -- vLLM -------------------------------------------------------------------------------------
def test_vllm_call_ending_with_stop_parks_under_its_name(fake, butler, workdir) -> None:
    fake.replies = [replay("vllm/named-call-finish-stop.sse")]
    r = butler("run", *local(fake), "write it", "--json")
    assert r.returncode == 3, (r.stdout, r.stderr)
    [park] = json.loads(butler("pending", "--json").stdout)
    shown = json.loads(butler("show", park["id"], "--json").stdout)
    assert shown["approval"]["tool"] == "write_file", shown
    assert not (workdir / "out.txt").exists()
    assert json_lines(r.stdout)[0]["usage"][0]["input_tokens"] == 812


def test_vllm_error_inside_a_200_stream_fails_the_task(fake, butler) -> None:
    fake.replies = [replay("vllm/error-inside-200-stream.sse")]
    r = butler("run", *local(fake), "hi")
    assert r.returncode == 1, r.stdout
    assert "Error in tool parser: unexpected end of tool call" in r.stderr
    assert "Traceback" not in r.stderr and len(fake.requests) == 1


# -- LM Studio --------------------------------------------------------------------------------
def test_lmstudio_empty_id_gets_one_and_pieces_join(fake, butler, workdir) -> None:
    read_notes("lmstudio/empty-id-args-in-pieces.sse", fake, butler, workdir, "openai-compatible")
    [sent] = calls_sent(fake.requests[1]["body"])
    assert sent["id"] and fake.requests[1]["body"]["messages"][-1]["tool_call_id"] == sent["id"]


def test_lmstudio_context_overflow_in_a_200_stream_says_so(fake, butler) -> None:
    fake.replies = [replay("lmstudio/context-overflow-error-in-200.sse")]
    r = butler("run", *local(fake), "hi")
    assert r.returncode == 1, r.stdout
    assert "the conversation is too long for 'local'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


# -- what any server may do -------------------------------------------------------------------
@pytest.mark.parametrize("drop", [None, 1])  # 1: the connection drops mid-body
def test_a_stream_cut_mid_answer_is_a_failure_not_an_answer(drop, fake, butler) -> None:
    """Text came, then the stream ended with no finish reason and no [DONE]: a failure, never
    a short answer, and not asked again (the text was already shown). A stream with nothing
    of an answer in it is asked again whole: tests/test_silent_answers.py."""
    cut = replay("generic/text-cut-without-finish-or-done.sse")
    cut.drop_after = drop
    fake.replies = [cut, Reply(events=openai_stream("not asked"))]
    r = butler("run", *local(fake), "hi", "--json")
    assert r.returncode == 1, r.stdout
    [rep] = json_lines(r.stdout)
    assert rep["status"] == "failed"
    assert "the server ended the stream before the answer was complete" in rep["error"]
    assert len(fake.requests) == 1  # never retried


def test_a_call_with_no_finish_reason_but_done_stands(fake, butler, workdir) -> None:
    capture = "generic/call-without-finish-then-done.sse"
    read_notes(capture, fake, butler, workdir, "openai-compatible")


def test_anthropic_stream_cut_before_message_stop_is_a_failure(fake, butler) -> None:
    fake.replies = [replay("anthropic/cut-before-message-stop.sse")]
    flags = ["--model", "anthropic:claude-test", "--base-url", fake.url]
    r = butler("run", *flags, "hi", env={"ANTHROPIC_API_KEY": "sk-test-conformance"})
    assert r.returncode == 1, r.stdout
    assert "the server ended the stream before the answer was complete" in r.stderr


def test_anthropic_tool_input_whole_in_block_start_is_used(fake, butler, workdir) -> None:
    from fake_llm import anthropic_stream

    (workdir / "notes.txt").write_text("buy oat milk")
    fake.replies = [
        replay("anthropic/tool-input-whole-in-block-start.sse"),
        Reply(events=anthropic_stream("ok")),
    ]
    flags = ["--model", "anthropic:claude-test", "--base-url", fake.url, "--json"]
    r = butler("run", *flags, "notes?", env={"ANTHROPIC_API_KEY": "sk-test-conformance"})
    assert r.returncode == 0, r.stderr
    assert tool_results(r.stdout)[0]["content"] == "buy oat milk"


# -- what the butler sends --------------------------------------------------------------------
def test_local_servers_get_an_output_limit_unless_one_is_given(fake, butler) -> None:
    fake.replies = [Reply(events=openai_stream("a")) for _ in range(4)]
    assert butler("run", *local(fake), "hi").returncode == 0
    assert butler("run", *local(fake, "ollama"), "hi").returncode == 0
    assert butler("run", *local(fake), "-o", "max_tokens", "77", "hi").returncode == 0
    openai = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    assert butler("run", *openai, "hi", env={"OPENAI_API_KEY": "sk-x"}).returncode == 0
    limits = [r["body"].get("max_tokens") for r in fake.requests]
    assert limits == [4096, 4096, 77, None]
    assert "max_completion_tokens" not in fake.requests[3]["body"]


def test_usage_not_reported_is_unknown_in_the_chat_and_cost(fake, butler_home, workdir) -> None:
    frames = [f for f in openai_stream("a short answer") if '"usage"' not in f]
    fake.replies = [Reply(events=frames)]
    child = spawn_butler(["chat", *local(fake)], butler_home, workdir)
    child.expect("you ›")
    child.sendline("hi")
    child.expect("a short answer")
    child.expect(r"tokens unknown \(the server did not report usage\)")
    child.expect("you ›")
    child.sendline("/cost")
    child.expect(r"openai-compatible:local: tokens unknown")
    child.expect("you ›")
    assert "No tokens spent yet" not in child.before
    child.sendcontrol("d")
    child.expect("Goodbye")


def test_the_chat_says_when_a_reply_stopped_at_the_length_limit(fake, butler_home, workdir) -> None:
    fake.replies = [Reply(events=openai_stream("The first half of a long", finish="length"))]
    child = spawn_butler(["chat", *local(fake)], butler_home, workdir)
    child.expect("you ›")
    child.sendline("write a lot")
    child.expect("The first half of a long")
    child.expect(r"\[butler: the reply stopped at the model's length limit \(max_tokens\)\]")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect("Goodbye")


# -- llama.cpp (recorded from the real server: bench/record_llamacpp.py) ----------------------
def llamacpp(body: dict[str, Any]) -> Reply:
    """The recorded server's answer to what it is sent: HTTP 500 to an assistant turn whose
    content is null, its plain answer otherwise (a task's first request: the forced call)."""
    messages = body["messages"]
    if not any(m["role"] == "tool" for m in messages):
        return replay("llamacpp/forced-tool-call.http")
    if any(m["role"] == "assistant" and m.get("content") is None for m in messages):
        return replay("llamacpp/after-tool-call-content-null.http")
    return replay("llamacpp/after-tool-call.http")


def test_llamacpp_forced_call_parks_then_the_approved_round_completes(
    fake, butler, workdir
) -> None:
    fake.respond = llamacpp
    r = butler("run", *local(fake), "write the letter a to the file a", "--json")
    assert r.returncode == 3, (r.stdout, r.stderr)
    [rep] = json_lines(r.stdout)
    assert rep["approval"]["tool"] == "write_file"  # its real name, not write_filewrite_file…
    assert rep["usage"][0]["input_tokens"] is None  # the server reports no usage
    [park] = json.loads(butler("pending", "--json").stdout)
    resumed = butler("resume", park["id"], "--approve", "--json")
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert json_lines(resumed.stdout)[0]["text"] == "OK"
    assert (workdir / "a").read_text() == "a"
    last = fake.requests[-1]["body"]["messages"]
    turn = next(m for m in last if m.get("tool_calls"))
    assert turn["content"] == ""  # never null: the server answers that with HTTP 500
