"""Never a silent empty answer (issue 32): what llama-cpp-python and LiteLLM in front of it
really send (tests/captures/), replayed by a real HTTP server on 127.0.0.1 to the installed
butler — `run` (text, --json, stream-json) and the chat on a pty. An answer with no text and
no tool call is always said in one line; a stream with nothing in it is asked again whole;
one tool call split into many blocks (or deltas) sharing its id is one call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import json_lines, spawn_butler
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream, openai_whole, replay

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "output.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
ANTHROPIC_KEY = {"ANTHROPIC_API_KEY": "sk-test-silent-answers"}
ASKED_WHOLE = "streamed no answer, so it was asked again without streaming"
POSSIBLY_TOO_LONG = "the conversation is possibly too long for it"
EMPTY = "the model's answer was empty: no text and no tool call"
TOO_LONG = "the conversation is too long for 'local'"


def local(fake: FakeLLM, provider: str = "openai-compatible") -> list[str]:
    if provider == "anthropic":
        return ["--model", "anthropic:local", "--base-url", fake.url]
    return ["--model", f"{provider}:local", "--base-url", fake.url + "/v1"]


def env_for(provider: str) -> dict[str, str]:
    return ANTHROPIC_KEY if provider == "anthropic" else {}


def valid(stdout: str) -> list[dict[str, Any]]:
    """Every line: one event valid against the published schema."""
    events = json_lines(stdout)
    for event in events:
        errors = sorted(VALIDATOR.iter_errors(event), key=str)
        assert not errors, f"{event}: {errors[0].message}"
    return events


# -- what the servers send ----------------------------------------------------------------
def by_stream(streamed: str, whole: str) -> Any:
    """A server that answers a streamed request with the capture ``streamed`` and the same
    request sent whole with ``whole`` (both recorded)."""

    def respond(body: dict[str, Any]) -> Reply:
        return replay(streamed if body.get("stream") else whole)

    return respond


#: llama-cpp-python 0.3.36 asked with tools: streamed, the role and [DONE]; whole, its answer.
LLAMA_TOOLS = ("llamacpp/tools-stream-holds-nothing.http", "llamacpp/tools-whole-answer.http")
LLAMA_HAIKU = "In the evening, a cup of fine Japanese fine-style tea."
#: llama.cpp past its n_ctx (4096): streamed, an empty 200; whole, the 400 naming the window.
LLAMA_OVERFLOW = ("llamacpp/prompt-past-context.http", "llamacpp/past-context-whole.http")
#: LiteLLM 1.108.12 in front of it: streamed, a well-formed empty answer; whole, the 400.
LITELLM_OVERFLOW = {
    "openai-compatible": (
        "litellm/chat-past-context-empty-success.http",
        "litellm/chat-past-context-whole.http",
    ),
    "anthropic": (
        "litellm/messages-past-context-empty-success.http",
        "litellm/messages-past-context-whole.http",
    ),
}


def empty_answer(provider: str, output_tokens: int) -> Any:
    """A server whose answer is empty (no text, no call) of ``output_tokens`` for a prompt of
    4313, streamed and whole (shapes written by hand: no server here sends these counts)."""

    def respond(body: dict[str, Any]) -> Reply:
        if body.get("stream"):
            if provider == "anthropic":
                return Reply(events=anthropic_empty(output_tokens))
            return Reply(events=openai_stream("", usage=(4313, output_tokens, 0)))
        if provider == "anthropic":
            return Reply(body=anthropic_message("", (4313, output_tokens)))
        return Reply(body=openai_whole("", usage=(4313, output_tokens)))

    return respond


def anthropic_message(text: str, usage: tuple[int, int]) -> dict[str, Any]:
    """A Messages answer sent whole."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "local",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def anthropic_empty(output_tokens: int) -> list[str]:
    frames = anthropic_stream("", usage=(4313, output_tokens))
    start = json.loads(frames[0].split("data: ", 1)[1])
    start["message"]["usage"]["output_tokens"] = 0
    text_block = {"index": 0, "content_block": {"type": "text", "text": ""}}
    return [
        f"event: message_start\ndata: {json.dumps(start)}\n\n",
        f"event: content_block_start\ndata: "
        f"{json.dumps({'type': 'content_block_start', **text_block})}\n\n",
        'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n',
        *frames[1:],
    ]


