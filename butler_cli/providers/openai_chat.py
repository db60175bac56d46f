"""OpenAI-compatible Chat Completions: the wire format, spoken through the official SDK.

One adapter serves OpenAI and every server that speaks the format (Ollama, llama.cpp's server,
vLLM, LM Studio, OpenRouter…). Responses are streamed; tool-call arguments arrive as deltas and
the loop only ever sees whole calls. The SDK is imported on first use (it takes ~1 s).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from butler_cli.core.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    model_call,
)
from butler_cli.core.provider import ModelRequest, ModelResponse, StopReason, Usage
from butler_cli.providers.remote import RemoteModel, mark_started

_STOP: dict[str, StopReason] = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def to_wire(request: ModelRequest, model: str) -> dict[str, Any]:
    """The request body: system first, tool results as `tool` messages (errors marked)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.extend(_message(message))
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
    return body


def _message(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        calls = message.tool_calls
        if calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": json.dumps(c.input, ensure_ascii=False),
                    },
                }
                for c in calls
            ]
        return [out]
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    texts = [b.text for b in message.content if isinstance(b, TextBlock)]
    wire = [
        {
            "role": "tool",
            "tool_call_id": r.tool_use_id,
            # Chat Completions has no error flag: the content says so instead.
            "content": f"Error: {r.content}" if r.is_error else r.content,
        }
        for r in results
    ]
    if texts:
        wire.append({"role": "user", "content": "".join(texts)})
    return wire


def read_stream(chunks: Any, on_text: Callable[[str], None] | None = None) -> ModelResponse:
    """Assemble streamed chunks into one response; calls only once their arguments are whole."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage = Usage()
    started = False
    try:
        for chunk in chunks:
            started = True
            if getattr(chunk, "usage", None):
                usage = _usage(chunk.usage)
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None and delta.content:
                    text.append(delta.content)
                    if on_text is not None:
                        on_text(delta.content)
                for tc in (delta.tool_calls or []) if delta is not None else []:
                    slot = calls.setdefault(tc.index, {"id": None, "name": "", "args": []})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        if tc.function.name:
                            slot["name"] += tc.function.name
                        if tc.function.arguments:
                            slot["args"].append(tc.function.arguments)
                if choice.finish_reason:
                    finish = choice.finish_reason
    except Exception as exc:
        if started:
            mark_started(exc)
        raise
    tool_calls: list[ToolUseBlock] = []
    malformed: dict[int, str] = {}
    for index in sorted(calls):
        slot = calls[index]
        call_id = slot["id"] or ""  # a missing id gets one in the loop (vet_calls)
        raw = "".join(slot["args"]) or "{}"
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            args, malformed[len(tool_calls)] = {}, f"bad JSON in the arguments ({exc})"
        tool_calls.append(model_call(call_id, slot["name"], args))
    stop = _STOP.get(finish or "", "end_turn")
    if tool_calls and stop == "end_turn" and finish is None:
        stop = "tool_use"
    return ModelResponse("".join(text), tool_calls, stop, usage, malformed)


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) if details is not None else 0
    return Usage(
        input_tokens=getattr(raw, "prompt_tokens", 0) or 0,
        output_tokens=getattr(raw, "completion_tokens", 0) or 0,
        cache_read_tokens=cached or 0,
    )


class OpenAIChatModel(RemoteModel):
    """A model behind Chat Completions (``openai:``, ``ollama:``, ``openai-compatible:``)."""

    def new_client(self, key: str) -> Any:
        import openai

        return openai.OpenAI(
            api_key=key,
            base_url=self.endpoint.base_url,
            max_retries=0,
            timeout=120,
            # a redirect is an error, never followed: the key goes to the URL it is for only
            http_client=openai.DefaultHttpxClient(follow_redirects=False),
        )

    def stream(self, request: ModelRequest) -> ModelResponse:
        body = to_wire(request, self.endpoint.model)
        for name, value in self.endpoint.options:
            # OpenAI's own API names the length limit max_completion_tokens (its reasoning
            # models refuse max_tokens); the compatible servers know max_tokens
            if name == "max_tokens" and self.endpoint.provider == "openai":
                name = "max_completion_tokens"
            body[name] = value
        body.pop("stream")
        chunks = self.client().chat.completions.create(stream=True, **body)
        return read_stream(chunks, request.on_text)
