"""Anthropic Messages: the wire format, sent by :mod:`.http`, streamed.

Our message blocks are already this API's blocks, so the mapping is mostly a dump; tool-call
arguments arrive as ``input_json_delta`` pieces and are parsed once the block stops. The events
are read as JSON, each field checked where it is used (the official SDK, no longer imported,
cost over a second of CPU to import).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from butler_cli.core.errors import ModelError
from butler_cli.core.messages import Message, ToolUseBlock, model_call
from butler_cli.core.provider import ModelRequest, ModelResponse, StopReason, Usage
from butler_cli.memory.block import CLOSE, OPEN
from butler_cli.providers.remote.chat_stream import error_text, sse_events
from butler_cli.providers.remote.common import (
    ENDED_EARLY,
    RemoteModel,
    StreamFailure,
    continues_call,
    cut_off,
    mark_started,
)
from butler_cli.providers.remote.http import Wire

#: Where ``anthropic:`` models are served when no base URL is given (nor ANTHROPIC_BASE_URL,
#: which the official SDK read too), and the API version every request names.
ANTHROPIC_API = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
#: Pages of ``/v1/models`` read at most (a thousand models each).
MODEL_PAGES = 20

#: The longest answer asked for when no ``-o max_tokens`` is given: each model family's own
#: output limit (first matching prefix), so an answer is never cut short by us. A model we do
#: not know gets FALLBACK; a reply that still hits the limit is marked as such.
MAX_OUTPUT: tuple[tuple[str, int], ...] = (
    ("claude-3-haiku", 4096),
    ("claude-3-opus", 4096),
    ("claude-3-sonnet", 4096),
    ("claude-3-5", 8192),
    ("claude-3-7-sonnet", 64000),
    ("claude-opus-4-5", 64000),
    ("claude-opus-4", 32000),
    ("claude-sonnet-4", 64000),
    ("claude-haiku-4", 64000),
)
FALLBACK = 32000
#: Prompt caching: the tool list, the frozen memory block and the system prompt are the same
#: on every round of a task (and across a chat), so each ends a cached prefix.
CACHE = {"type": "ephemeral"}
#: What the Messages API takes of each block. Ours may carry more (a result's ``outcome``,
#: which the park keeps), and the API refuses a field it does not know.
WIRE_FIELDS = {
    "text": ("type", "text"),
    "tool_use": ("type", "id", "name", "input"),
    "tool_result": ("type", "tool_use_id", "content", "is_error"),
    "image": ("type", "source"),
}
_STOP: dict[str, StopReason] = {
    "tool_use": "tool_use",
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}


def max_output(model: str) -> int:
    """The model family's own output limit (see :data:`MAX_OUTPUT`)."""
    return next((limit for prefix, limit in MAX_OUTPUT if model.startswith(prefix)), FALLBACK)


def to_wire(
    request: ModelRequest, model: str, options: tuple[tuple[str, int | float], ...] = ()
) -> dict[str, Any]:
    """The request body, with cache breakpoints after the tools, the memory block and the
    system prompt (the three parts that repeat unchanged), and the model options."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_output(model),
        "messages": [wire_message(m) for m in request.messages],
    }
    body.update(options)
    if request.system:
        body["system"] = system_blocks(request.system)
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        body["tools"][-1]["cache_control"] = CACHE
    return body


def wire_message(message: Message) -> dict[str, Any]:
    """One message as the API takes it: each block with only the fields the API knows."""
    out = message.to_dict()
    out["content"] = [
        {k: block[k] for k in WIRE_FIELDS.get(block.get("type", ""), block) if k in block}
        for block in out["content"]
    ]
    return out


def system_blocks(system: str) -> list[dict[str, Any]]:
    """The system prompt as text blocks: the frozen memory block (it leads, F5) and the
    persona after it, each ending a cached prefix. Together they are the same text."""
    end = system.find(CLOSE) + len(CLOSE) if system.startswith(OPEN) else -1
    if end <= 0 or not system[end:].strip():
        return [{"type": "text", "text": system, "cache_control": CACHE}]
    return [
        {"type": "text", "text": system[:end], "cache_control": CACHE},
        {"type": "text", "text": system[end:], "cache_control": CACHE},
    ]


@dataclass
class _Call:
    """One tool call as its blocks bring it: a gateway (LiteLLM's ``/v1/messages`` over a
    Chat Completions server) may split one call into many ``tool_use`` blocks sharing its id,
    each with a fragment of the arguments — they are one call."""

    id: object  # as the model sent it: an id that is not text is refused with the call
    names: list[object]
    pieces: list[str] = field(default_factory=list)
    #: Inputs sent whole in a block's start (some servers send no deltas), when not empty.
    wholes: list[dict[str, Any]] = field(default_factory=list)

    def block(self, name: object, whole: object) -> None:
        if name not in self.names:
            self.names.append(name)
        if isinstance(whole, dict) and whole:
            self.wholes.append(whole)

    def text(self) -> str:
        """The arguments' JSON text as the blocks brought it: the deltas' fragments, else the
        input sent whole, else nothing ("": a block that brought nothing, as a gateway's last
        fragment block does, is not an empty object)."""
        if self.pieces:
            return "".join(self.pieces)
        return json.dumps(self.wholes[0]) if self.wholes else ""

    def arguments(self) -> tuple[dict[str, Any], str | None]:
        """The call's arguments, or {} and what is wrong with them."""
        if len(self.names) > 1:
            return {}, f"one call id came with {len(self.names)} tool names"
        if self.pieces and self.wholes or len(self.wholes) > 1:
            return {}, "the arguments came whole more than once"
        raw = self.text() or "{}"
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            return {}, f"bad JSON in the arguments ({exc})"
        return args, None