# -- 1. a stream that held nothing is asked again whole --------------------------------------
def test_a_stream_holding_nothing_is_asked_again_whole_and_its_answer_shown(
    fake: FakeLLM, butler: Any
) -> None:
    """llama-cpp-python with tools streams only the role and [DONE]: the same request sent
    whole holds the answer. It is shown, and how it came is said in one line."""
    fake.respond = by_stream(*LLAMA_TOOLS)
    r = butler("run", *local(fake), "Write a haiku about tea.")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert LLAMA_HAIKU in r.stdout
    assert ASKED_WHOLE in r.stderr and "--no-stream" in r.stderr
    first, again = (q["body"] for q in fake.requests)
    assert first["stream"] is True and again["stream"] is False
    assert again["messages"] == first["messages"] and again["tools"] == first["tools"]


@pytest.mark.parametrize("output", ["json", "stream-json"])
def test_the_stream_asked_again_is_a_warning_under_json(
    output: str, fake: FakeLLM, butler: Any
) -> None:
    fake.respond = by_stream(*LLAMA_TOOLS)
    r = butler("run", *local(fake), "Write a haiku about tea.", "--output", output)
    assert r.returncode == 0, r.stderr
    last = valid(r.stdout)[-1]
    assert last["text"].startswith(LLAMA_HAIKU)
    assert [ASKED_WHOLE in w for w in last["warnings"]] == [True]


