"""A Chat Completions event stream, read as the servers people run actually send it.

OpenAI's own stream is the model: a call's id and name in its first delta, the arguments in
pieces after it, one ``finish_reason``, then ``data: [DONE]``. The compatible servers differ,
and ``tests/captures/`` holds what each one sends:

- llama.cpp (llama-cpp-python) repeats the name and the id in every delta of a call;
- Ollama sends each call whole, every one at ``index`` 0 (or, before 0.4.7, with no index);
- LM Studio's ids may be empty; some servers end tool calls with ``"stop"`` or with no
  finish reason at all;
- vLLM and LM Studio report a failure as an ``{"error": …}`` event inside a 200 stream;
- usage is often not reported; a server may close the stream before the answer is whole;
- llama-cpp-python, asked with tools, may stream only ``{"delta": {"role": "assistant"}}`` and
  ``[DONE]``: no content, no finish reason (its real answer, or its real error, comes only
  to the same request sent without streaming: :class:`StreamFailure` ``nothing``);
- a gateway may give every fragment of one call a delta (or an index) of its own, each
  repeating the call's id: a call is assembled by its id, whatever the framing.

The stream is read as plain SSE lines (:mod:`.http` sends the request, checks the status and
raises for an error status), so ``[DONE]`` is seen: a stream that ends with neither a finish
reason nor ``[DONE]`` is a failure, never a short answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from butler_cli.core.messages import ToolUseBlock, model_call
from butler_cli.core.provider import ModelResponse, StopReason, Usage
from butler_cli.providers.remote.common import (
    ENDED_EARLY,
    SENT_NOTHING,
    StreamFailure,
    continues_call,
)

_STOP: dict[str, StopReason] = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "eos": "end_turn",  # some servers name the end-of-sequence token instead
    "length": "max_tokens",
    "content_filter": "refusal",
}


@dataclass
class _Call:
    """One tool call as it is put together from its deltas."""

    id: object = ""
    name: object = ""
    args: list[str] = field(default_factory=list)
    bad_args: str | None = None

    def take(self, tc: dict[str, Any]) -> None:
        call_id = tc.get("id")
        if call_id is not None and call_id != "":
            self.id = call_id
        fn = tc.get("function")
        if not isinstance(fn, dict):
            return
        self._take_name(fn.get("name"))
        args = fn.get("arguments")
        if isinstance(args, str):
            self.args.append(args)
        elif isinstance(args, dict):  # an object instead of its JSON text (Ollama's own form)
            self.args.append(json.dumps(args, ensure_ascii=False))
        elif args is not None:
            self.bad_args = f"the arguments are {type(args).__name__}, not JSON text"

    def _take_name(self, name: object) -> None:
        if name is None or name == "":
            return
        if not isinstance(name, str) or not isinstance(self.name, str) or not self.name:
            self.name = name  # the first name (a name that is not text is reported later)
        elif name.startswith(self.name):
            self.name = name  # repeated in every delta (llama.cpp), or sent whole again
        else:
            self.name += name  # sent in pieces

    def starts_anew(self, tc: dict[str, Any]) -> bool:
        """Whether ``tc`` is another call reusing this one's index (Ollama numbers every call
        0): it carries an id of its own while this call already has a different one."""
        call_id = tc.get("id")
        return bool(call_id) and bool(self.id) and call_id != self.id


@dataclass
class _Assembly:
    text: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    by_index: dict[object, _Call] = field(default_factory=dict)
    finish: str | None = None
    done: bool = False
    usage: Usage = field(default_factory=Usage.unknown)

    def take_call(self, tc: object) -> None:
        if not isinstance(tc, dict):
            return
        index = tc.get("index")
        key = index if isinstance(index, int) else None  # no index: one call after another
        slot = self.by_index.get(key)
        if slot is None or slot.starts_anew(tc):
            slot = _Call()
            self.calls.append(slot)
            self.by_index[key] = slot
        slot.take(tc)

    def joined(self) -> list[_Call]:
        """The calls, a gateway's fragments (an index of their own each, one id) joined
        back into the call they belong to (:func:`continues_call`)."""
        calls: list[_Call] = []
        for call in self.calls:
            last = calls[-1] if calls else None
            if last is not None and continues_call(last.id, call.id, "".join(call.args)):
                last.args += call.args
                last.bad_args = last.bad_args or call.bad_args
                if call.name != last.name and call.name not in ("", None):
                    last.bad_args = "one call id came with more than one tool name"
            else:
                calls.append(call)
        return calls

    @property
    def empty(self) -> bool:
        """Nothing of an answer came: no text, no call, no finish reason."""
        return not self.text and not self.calls and self.finish is None


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The ``data`` of each server-sent event (see :func:`sse_events`)."""
    return (data for _, data in sse_events(lines))


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Each server-sent event that carries data, as its name (``message`` when it names none)
    and its data (comments and other fields skipped; an event cut off by the end of the stream
    is still given)."""
    event = "message"
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield event, "\n".join(data)


def read_stream(
    lines: Iterable[str], on_text: Callable[[str], None] | None = None
) -> ModelResponse:
    """Assemble the streamed answer; calls only once their arguments are whole.

    Raises :class:`StreamFailure` for an error event or an early end (see the module doc).
    """
    got = _Assembly()
    events = 0
    for data in sse_data(lines):
        events += 1
        if data.strip() == "[DONE]":
            got.done = True
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            raise StreamFailure("the server sent an event that is not JSON") from None
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            raise StreamFailure(error_text(chunk["error"]))
        _take_chunk(got, chunk, on_text)
    if got.empty:  # the server's answer, or its error, is only in a request not streamed
        raise StreamFailure(SENT_NOTHING, early_end=not got.done, nothing=True)
    if got.finish is None and not got.done:
        raise StreamFailure(ENDED_EARLY, early_end=True, nothing=not events)
    return _response(got)


def read_whole(payload: object) -> ModelResponse:
    """A Chat Completions answer sent whole (``"stream": false``), read with the stream's
    rules: each choice's ``message`` is taken as one delta, its calls assembled by id."""
    if not isinstance(payload, dict):
        raise StreamFailure("the server's answer is not a JSON object")
    if payload.get("error"):
        raise StreamFailure(error_text(payload["error"]))
    got = _Assembly()
    choices = payload.get("choices")
    for choice in choices if isinstance(choices, list) else []:
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            message = dict(choice["message"])
            calls = message.get("tool_calls")
            if isinstance(calls, list):  # whole calls carry no index: their place is theirs
                message["tool_calls"] = [
                    {"index": n, **tc} if isinstance(tc, dict) else tc for n, tc in enumerate(calls)
                ]
            choice = {**choice, "delta": message}
        _take_chunk(got, {"choices": [choice], "usage": payload.get("usage")}, None)
    return _response(got)


