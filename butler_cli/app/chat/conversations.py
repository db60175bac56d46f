"""Between the butler and its conversation store: what a turn, a run task and a decided park
write, and the recap a person sees when a conversation is continued.

Recording never stops a task: a store that cannot be written is named on stderr once and the
task's own result stands (the park files and the audit log remain the record of what ran).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.core.errors import ButlerError
from butler_cli.core.notices import notice
from butler_cli.store.conversations import ConversationStore
from butler_cli.store.conversations import Record as Record
from butler_cli.store.conversations import Summary as Summary
from butler_cli.store.files import butler_home as home

if TYPE_CHECKING:
    from butler_cli.app.run.butler import Butler
    from butler_cli.app.run.report import TaskReport
    from butler_cli.core.messages import Message
    from butler_cli.core.provider import Usage

RECAP_TURNS = 3
RECAP_CHARS = 160


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as the JSON a park carries."""
    return [m.to_dict() for m in messages]


def tokens_of(report: TaskReport) -> tuple[int, int]:
    return counts_of(report.usage)


def counts_of(usage: Sequence[Usage]) -> tuple[int, int]:
    # the store keeps counts; a call whose server did not report usage adds nothing to them
    return (sum(u.input_tokens or 0 for u in usage), sum(u.output_tokens or 0 for u in usage))


def meta_of(butler: Butler) -> dict[str, str]:
    return {
        "model": butler.model_spec,
        "policy": butler.policy.spec,
        "cwd": str(butler.cwd),
        "profile": butler.memory.profile,
    }


def _warn(exc: Exception) -> None:
    message = exc.message if isinstance(exc, ButlerError) else str(exc)
    notice(f"the conversation was not saved ({message})")


def begin(butler: Butler, kind: str, title: str) -> str | None:
    """A new conversation for this butler; None when the store cannot be written."""
    try:
        return butler.conversations.start(kind, title, meta_of(butler))
    except (ButlerError, sqlite3.Error, OSError) as exc:
        _warn(exc)
        return None


def record_turn(butler: Butler, cid: str | None, report: TaskReport, base: int) -> None:
    """A turn ended (``base``: the messages sent before it): a finished one joins the
    conversation, a parked one is linked to its park."""
    if cid is None:
        return
    parked = report.status == "parked"
    # A failed turn's partial messages stay out: the next turn must follow a finished one.
    new = [] if report.status in ("parked", "failed") else dump(report.messages[base:])
    try:
        butler.conversations.append(
            cid, new, report.status, tokens_of(report), report.park_id if parked else None, base
        )
    except (ButlerError, sqlite3.Error, OSError) as exc:
        _warn(exc)


def record_usage(butler: Butler, cid: str, usage: Sequence[Usage]) -> None:
    """Model calls made between turns (a `/compact`, the end's consolidation) join the
    conversation's token counts, so its record counts every call."""
    try:
        butler.conversations.add_tokens(cid, counts_of(usage))
    except (ButlerError, sqlite3.Error, OSError) as exc:
        _warn(exc)


def interrupted(butler: Butler, cid: str | None) -> None:
    """Ctrl-C stopped a `run` task mid-turn: the conversation is marked ``interrupted`` (not
    left ``running`` for ever); the cut turn's partial messages stay out, as a failed one's."""
    if cid is None:
        return
    try:
        butler.conversations.append(cid, [], "interrupted")
    except (ButlerError, sqlite3.Error, OSError) as exc:
        _warn(exc)


def drop_last(butler: Butler, cid: str, count: int) -> None:
    """`/undo`: the conversation's last ``count`` messages (its last turn) leave the record."""
    try:
        butler.conversations.drop_last(cid, count)
    except (ButlerError, sqlite3.Error, OSError) as exc:
        _warn(exc)


def park_decided(butler: Butler, park_id: str, approved: bool, report: TaskReport) -> None:
    """The one hook of the one decision path (:meth:`Butler.resume`): the outcome joins the
    conversation the park was made in, whoever decided it (the chat or `butler resume`)."""
    try:
        butler.conversations.park_decided(
            park_id,
            approved,
            report.status,
            dump(report.messages),
            tokens_of(report),
            report.park_id if report.status == "parked" else None,
        )
    except (ButlerError, sqlite3.Error, OSError) as exc:
        _warn(exc)


def _words(message: dict[str, Any]) -> str:
    texts = [b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text"]
    calls = [b.get("name", "") for b in message.get("content") or [] if b.get("type") == "tool_use"]
    text = " ".join(" ".join(texts).split())
    if not text and calls:
        text = "(called " + ", ".join(calls) + ")"
    return text if len(text) <= RECAP_CHARS else text[: RECAP_CHARS - 1] + "…"


def recap(record: Record) -> list[str]:
    """A few lines saying where the conversation stands: its last turns, a waiting park.
    Raw model text: the caller shows it through :func:`butler_cli.ui.text.visible`."""
    s = record.summary
    lines = [f"Continuing {s.id} · {s.turns} turn(s) · started {s.created[:16].replace('T', ' ')}"]
    said = [
        (m.get("role"), _words(m))
        for m in record.messages
        if m.get("role") in ("user", "assistant")
        and _words(m)
        and not all(b.get("type") == "tool_result" for b in m.get("content") or [])
    ]
    for role, text in said[-2 * RECAP_TURNS :]:
        lines.append(f"  {'you' if role == 'user' else 'butler'}: {text}")
    waiting = [p.park for p in record.parks if p.decision is None]
    if waiting:
        lines.append(f"  waiting for a decision: park {', '.join(waiting)} (/resume ID)")
    return lines


def find(store: ConversationStore, given: str | None, cwd: str) -> Record | None:
    """The conversation to continue: ``given`` (an id or a unique prefix), or the latest one
    of the folder ``cwd``; None when that folder has none."""
    if given is None:
        last = store.recent(1, cwd=cwd)
        if not last:
            return None
        given = last[0].id
    return store.load(given)


def of_park(park_id: str) -> str | None:
    """The conversation a park belongs to (None: none, or no conversations file — nothing is
    created to find out)."""
    return ConversationStore(home()).of_park(park_id)


def find_saved(home_dir: str, given: str | None, cwd: str) -> Record | None:
    """`chat -c` / `--conversation ID` before the butler is built: the conversation from the
    store in ``home_dir`` alone (sqlite only), the store closed again."""
    store = ConversationStore(Path(home_dir))
    try:
        return find(store, given, cwd)
    finally:
        store.close()


def recent(number: int, query: str | None = None) -> list[Summary]:
    """The latest ``number`` saved conversations, those holding every word of ``query`` when
    one is given (`butler log`). Reading only: a fresh home stays empty."""
    return ConversationStore(home()).recent(number, query=query)


def load(given: str) -> Record:
    """One saved conversation whole, by id or a unique prefix (`butler log show`)."""
    return ConversationStore(home()).load(given)