def test_the_tool_call_of_the_answer_sent_whole_is_judged_like_any(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    """Where llama-cpp-python's tool calls are: the answer sent whole (recorded with a named
    tool_choice: the 135M model calls no tool by itself). The write parks."""
    fake.respond = by_stream(LLAMA_TOOLS[0], "llamacpp/forced-tool-call-whole.http")
    r = butler("run", *local(fake), "write the word tea to the file tea.txt", "--json")
    assert r.returncode == 3, (r.stdout, r.stderr)
    [rep] = json_lines(r.stdout)
    assert rep["approval"]["tool"] == "write_file" and "tentice.txt" in rep["approval"]["title"]
    assert not (workdir / "tentice.txt").exists()


def test_llamacpps_overflow_is_asked_again_whole_and_its_400_names_the_window(
    fake: FakeLLM, butler: Any
) -> None:
    """Past its context llama.cpp streams a 200 with an empty body; sent whole, the same
    request gets the 400 naming the window: that is the task's error."""
    fake.respond = by_stream(*LLAMA_OVERFLOW)
    r = butler("run", *local(fake), "a task far past the model's context")
    assert r.returncode == 1, r.stdout
    assert TOO_LONG in r.stderr and "maximum context length is 4096 tokens" in r.stderr
    assert "asked again without streaming" in r.stderr and "Traceback" not in r.stderr
    assert [q["body"]["stream"] for q in fake.requests] == [True, False]


# -- 2. the chat recovers from llama.cpp's own overflow --------------------------------------
def chat_past_turn_3(
    fake: FakeLLM,
    provider: str,
    home: Path,
    cwd: Path,
    overflow: Callable[[dict[str, Any]], Reply],
    compacted: str,
) -> None:
    """A chat on a pty: three short turns, then a fourth whose requests ``overflow`` answers
    until the older turns are compacted — the chat must say ``compacted`` (a pattern) and
    then show the answer to turn 4, never a failure."""
    stream = anthropic_stream if provider == "anthropic" else openai_stream

    def respond(body: dict[str, Any]) -> Reply:
        sent = json.dumps(body["messages"])
        if "Summarise the conversation below" in sent:
            return Reply(events=stream("SHORT SUMMARY"))
        if "turn 4" in sent and "SHORT SUMMARY" not in sent:
            return overflow(body)
        return Reply(events=stream(f"reply-{len(body['messages'])}"))

    fake.respond = respond
    child = spawn_butler(["chat", *local(fake, provider)], home, cwd, **env_for(provider))
    child.expect("you ›")
    for n in range(1, 4):  # turns long enough that their summary is shorter (else not kept)
        child.sendline(f"turn {n} " + "and a few more words to fold away " * 10)
        child.expect("reply-")
        child.expect("you ›")
    child.sendline("turn 4")
    child.expect(compacted)
    child.expect("reply-")
    child.expect("you ›")
    assert "failed" not in child.before
    child.sendcontrol("d")
    child.expect("Goodbye")


#: What the chat says when a provider's refusal taught it llama.cpp's window.
LEARNED = r"compacted \d+ earlier turn\(s\) into a summary \(the provider said it was too long "
LEARNED += r"\(window 4096 tokens\)\)"


def test_the_chat_compacts_after_llamacpps_overflow_and_the_turn_is_answered(
    fake: FakeLLM, butler_home: Path, workdir: Path
) -> None:
    """Turn 4 overflows: the empty stream is asked again whole, llama.cpp's 400 names its
    4096 tokens, the older turns are compacted and the turn runs once more, answered."""
    overflowed: list[bool] = []

    def overflow(body: dict[str, Any]) -> Reply:
        overflowed.append(True)
        return by_stream(*LLAMA_OVERFLOW)(body)

    chat_past_turn_3(fake, "openai-compatible", butler_home, workdir, overflow, LEARNED)
    assert overflowed == [True, True]  # streamed, then whole: once each


# -- 3. LiteLLM's empty success --------------------------------------------------------------
@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_litellms_empty_success_is_asked_again_whole_and_its_400_is_the_error(
    provider: str, fake: FakeLLM, butler: Any
) -> None:
    """Past llama.cpp's context LiteLLM streams a well-formed empty answer (finish `stop` and
    no usage on /v1/chat/completions; an empty text block, `end_turn`, 0 tokens on
    /v1/messages): asked again whole, it relays llama.cpp's 400."""
    fake.respond = by_stream(*LITELLM_OVERFLOW[provider])
    r = butler("run", *local(fake, provider), "a long task", "--json", env=env_for(provider))
    assert r.returncode == 1, (r.stdout, r.stderr)
    [rep] = valid(r.stdout)
    assert rep["status"] == "failed" and TOO_LONG in rep["error"]
    assert "maximum context length is 4096 tokens" in rep["error"]
    assert [q["body"].get("stream") for q in fake.requests] == [True, False]


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_an_empty_answer_of_0_tokens_is_possibly_too_long_never_silent(
    provider: str, fake: FakeLLM, butler: Any
) -> None:
    """Streamed and whole, an empty answer of 0 output tokens: one line, exit 1."""
    fake.respond = empty_answer(provider, 0)
    r = butler(
        "run", *local(fake, provider), "What is the capital of France?", env=env_for(provider)
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert POSSIBLY_TOO_LONG in r.stderr and "0 output tokens" in r.stderr
    assert len(fake.requests) == 2


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_an_empty_answer_of_0_tokens_is_an_error_event_under_stream_json(
    provider: str, fake: FakeLLM, butler: Any
) -> None:
    fake.respond = empty_answer(provider, 0)
    flags = [*local(fake, provider), "--output", "stream-json"]
    r = butler("run", *flags, "hi", env=env_for(provider))
    assert r.returncode == 1, r.stderr
    events = valid(r.stdout)
    [error] = [e for e in events if e["type"] == "error"]
    assert POSSIBLY_TOO_LONG in error["message"]
    assert events[-1]["type"] == "done" and events[-1]["status"] == "failed"


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_a_real_empty_answer_is_said_to_be_one(provider: str, fake: FakeLLM, butler: Any) -> None:
    """The model wrote tokens, but no text and no call: done, said in one line, not asked
    again."""
    fake.respond = empty_answer(provider, 5)
    r = butler("run", *local(fake, provider), "hi", env=env_for(provider))
    assert r.returncode == 0, r.stderr
    assert EMPTY in r.stderr
    r = butler("run", *local(fake, provider), "hi", "--json", env=env_for(provider))
    [rep] = valid(r.stdout)
    assert rep["status"] == "done" and rep["text"] == "" and rep["warnings"] == [EMPTY]
    assert len(fake.requests) == 2


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_the_chat_compacts_and_answers_after_litellms_empty_success(
    provider: str, fake: FakeLLM, butler_home: Path, workdir: Path
) -> None:
    """Behind LiteLLM llama.cpp's overflow is an empty success: asked again whole it is the
    400 naming the window, so the chat learns it, compacts once and asks once more."""
    overflow = by_stream(*LITELLM_OVERFLOW[provider])
    chat_past_turn_3(fake, provider, butler_home, workdir, overflow, LEARNED)


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_the_chat_compacts_and_asks_again_after_an_empty_answer_of_0_tokens(
    provider: str, fake: FakeLLM, butler_home: Path, workdir: Path
) -> None:
    """An empty answer of 0 tokens, streamed and whole: taken for too long, compacted once,
    asked once more."""
    said = r"compacted \d+ earlier turn\(s\) into a summary \(the model answered nothing"
    chat_past_turn_3(fake, provider, butler_home, workdir, empty_answer(provider, 0), said)


# -- 4. one call split into many blocks sharing its id ---------------------------------------
def split_tool_use(cid: str, name: str, pieces: list[str]) -> list[str]:
    """LiteLLM's /v1/messages over a Chat Completions stream that repeats the call's id and
    name in every delta: a tool_use block of its own for each fragment, all one id."""
    frames = anthropic_stream("", usage=(40, 30))
    head, tail = frames[:1], frames[1:]
    body: list[str] = []
    for i, piece in enumerate(pieces):
        start = {
            "type": "content_block_start",
            "index": i,
            "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}},
        }
        delta = {
            "type": "content_block_delta",
            "index": i,
            "delta": {"type": "input_json_delta", "partial_json": piece},
        }
        body += [
            f"event: content_block_start\ndata: {json.dumps(start)}\n\n",
            f"event: content_block_delta\ndata: {json.dumps(delta)}\n\n",
            f'event: content_block_stop\ndata: {{"type": "content_block_stop", "index": {i}}}\n\n',
        ]
    tail = [f.replace('"end_turn"', '"tool_use"') for f in tail]
    return head + body + tail


def test_tool_use_blocks_sharing_one_id_are_one_call(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    """LiteLLM's /v1/messages over llama.cpp (recorded): one write_file split into 45
    tool_use blocks, one fragment each, all one id — one call, parked whole."""
    capture = "litellm/messages-split-tool-use.http"
    fake.replies = [replay(capture)]
    r = butler("run", *local(fake, "anthropic"), "write the tea", "--json", env=ANTHROPIC_KEY)
    assert r.returncode == 3, (r.stdout, r.stderr)
    [rep] = json_lines(r.stdout)
    [asked] = rep["approvals"]
    assert asked["tool"] == "write_file"
    [turn] = [m for m in rep["messages"] if m["role"] == "assistant"]
    [use] = [b for b in turn["content"] if b["type"] == "tool_use"]
    assert use["input"]["content"] == "The world is a cup of tea that can be enjoyed by anyone."
    assert use["input"]["path"].startswith("text &#39;write the word tea")


def test_hand_made_blocks_sharing_one_id_are_one_call_too(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    args = json.dumps({"path": "letter.txt", "content": "Dear Ana,\nthe tea is ready."})
    fake.replies = [Reply(events=split_tool_use("toolu_1", "write_file", list(args)))]
    r = butler("run", *local(fake, "anthropic"), "write the letter", "--json", env=ANTHROPIC_KEY)
    assert r.returncode == 3, (r.stdout, r.stderr)
    [rep] = json_lines(r.stdout)
    [turn] = [m for m in rep["messages"] if m["role"] == "assistant"]
    [use] = [b for b in turn["content"] if b["type"] == "tool_use"]
    assert use["input"] == json.loads(args) and not (workdir / "letter.txt").exists()


def test_deltas_at_new_indices_sharing_one_id_are_one_call(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("buy oat milk")
    pieces = list(json.dumps({"path": "notes.txt"}))
    frames = openai_stream("", [("call_7", "read_file", [])])
    chunk = json.loads(frames[1].split("data: ", 1)[1])
    deltas = []
    for i, piece in enumerate(pieces, start=1):  # each fragment at an index of its own
        call = {"index": i, "id": "call_7", "function": {"name": "read_file", "arguments": piece}}
        chunk["choices"][0]["delta"] = {"tool_calls": [call]}
        deltas.append(f"data: {json.dumps(chunk)}\n\n")
    fake.replies = [
        Reply(events=[frames[0], frames[1], *deltas, *frames[2:]]),
        Reply(events=openai_stream("ok")),
    ]
    r = butler("run", *local(fake), "notes?", "--json")
    assert r.returncode == 0, (r.stdout, r.stderr)
    sent = [c for m in fake.requests[1]["body"]["messages"] for c in m.get("tool_calls") or []]
    assert [(c["id"], c["function"]["name"]) for c in sent] == [("call_7", "read_file")]
    results = [m for m in fake.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in results] == ["buy oat milk"]


def test_a_split_call_whose_arguments_do_not_parse_is_an_error_the_model_sees(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    pieces = ['{"path": "x.txt", ', '"content": "hi"', "}", "}"]  # one brace too many
    fake.replies = [
        Reply(events=split_tool_use("toolu_2", "write_file", pieces)),
        Reply(events=anthropic_stream("I will try again later.")),
    ]
    flags = [*local(fake, "anthropic"), "--yes-safe", "--json"]
    r = butler("run", *flags, "write it", env=ANTHROPIC_KEY)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert not (workdir / "x.txt").exists()
    results = [
        b
        for m in fake.requests[1]["body"]["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "tool_result"
    ]
    assert len(results) == 1 and results[0]["is_error"] is True
    assert "bad JSON" in json.dumps(results[0]["content"])


# -- 7b. a gateway that wants a key ----------------------------------------------------------
@pytest.mark.parametrize(
    "status,message",
    [(400, "No connected db."), (401, "Authentication Error, No api key passed in.")],
)
def test_a_gateway_refusing_a_missing_key_names_api_key_env(
    status: int, message: str, fake: FakeLLM, butler: Any
) -> None:
    """No key is configured for openai-compatible: the butler sends `Bearer not-needed`, and
    LiteLLM says "No connected db." (400) or refuses it (401). One line names the way out."""
    fake.replies = [
        replay("litellm/no-key-no-connected-db.http")  # recorded
        if status == 400
        else Reply(status=status, body={"error": {"message": message, "code": str(status)}})
    ]
    r = butler("run", *local(fake), "hi")
    assert r.returncode == 1, r.stdout
    assert fake.requests[0]["headers"]["authorization"] == "Bearer not-needed"
    [line] = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert message in line and "providers.openai-compatible.api_key_env" in line
    assert "Traceback" not in r.stderr


# -- --no-stream ------------------------------------------------------------------------------
def test_no_stream_asks_for_the_answer_whole_from_the_start(
    fake: FakeLLM, butler: Any, butler_home: Path
) -> None:
    fake.respond = by_stream(*LLAMA_TOOLS)
    r = butler("run", *local(fake), "--no-stream", "Write a haiku about tea.", "--json")
    assert r.returncode == 0, r.stderr
    [rep] = valid(r.stdout)
    assert rep["text"].startswith(LLAMA_HAIKU) and rep["warnings"] == []
    assert [q["body"]["stream"] for q in fake.requests] == [False]
    assert "stream_options" not in fake.requests[0]["body"]
    (butler_home / "config.toml").write_text("stream = false\n")
    assert LLAMA_HAIKU in butler("run", *local(fake), "Write a haiku about tea.").stdout
    assert [q["body"]["stream"] for q in fake.requests] == [False, False]


def test_no_stream_in_the_chat_and_for_anthropic(
    fake: FakeLLM, butler_home: Path, workdir: Path
) -> None:
    fake.replies = [Reply(body=anthropic_message("Tea is ready.", (12, 4)))]
    args = ["chat", *local(fake, "anthropic"), "--no-stream"]
    child = spawn_butler(args, butler_home, workdir, **ANTHROPIC_KEY)
    child.expect("you ›")
    child.sendline("tea?")
    child.expect("Tea is ready.")
    child.expect("you ›")
    assert fake.requests[0]["body"].get("stream") is False
    child.sendcontrol("d")
    child.expect("Goodbye")
