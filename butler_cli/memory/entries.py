"""Memory entries (spec M1–M3): kinds, importance, and the one total order used everywhere."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Kind = Literal["semantic", "episodic", "working"]
KINDS: tuple[Kind, ...] = ("semantic", "episodic", "working")
#: What the remember tool may write; episodic entries come from turn capture only.
WRITABLE_KINDS: tuple[Kind, ...] = ("semantic", "working")
DEFAULT_IMPORTANCE = 3
PINNED = 5
_WORDS = {
    "trivial": 1,
    "lowest": 1,
    "low": 2,
    "minor": 2,
    "normal": 3,
    "medium": 3,
    "default": 3,
    "high": 4,
    "important": 4,
    "critical": 5,
    "pin": 5,
    "pinned": 5,
}


def coerce_importance(value: object) -> int:
    """1..5: numbers are clamped, words are mapped (low 2, high 4, pin 5 …), None → 3.

    Raises ValueError for a word or value it cannot read.
    """
    if value is None or value == "":
        return DEFAULT_IMPORTANCE
    if isinstance(value, bool):
        raise ValueError("importance must be 1–5 or a word like low, high, pin")
    if isinstance(value, int | float):
        return max(1, min(PINNED, round(value)))
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _WORDS:
            return _WORDS[word]
        try:
            return coerce_importance(float(word))
        except ValueError:
            pass
    raise ValueError(f"importance {value!r} is not 1–5 or one of: {', '.join(_WORDS)}")


def new_id() -> str:
    """Sortable by creation (milliseconds), then random: ``m`` + 10 base-36 time + 4 random."""
    millis = int(time.time() * 1000)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    stamp = ""
    while millis:
        millis, r = divmod(millis, 36)
        stamp = digits[r] + stamp
    return f"m{stamp.rjust(10, '0')}{secrets.token_hex(2)}"


def now_ts() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Entry:
    id: str
    kind: Kind
    text: str
    ts: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def importance(self) -> int:
        try:
            return coerce_importance(self.meta.get("importance"))
        except ValueError:
            return DEFAULT_IMPORTANCE

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "ts": self.ts,
            "meta": self.meta,
        }


def order_key(entry: Entry) -> tuple[int, str, str]:
    """M3: importance descending, then newest first, then id ascending.

    Newest-first on an ISO timestamp string is done by sorting the complement of each char.
    """
    newest_first = "".join(chr(0x10FFFF - ord(c)) for c in entry.ts)
    return (-entry.importance, newest_first, entry.id)


def sort_entries(entries: list[Entry]) -> list[Entry]:
    return sorted(entries, key=order_key)
