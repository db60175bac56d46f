"""Vetting what a model sends before the loop touches it.

A model (or a provider) can answer something no tool should see: arguments nested thousands
deep, megabytes past any sane size, lone UTF-16 surrogates that cannot be written as UTF-8.
Such a call is answered with an error result and never classified or run; its saved copy keeps
no arguments, so the conversation and any park stay writable. Text is repaired, not refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from butler_cli.core.messages import ToolResultBlock, ToolUseBlock, error_result

MAX_DEPTH = 64
MAX_ARGUMENT_BYTES = 8 * 1024 * 1024
#: An id the loop keeps as the model sent it: short, plain, and safe for every wire format.
_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def clean_text(text: str) -> str:
    """Lone surrogates become U+FFFD; everything else is kept as it is."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def problem_with(arguments: dict[str, Any]) -> str | None:
    """Why these arguments cannot be used, or None when they are fine."""
    if _depth(arguments) > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    try:
        size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8"))
    except UnicodeEncodeError:
        return "they contain text that is not valid Unicode (a lone surrogate)"
    except (TypeError, ValueError) as exc:
        return f"they are not JSON ({exc})"
    if size > MAX_ARGUMENT_BYTES:
        return f"they are {size:,} bytes, over the {MAX_ARGUMENT_BYTES:,}-byte limit"
    return None


def _depth(value: Any) -> int:
    """Nesting depth, without recursion (so a hostile depth cannot blow the stack)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return depth
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def call_identities(calls: list[ToolUseBlock]) -> list[str]:
    """One distinct id per call, in order (spec L7: every call gets exactly one result).

    Ids come from the model and are untrusted: they may repeat, be empty or hold anything. A
    plain id seen for the first time is kept, so the model's own ids survive the round trip;
    any other call gets ``butler-<position>`` (suffixed until unique). Verdicts, results and
    the park's journal are all keyed by these ids, so a refusal binds to its own call.
    """
    taken = {c.id for c in calls}
    used: set[str] = set()
    out: list[str] = []
    for position, call in enumerate(calls):
        ident = call.id
        if ident in used or not _PLAIN_ID.fullmatch(ident):
            ident, n = f"butler-{position}", 0
            while ident in taken or ident in used:
                n += 1
                ident = f"butler-{position}-{n}"
        used.add(ident)
        out.append(ident)
    return out


def vet_calls(
    calls: list[ToolUseBlock], known: Mapping[int, str] | None = None
) -> tuple[list[ToolUseBlock], dict[str, ToolResultBlock]]:
    """The calls as they may be kept, each with its own id, and the error results of the
    malformed ones.

    ``known``: problems the provider already found (position in ``calls`` → what is wrong).
    """
    one = len(calls) == 1 and not known and _PLAIN_ID.fullmatch(calls[0].id)
    if one and problem_with(calls[0].input) is None:
        return calls, {}  # the common round, without the general bookkeeping below
    kept: list[ToolUseBlock] = []
    refused: dict[str, ToolResultBlock] = {}
    for position, (call, ident) in enumerate(zip(calls, call_identities(calls), strict=True)):
        problem = (known or {}).get(position) or problem_with(call.input)
        if problem is None:
            kept.append(call if ident == call.id else replace(call, id=ident))
            continue
        kept.append(ToolUseBlock(id=ident, name=clean_text(call.name), input={}))
        refused[ident] = error_result(
            ident,
            f"Not run: the arguments of '{clean_text(call.name)}' were malformed: {problem}.",
        )
    return kept, refused