def _take_chunk(
    got: _Assembly, chunk: dict[str, Any], on_text: Callable[[str], None] | None
) -> None:
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        got.usage = usage_of(usage)
    choices = chunk.get("choices")
    for choice in choices if isinstance(choices, list) else []:
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if isinstance(delta, dict):
            content = delta.get("content")
            if isinstance(content, str) and content:
                got.text.append(content)
                if on_text is not None:
                    on_text(content)
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for tc in calls:
                    got.take_call(tc)
            elif isinstance(delta.get("function_call"), dict):  # the legacy single call
                got.take_call({"index": 0, "function": delta["function_call"]})
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            got.finish = finish


def _response(got: _Assembly) -> ModelResponse:
    tool_calls: list[ToolUseBlock] = []
    malformed: dict[int, str] = {}
    for call in got.joined():
        raw = "".join(call.args) or "{}"
        problem = call.bad_args
        args: object = {}
        if problem is None:
            try:
                args = json.loads(raw)
                if not isinstance(args, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                args, problem = {}, f"bad JSON in the arguments ({exc})"
        if problem is not None:
            malformed[len(tool_calls)] = problem
        call_id = call.id if call.id is not None else ""  # missing: the loop gives one
        tool_calls.append(model_call(call_id, call.name, args))
    stop = _STOP.get(got.finish or "", "end_turn")
    if tool_calls and stop == "end_turn":
        stop = "tool_use"  # calls that ended with "stop", or with no finish reason
    return ModelResponse("".join(got.text), tool_calls, stop, got.usage, malformed)


def usage_of(raw: dict[str, Any]) -> Usage:
    """Usage as the server reported it; a count it left out stays unknown."""
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else None,
        output_tokens=completion if isinstance(completion, int) else None,
        cache_read_tokens=cached if isinstance(cached, int) else 0,
        cache_write_tokens=0,
    )


def error_text(error: object) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str) and message:
            return " ".join(message.split())[:300]
    if isinstance(error, str) and error:
        return " ".join(error.split())[:300]
    return "the server reported an error inside the stream"
