"""A real HTTP server on 127.0.0.1 that speaks the OpenAI Chat Completions and Anthropic
Messages wire formats, streaming with SSE (chunked), replying from a queue and recording every
request body and header the butler sent."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CAPTURES = Path(__file__).parent / "captures"

#: How often a test's loopback server looks whether it was told to stop. ``shutdown()`` waits
#: for that look: at serve_forever's default (0.5 s) every test with a fake server spent half
#: a second in teardown (some 40 s of the suite).
POLL = 0.02


@dataclass
class Reply:
    status: int = 200
    events: list[str] = field(default_factory=list)  # SSE frames, already formatted
    body: dict[str, Any] | None = None  # a JSON error body instead of a stream
    drop_after: int | None = None  # close the connection mid-stream after N frames
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # think this long before answering (a spinner gets drawn)
    hold_after: int | None = None  # send N frames, then wait for FakeLLM.release
    raw: bytes | None = None  # a whole recorded HTTP response, sent byte for byte, then closed
    #: After this answer, close the kept-alive connection (no ``Connection: close`` said):
    #: "idle" at once, "unread" when the next request arrives, without reading it.
    hang_up: str = ""


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key in ``folder`` (openssl, as a
    person makes one)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    return cert, key


def replay(name: str) -> Reply:
    """A capture as the server sent it (``tests/captures/``): a recorded ``.http`` response
    byte for byte, or an ``.sse`` body (comments citing its source included) as a 200 event
    stream."""
    path = CAPTURES / name
    if path.suffix == ".http":
        return Reply(raw=path.read_bytes())
    text = path.read_text(encoding="utf-8")
    return Reply(events=[block + "\n\n" for block in text.split("\n\n") if block.strip()])


class FakeLLM:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        #: Set by a test to let a held stream (``Reply.hold_after``) go on.
        self.release = threading.Event()
        #: Set by a test to answer from the request itself (a replay of how a real server
        #: reacts to what it is sent) instead of from ``replies``.
        self.respond: Callable[[dict[str, Any]], Reply] | None = None
        #: What GET /v1/models (and /models) lists, in both providers' shape.
        self.models: list[str] = ["gpt-test", "gpt-test-mini"]
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def setup(self) -> None:
                # each write sent at once, as uvicorn, nginx and Go's server send: Nagle's
                # delay would hold a stream's last chunk back until the client's delayed ACK
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                super().setup()

            def do_GET(self) -> None:
                fake.requests.append(
                    {
                        "method": "GET",
                        "path": self.path,
                        "body": None,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                    }
                )
                if self.path.split("?")[0].rstrip("/").endswith("/models"):
                    listed = [
                        {
                            "id": m,
                            "object": "model",
                            "created": 0,
                            "owned_by": "fake",
                            "type": "model",
                            "display_name": m,
                            "created_at": "2026-01-01T00:00:00Z",
                        }
                        for m in fake.models
                    ]
                    body = {
                        "object": "list",
                        "data": listed,
                        "has_more": False,
                        "first_id": None,
                        "last_id": None,
                    }
                    status = 200
                else:
                    body, status = {"error": {"message": "not found"}}, 404
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                body = json.loads(raw or b"{}")
                fake.requests.append(
                    {
                        "path": self.path,
                        "body": body,
                        "raw": raw,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                    }
                )
                reply = (
                    fake.respond(body)
                    if fake.respond is not None
                    else fake.replies.pop(0)
                    if fake.replies
                    else Reply(500, body={"error": {"message": "no reply queued"}})
                )
                time.sleep(reply.delay_s)
                if reply.raw is not None:
                    self.wfile.write(reply.raw)
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if reply.body is not None:
                    data = json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for i, frame in enumerate(reply.events):
                    if reply.hold_after is not None and i == reply.hold_after:
                        fake.release.wait(30)
                    if reply.drop_after is not None and i >= reply.drop_after:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    data = frame.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                if reply.hang_up == "unread":  # the next request comes, and is never read
                    select.select([self.connection], [], [], 30)
                if reply.hang_up:
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        #: Connections the server accepted (a kept-alive connection counts once).
        self.connections = 0
        accept = self.server.get_request

        def counted() -> Any:
            got = accept()
            self.connections += 1
            return got

        self.server.get_request = counted  # type: ignore[method-assign]
        self.server.handle_error = lambda request, address: None  # clients hang up; that is fine
        self.thread = threading.Thread(target=self.server.serve_forever, args=(POLL,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- OpenAI Chat Completions ------------------------------------------------------------------
def _chunk(
    delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, Any] | None = None
) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    obj: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": choices,
    }
    if usage is not None:
        obj["usage"] = usage
    return f"data: {json.dumps(obj)}\n\n"


def openai_stream(
    text: str = "",
    calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
    finish: str | None = None,
    usage: tuple[int, int, int] = (11, 7, 3),
) -> list[str]:
    """Text in two pieces, then each call with its JSON arguments split across chunks."""
    frames = [_chunk({"role": "assistant", "content": ""})]
    if text:
        half = len(text) // 2
        frames += [_chunk({"content": text[:half]}), _chunk({"content": text[half:]})]
    for i, (cid, name, parts) in enumerate(calls):
        frames.append(
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": cid,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        frames += [
            _chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in parts
        ]
    frames.append(_chunk({}, finish or ("tool_calls" if calls else "stop")))
    prompt, completion, cached = usage
    frames.append(
        _chunk(
            None,
            usage={
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        )
    )
    frames.append("data: [DONE]\n\n")
    return frames


# -- Anthropic Messages ---------------------------------------------------------------------------
def _event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def anthropic_stream(
    text: str = "",
    calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
    stop: str | None = None,
    usage: tuple[int, int] = (13, 9),
) -> list[str]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": 1, "cache_read_input_tokens": 2},
    }
    frames = [_event("message_start", {"message": message})]
    index = 0
    if text:
        frames.append(
            _event(
                "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
            )
        )
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            frames.append(
                _event(
                    "content_block_delta",
                    {"index": 0, "delta": {"type": "text_delta", "text": piece}},
                )
            )
        frames.append(_event("content_block_stop", {"index": 0}))
        index = 1
    for offset, (cid, name, parts) in enumerate(calls):
        i = index + offset
        frames.append(
            _event(
                "content_block_start",
                {
                    "index": i,
                    "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}},
                },
            )
        )
        for p in parts:
            frames.append(
                _event(
                    "content_block_delta",
                    {"index": i, "delta": {"type": "input_json_delta", "partial_json": p}},
                )
            )
        frames.append(_event("content_block_stop", {"index": i}))
    frames.append(
        _event(
            "message_delta",
            {
                "delta": {
                    "stop_reason": stop or ("tool_use" if calls else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": usage[1]},
            },
        )
    )
    frames.append(_event("message_stop", {}))
    return frames


def split(args: dict[str, Any], pieces: int = 3) -> list[str]:
    raw = json.dumps(args)
    step = max(1, len(raw) // pieces)
    return [raw[i : i + step] for i in range(0, len(raw), step)]


def sent_bodies(fake: FakeLLM) -> Iterator[dict[str, Any]]:
    return (r["body"] for r in fake.requests)


def openai_whole(
    text: str = "",
    calls: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    finish: str | None = None,
    usage: tuple[int, int] | None = (11, 7),
) -> dict[str, Any]:
    """A Chat Completions answer sent whole (``"stream": false``): calls as (id, name, JSON)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return body
