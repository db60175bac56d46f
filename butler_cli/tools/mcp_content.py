"""What an MCP server says, made fit for the conversation and for one line on a screen.

A tool result is capped like ``read_file`` (64 KiB of text, then a note saying how much was
cut); an image, a sound or a binary resource is named by its type and size, never pasted into
the conversation as base64. A failed start is told by its cause: the SDK's task groups wrap the
real error (a missing program, a timeout, a server that exited) in exception groups. Only the
client (:mod:`butler_cli.tools.mcp_client`) uses it, so asyncio is loaded already.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from butler_cli.core.errors import ButlerError
from butler_cli.tools.files import READ_CAP


def result_text(blocks: Iterable[Any], cap: int = READ_CAP) -> str:
    """The blocks of a ``CallToolResult`` as one text, each non-text block summarised."""
    return cap_text("\n".join(_block_text(block) for block in blocks), cap)


def cap_text(text: str, cap: int = READ_CAP) -> str:
    """``text`` cut at ``cap`` bytes (UTF-8, never inside a character), with a note."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return text
    kept = data[:cap].decode("utf-8", "ignore")
    return f"{kept}\n[butler: cut at {cap} bytes of {len(data)}; the rest was not shown]"


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", None) or "unknown type"
        size = base64_size(str(getattr(block, "data", "")))
        return f"[{kind}: {mime}, {size} bytes — not shown]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = getattr(resource, "uri", "")
        if isinstance(getattr(resource, "text", None), str):
            return f"[resource {uri}]\n{resource.text}"  # type: ignore[union-attr]
        mime = getattr(resource, "mime_type", None) or "unknown type"
        size = base64_size(str(getattr(resource, "blob", "")))
        return f"[resource {uri}: {mime}, {size} bytes — not shown]"
    if kind == "resource_link":
        return f"[resource link: {getattr(block, 'uri', '')}]"
    return f"[{kind or 'unknown'} content — not shown]"


def base64_size(data: str) -> int:
    """How many bytes a base64 text decodes to, without decoding it."""
    data = data.strip()
    return max(len(data) * 3 // 4 - data[-2:].count("="), 0)


def root_cause(exc: BaseException) -> BaseException:
    """The first real error inside nested exception groups (cancellations are only echoes)."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [root_cause(inner) for inner in exc.exceptions]
        real = [e for e in leaves if not isinstance(e, asyncio.CancelledError | GeneratorExit)]
        return (real or leaves or [exc])[0]
    return exc


def start_failure(exc: BaseException, timeout: float, last_words: str) -> str:
    """One line saying why a server did not start: the cause, then what it last printed."""
    cause = root_cause(exc)
    if isinstance(cause, TimeoutError):
        said = f"did not answer within {timeout:g} s"
    elif isinstance(cause, FileNotFoundError | PermissionError) and cause.filename:
        said = f"{cause.strerror}: {cause.filename}"
    elif isinstance(cause, ButlerError):  # refused before it started: the butler's words
        said = cause.message
    elif "connection closed" in str(cause).lower():
        said = "it exited (or closed its output) before answering"
    else:
        text = str(cause).strip()
        said = f"{type(cause).__name__}: {text}" if text else type(cause).__name__
    if last_words and last_words not in said:
        said = f"{said} — its last words: {last_words}"
    return one_line(said)


def one_line(text: str, limit: int = 400) -> str:
    """Control characters as spaces, whitespace collapsed, at most ``limit`` characters."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
