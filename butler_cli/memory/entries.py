"""Memory entries (spec M1–M3): kinds, importance, and the one total order used everywhere."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from butler_cli.store.ids import random_below

T = TypeVar("T")
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


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_TAIL = 16**8
_last = [0, 0]  # the last id's (milliseconds, tail) in this process
_lock = threading.Lock()


def new_id() -> str:
    """``m`` + 10 base-36 milliseconds + 8 hex, unique and rising within a process.

    The tail starts random each millisecond and counts up for every further id in the same
    millisecond (so a bulk import of thousands never repeats one); 31 random bits keep two
    processes apart. It was 16 bits and no counter: 3,000 ids in a burst collided.
    """
    with _lock:
        millis = int(time.time() * 1000)
        if millis <= _last[0]:
            millis, tail = _last[0], _last[1] + 1
            if tail >= _TAIL:
                millis, tail = millis + 1, random_below(_TAIL // 2)
        else:
            tail = random_below(_TAIL // 2)  # room to count up in this millisecond
        _last[:] = [millis, tail]
    stamp = ""
    while millis:
        millis, r = divmod(millis, 36)
        stamp = _DIGITS[r] + stamp
    return f"m{stamp.rjust(10, '0')}{tail:08x}"


def recall_line(e: Entry) -> str:
    """One memory on one line, as ``recall`` gives it to the model and ``memory list`` shows it."""
    text = " ".join(e.text.split())
    return f"[{e.id}] ({e.kind}, importance {e.importance}, {e.ts[:19]}Z) {text}"


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


def sort_m3(
    items: Iterable[T],
    fields: Callable[[T], tuple[int, str, str]],
    first: Callable[[T], Any] | None = None,
) -> list[T]:
    """Sort by ``first`` (when given), then M3: importance descending, newest first, id
    ascending. ``fields`` gives (importance, ts, id). Stable passes, least significant first."""
    out = sorted(items, key=lambda x: fields(x)[2])
    out.sort(key=lambda x: fields(x)[1], reverse=True)
    out.sort(key=lambda x: -fields(x)[0])
    if first is not None:
        out.sort(key=first)
    return out


def sort_entries(entries: Iterable[Entry]) -> list[Entry]:
    """M3, the one total order used everywhere."""
    return sort_m3(entries, lambda e: (e.importance, e.ts, e.id))
