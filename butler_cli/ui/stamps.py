"""Where a park came from and when, in words: one wording for `pending`, the chat and the inbox.

Plain text, not yet neutralised; light (no pydantic), so `butler pending` stays fast.
"""

from __future__ import annotations

from datetime import UTC, datetime


def origin_words(origin: str) -> str:
    """Where a park came from, in words (``from the chat``); "" when its park did not say."""
    named = {"chat": "the chat", "run": "butler run", "matrix": "the Matrix room"}
    if origin in named:
        return f"from {named[origin]}"
    return f"from {origin}" if origin else ""


def readable_time(iso: str) -> str:
    """A stored ISO time as a person reads it, the way the inbox shows it (``4 Dec 2026,
    04:07 UTC``); the text itself when it is not a time."""
    try:
        at = datetime.fromisoformat(iso).astimezone(UTC)
    except ValueError:
        return iso
    return f"{at.day} {at:%b %Y, %H:%M} UTC"
