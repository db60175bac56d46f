"""OpenAI-compatible Chat Completions: the wire format, sent by :mod:`.http`.

One adapter serves OpenAI and every server that speaks the format (Ollama, llama.cpp's server,
vLLM, LM Studio, OpenRouter…). Responses are streamed; tool-call arguments arrive as deltas and
the loop only ever sees whole calls. The official SDK is not used: it cost ~290 ms of CPU to
import, for a request this module builds and a stream chat_stream reads itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from butler_cli.core.errors import ModelError
from butler_cli.core.messages import Message, TextBlock, ToolResultBlock
from butler_cli.core.provider import ModelRequest, ModelResponse
from butler_cli.providers.remote.chat_stream import read_stream, read_whole
from butler_cli.providers.remote.common import (
    ENDED_EARLY,
    RemoteModel,
    StreamFailure,
    cut_off,
    mark_started,
    stream_failure,
)
from butler_cli.providers.remote.http import Wire

#: Where ``openai:`` models are served when no base URL is given (nor OPENAI_BASE_URL, which
#: the official SDK read too).
OPENAI_API = "https://api.openai.com/v1"
#: The variables the official SDK sent as headers to OpenAI: the organisation and the project
#: a key is used for.
OPENAI_HEADERS = (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project"))


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
        # "" and never null: llama.cpp's server answers HTTP 500 to a null content
        out: dict[str, Any] = {"role": "assistant", "content": message.text}
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
    wire: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": r.tool_use_id,
            # Chat Completions has no error flag: the content says so instead.
            "content": f"Error: {r.content}" if r.is_error else r.content,
        }
        for r in results
    ]
    images = message.images
    if images:  # content parts: the text, then each image as a data: URL
        parts: list[dict[str, Any]] = [{"type": "text", "text": "".join(texts)}] if texts else []
        parts += [{"type": "image_url", "image_url": {"url": i.data_url}} for i in images]
        wire.append({"role": "user", "content": parts})
    elif texts:
        wire.append({"role": "user", "content": "".join(texts)})
    return wire


class OpenAIChatModel(RemoteModel):
    """A model behind Chat Completions (``openai:``, ``ollama:``, ``openai-compatible:``)."""

    def new_client(self, key: str) -> Wire:
        headers = {"Authorization": f"Bearer {key}"}
        if self.endpoint.provider == "openai":
            headers |= {name: os.environ[v] for v, name in OPENAI_HEADERS if os.environ.get(v)}
        base = self.endpoint.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_API
        return Wire(base, headers)

    def listed(self) -> list[str]:
        payload = self.client().get("models", {})
        data = payload.get("data") if isinstance(payload, dict) else None
        return [str(m["id"]) for m in data or [] if isinstance(m, dict) and "id" in m]

    def body(self, request: ModelRequest) -> dict[str, Any]:
        body = to_wire(request, self.endpoint.model)
        for name, value in self.endpoint.options:
            # OpenAI's own API names the length limit max_completion_tokens (its reasoning
            # models refuse max_tokens); the compatible servers know max_tokens
            if name == "max_tokens" and self.endpoint.provider == "openai":
                name = "max_completion_tokens"
            body[name] = value
        body.pop("stream")  # each way of sending sets its own
        body.pop("stream_options")
        return body

    def streamed(self, body: dict[str, Any], request: ModelRequest) -> ModelResponse:
        """Send ``body`` streamed, and read the raw event lines (an error status raises), so
        the stream is read as each server really sends it (see chat_stream). A stream that
        held nothing raises StreamFailure ``nothing``."""
        sent = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with self.client().stream("chat/completions", sent) as answer:
            lines = _Lines(answer)
            try:
                return read_stream(lines, request.on_text)
            except StreamFailure:
                raise
            except Exception as exc:
                if cut_off(exc):
                    raise StreamFailure(
                        ENDED_EARLY, early_end=True, nothing=not lines.data
                    ) from exc
                if lines.started:  # a failure after the first byte is never retried
                    mark_started(exc)
                raise

    def whole(self, body: dict[str, Any]) -> ModelResponse:
        """Send ``body`` with ``"stream": false`` and read the answer (an error status raises:
        llama.cpp's 400 naming its context, say)."""
        raw = self.client().post("chat/completions", {**body, "stream": False})
        try:
            payload = json.loads(raw)
        except ValueError:
            raise ModelError(
                f"{self.endpoint.provider} answered with something that is not JSON "
                f"({self.endpoint.where})",
                code="provider_error",
            ) from None
        try:
            return read_whole(payload)
        except StreamFailure as exc:
            raise stream_failure(exc, self.endpoint) from exc


class _Lines:
    """The stream's lines, noting whether any arrived (``started``: never retried after) and
    whether any carried data (a ping comment does not)."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self.started = False
        self.data = False

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            self.started = True
            self.data = self.data or line.startswith("data")
            yield line
