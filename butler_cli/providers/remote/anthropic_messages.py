"""Anthropic Messages: the wire format, spoken through the official SDK, streamed.

Our message blocks are already this API's blocks, so the mapping is mostly a dump; tool-call
arguments arrive as ``input_json_delta`` pieces and are parsed once the block stops.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from butler_cli.core.messages import Message, ToolUseBlock, model_call
from butler_cli.core.provider import ModelRequest, ModelResponse, StopReason, Usage
from butler_cli.memory.block import CLOSE, OPEN
from butler_cli.providers.remote.common import (
    ENDED_EARLY,
    RemoteModel,
    StreamFailure,
    continues_call,
    cut_off,
    mark_started,
)

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


def read_events(events: Any, on_text: Callable[[str], None] | None = None) -> ModelResponse:
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
            kind = getattr(event, "type", "")
            if kind == "message_stop":
                stopped = True
            elif kind == "message_start":
                u = getattr(event.message, "usage", None)
                reported = reported or getattr(u, "input_tokens", None) is not None
                usage["input"] = getattr(u, "input_tokens", 0) or 0
                usage["cache_read"] = getattr(u, "cache_read_input_tokens", 0) or 0
                usage["cache_write"] = getattr(u, "cache_creation_input_tokens", 0) or 0
                usage["output"] = getattr(u, "output_tokens", 0) or 0
            elif kind == "content_block_start":
                block = event.content_block
                if block.type == "tool_use":
                    # some compatible servers put the whole input here and send no deltas
                    whole = getattr(block, "input", None)
                    calls.start(event.index, block.id, block.name, whole)
            elif kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    text.append(delta.text)
                    if on_text is not None:
                        on_text(delta.text)
                elif delta.type == "input_json_delta":
                    calls.piece(event.index, delta.partial_json)
            elif kind == "message_delta":
                stop = getattr(event.delta, "stop_reason", None) or stop
                out = getattr(getattr(event, "usage", None), "output_tokens", None)
                if out is not None:
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


def read_message(message: Any) -> ModelResponse:
    """A message sent whole (``--no-stream``), read with the stream's rules."""
    text: list[str] = []
    calls = _Calls()
    for index, block in enumerate(getattr(message, "content", None) or []):
        kind = getattr(block, "type", "")
        if kind == "text":
            text.append(str(getattr(block, "text", "") or ""))
        elif kind == "tool_use":
            calls.start(index, block.id, block.name, getattr(block, "input", None))
    u = getattr(message, "usage", None)
    tool_calls, malformed = calls.blocks()
    usage = (
        Usage(
            getattr(u, "input_tokens", 0) or 0,
            getattr(u, "output_tokens", 0) or 0,
            getattr(u, "cache_read_input_tokens", 0) or 0,
            getattr(u, "cache_creation_input_tokens", 0) or 0,
        )
        if u is not None
        else Usage.unknown()
    )
    stop = getattr(message, "stop_reason", None)
    return ModelResponse(
        "".join(text), tool_calls, _STOP.get(stop or "", "end_turn"), usage, malformed
    )


class AnthropicModel(RemoteModel):
    """A model behind the Anthropic Messages API (``anthropic:``)."""

    def new_client(self, key: str) -> Any:
        import anthropic

        return self.guarded(anthropic.Anthropic, anthropic.DefaultHttpxClient, key)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return to_wire(request, self.endpoint.model, self.endpoint.options)

    def streamed(self, body: dict[str, Any], request: ModelRequest) -> ModelResponse:
        events = self.client().messages.create(stream=True, **body)
        try:
            return read_events(events, request.on_text)
        except StreamFailure:
            raise
        except Exception as exc:
            if cut_off(exc):
                raise StreamFailure(ENDED_EARLY, early_end=True) from exc
            raise

    def whole(self, body: dict[str, Any]) -> ModelResponse:
        return read_message(self.client().messages.create(stream=False, **body))
