"""Vetting what a model sends before the loop touches it.

A model (or a provider) can answer something no tool should see: arguments nested thousands
deep, megabytes past any sane size, lone UTF-16 surrogates that cannot be written as UTF-8.
Such a call is answered with an error result and never classified or run; its saved copy keeps
no arguments, so the conversation and any park stay writable. Text is repaired, not refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from butler_cli.core.messages import ToolResultBlock, ToolUseBlock, error_result

MAX_DEPTH = 64
MAX_ARGUMENT_BYTES = 8 * 1024 * 1024


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


def vet_calls(
    calls: list[ToolUseBlock], known: Mapping[str, str] | None = None
) -> tuple[list[ToolUseBlock], dict[str, ToolResultBlock]]:
    """The calls as they may be kept, and the error results of the malformed ones.

    ``known``: problems the provider already found (id → what is wrong).
    """
    kept: list[ToolUseBlock] = []
    refused: dict[str, ToolResultBlock] = {}
    for call in calls:
        problem = (known or {}).get(call.id) or problem_with(call.input)
        if problem is None:
            kept.append(call)
            continue
        kept.append(ToolUseBlock(id=call.id, name=clean_text(call.name), input={}))
        refused[call.id] = error_result(
            call.id,
            f"Not run: the arguments of '{clean_text(call.name)}' were malformed: {problem}.",
        )
    return kept, refused
