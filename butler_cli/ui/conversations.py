"""Saved conversations as a person reads them: the listing's lines and one conversation whole.

Plain strings, no rich (``butler log`` stays fast); every word the model chose goes through
the neutraliser (:func:`butler_cli.ui.text.visible`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.ui.text import visible

if TYPE_CHECKING:
    from butler_cli.app.chat.conversations import Record, Summary

TITLE_WIDTH = 60
SHOWN_RESULT = 300


def _when(ts: str) -> str:
    try:
        return datetime.fromisoformat(ts).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return ts[:16]


def _folder(cwd: str) -> str:
    home = str(Path.home())
    return "~" + cwd[len(home) :] if cwd == home or cwd.startswith(home + "/") else cwd


def summary_lines(found: Sequence[Summary], current: str | None = None) -> list[str]:
    """One line a conversation: id, last change, kind, turns, status, folder, first words."""
    lines = []
    for s in found:
        title = " ".join(s.title.split())
        if len(title) > TITLE_WIDTH:
            title = title[: TITLE_WIDTH - 1] + "…"
        mark = "*" if s.id == current else " "
        status = f"parked {s.park}" if s.status == "parked" and s.park else s.status
        lines.append(
            visible(
                f"{mark}{s.id:<9} {_when(s.updated)}  {s.kind:<4} {s.turns:>3} turn(s)  "
                f"{status:<16} {_folder(s.cwd)}  {title}"
            )
        )
    return lines


def conversation_lines(record: Record) -> list[str]:
    """The conversation for a person: the header, then each turn; model text neutralised."""
    s = record.summary
    lines = [
        f"conversation {s.id} · {s.kind} · {s.status}",
        visible(f"model {s.model} · policy {s.policy} · profile {s.profile}"),
        visible(f"folder {s.cwd}"),
        f"started {_when(s.created)} · last {_when(s.updated)} · {s.turns} turn(s) · "
        f"{s.tokens_in} tokens in · {s.tokens_out} out",
    ]
    for park in record.parks:
        if park.decision is None:
            lines.append(
                f"park {park.park}: waiting — its turn so far is in `butler show {park.park}`; "
                f"`butler resume {park.park}` decides it"
            )
        else:
            lines.append(f"park {park.park}: {park.decision}, then {park.outcome}")
    lines.append("")
    for message in record.messages:
        lines.extend(_message_lines(message))
    return lines


def _message_lines(message: dict[str, Any]) -> list[str]:
    who = "you" if message.get("role") == "user" else "butler"
    out: list[str] = []
    for block in message.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            out.append(f"{who}: " + visible(str(block.get("text", "")), lines=True))
        elif kind == "tool_use":
            args = json.dumps(block.get("input", {}), ensure_ascii=False)
            out.append(visible(f"  → {block.get('name', '')} {args}"))
        elif kind == "tool_result":
            text = str(block.get("content", ""))
            if len(text) > SHOWN_RESULT:
                text = text[:SHOWN_RESULT] + f"… ({len(text)} characters)"
            out.append(visible(f"  ← {block.get('outcome', 'ran')}: {text}"))
        elif kind == "image":  # named, never its base64
            source = block.get("source") or {}
            size = len(str(source.get("data", ""))) * 3 // 4
            out.append(visible(f"{who}: [an image, {source.get('media_type')}, ~{size:,} bytes]"))
    return out