@dataclass
class _Calls:
    """The answer's calls in order, assembled by id whatever the blocks' framing."""

    calls: list[_Call] = field(default_factory=list)
    by_index: dict[int, _Call] = field(default_factory=dict)

    def start(self, index: int, call_id: object, name: object, whole: object) -> None:
        call = _Call(call_id, [])
        call.block(name, whole)
        self.calls.append(call)
        self.by_index[index] = call

    def joined(self) -> list[_Call]:
        """The blocks, a gateway's fragments (a block each, one id) joined back into the
        call they belong to (:func:`continues_call`)."""
        calls: list[_Call] = []
        for call in self.calls:
            last = calls[-1] if calls else None
            if last is not None and continues_call(last.id, call.id, call.text()):
                for name in call.names:
                    last.block(name, None)
                last.pieces += call.pieces
                last.wholes += call.wholes
            else:
                calls.append(call)
        return calls

    def piece(self, index: int, partial: object) -> None:
        call = self.by_index.get(index)
        if call is not None and isinstance(partial, str):
            call.pieces.append(partial)

    def blocks(self) -> tuple[list[ToolUseBlock], dict[int, str]]:
        calls: list[ToolUseBlock] = []
        malformed: dict[int, str] = {}
        for call in self.joined():
            args, problem = call.arguments()
            if problem is not None:
                malformed[len(calls)] = problem
            calls.append(model_call(call.id, call.names[0] if call.names else "", args))
        return calls, malformed


def _obj(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: a field of the wrong kind reads
    as missing."""
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


def read_events(
    events: Iterable[dict[str, Any]], on_text: Callable[[str], None] | None = None
) -> ModelResponse:
    """Assemble a streamed message: text deltas, tool_use blocks with JSON deltas, usage."""
    text: list[str] = []
    calls = _Calls()
    stop: str | None = None
    stopped = False  # message_stop arrived: the answer is whole
    usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    reported = False
    started = False
    try:
        for event in events:
            started = True
            kind, index = event.get("type"), event.get("index")
            if kind == "message_stop":
                stopped = True
            elif kind == "message_start":
                u = _obj(_obj(event.get("message")).get("usage"))
                reported = reported or u.get("input_tokens") is not None
                usage["input"] = _count(u.get("input_tokens"))
                usage["cache_read"] = _count(u.get("cache_read_input_tokens"))
                usage["cache_write"] = _count(u.get("cache_creation_input_tokens"))
                usage["output"] = _count(u.get("output_tokens"))
            elif kind == "content_block_start":
                block = _obj(event.get("content_block"))
                if block.get("type") == "tool_use" and isinstance(index, int):
                    # some compatible servers put the whole input here and send no deltas
                    calls.start(index, block.get("id"), block.get("name"), block.get("input"))
            elif kind == "content_block_delta":
                delta = _obj(event.get("delta"))
                if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                    text.append(delta["text"])
                    if on_text is not None:
                        on_text(delta["text"])
                elif delta.get("type") == "input_json_delta" and isinstance(index, int):
                    calls.piece(index, delta.get("partial_json"))
            elif kind == "message_delta":
                reason = _obj(event.get("delta")).get("stop_reason")
                stop = reason if isinstance(reason, str) and reason else stop
                out = _obj(event.get("usage")).get("output_tokens")
                if isinstance(out, int):
                    usage["output"], reported = out, True
    except Exception as exc:
        if started:
            mark_started(exc)
        raise
    if stop is None and not stopped:
        raise StreamFailure(ENDED_EARLY, early_end=True)
    tool_calls, malformed = calls.blocks()
    return ModelResponse(
        "".join(text),
        tool_calls,
        _STOP.get(stop or "", "end_turn"),
        Usage(usage["input"], usage["output"], usage["cache_read"], usage["cache_write"])
        if reported
        else Usage.unknown(),
        malformed,
    )


def stream_events(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The stream's events as JSON objects (``ping`` skipped); an ``error`` event (an
    overloaded API mid-answer, say) raises StreamFailure with its message."""
    for name, data in sse_events(lines):
        if name == "ping":
            continue
        try:
            event = json.loads(data)
        except ValueError:
            raise StreamFailure("the server sent an event that is not JSON") from None
        if not isinstance(event, dict):
            continue
        if name == "error" or event.get("type") == "error":
            raise StreamFailure(error_text(event.get("error")))
        yield event


def read_message(message: object) -> ModelResponse:
    """A message sent whole (``--no-stream``), read with the stream's rules."""
    text: list[str] = []
    calls = _Calls()
    whole = _obj(message)
    content = whole.get("content")
    for index, item in enumerate(content if isinstance(content, list) else []):
        block = _obj(item)
        kind = block.get("type")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.start(index, block.get("id"), block.get("name"), block.get("input"))
    u = whole.get("usage")
    tool_calls, malformed = calls.blocks()
    usage = (
        Usage(
            _count(u.get("input_tokens")),
            _count(u.get("output_tokens")),
            _count(u.get("cache_read_input_tokens")),
            _count(u.get("cache_creation_input_tokens")),
        )
        if isinstance(u, dict)
        else Usage.unknown()
    )
    stop = whole.get("stop_reason")
    return ModelResponse(
        "".join(text),
        tool_calls,
        _STOP.get(stop if isinstance(stop, str) else "", "end_turn"),
        usage,
        malformed,
    )


class AnthropicModel(RemoteModel):
    """A model behind the Anthropic Messages API (``anthropic:``)."""

    def new_client(self, key: str) -> Wire:
        base = self.endpoint.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_API
        return Wire(base, {"x-api-key": key, "anthropic-version": API_VERSION})

    def listed(self) -> list[str]:
        """Every page of ``/v1/models`` (each names the last id, the next starts after it)."""
        ids: list[str] = []
        params = {"limit": "1000"}
        for _ in range(MODEL_PAGES):
            page = _obj(self.client().get("v1/models", params))
            data = page.get("data")
            ids += [str(m["id"]) for m in data or [] if isinstance(m, dict) and "id" in m]
            last = page.get("last_id")
            if page.get("has_more") is not True or not isinstance(last, str) or not last:
                break
            params = {"limit": "1000", "after_id": last}
        return ids

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return to_wire(request, self.endpoint.model, self.endpoint.options)

    def streamed(self, body: dict[str, Any], request: ModelRequest) -> ModelResponse:
        with self.client().stream("v1/messages", {**body, "stream": True}) as answer:
            try:
                return read_events(stream_events(answer), request.on_text)
            except StreamFailure:
                raise
            except Exception as exc:
                if cut_off(exc):
                    raise StreamFailure(ENDED_EARLY, early_end=True) from exc
                raise

    def whole(self, body: dict[str, Any]) -> ModelResponse:
        raw = self.client().post("v1/messages", {**body, "stream": False})
        try:
            payload = json.loads(raw)
        except ValueError:
            raise ModelError(
                f"anthropic answered with something that is not JSON ({self.endpoint.where})",
                code="provider_error",
            ) from None
        return read_message(payload)
