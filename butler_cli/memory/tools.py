"""The memory tools (spec T1–T4): benign, they touch only the butler's own memory."""

from __future__ import annotations

from typing import Any

from butler_cli.core.toolsets import FunctionToolset, ToolSpec
from butler_cli.memory.entries import (
    KINDS,
    WRITABLE_KINDS,
    coerce_importance,
    recall_line,
)
from butler_cli.memory.store import RECALL_DEFAULT_K, MemoryStore

_REMEMBER = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The fact, in one or two sentences"},
        "kind": {"type": "string", "enum": list(WRITABLE_KINDS)},
        "importance": {"description": "1–5, or low / high / pin (5 = pinned)"},
    },
    "required": ["text"],
}
_RECALL = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "The content words to look for: names, things, places, dates "
            "('Mei Lisbon visit', 'passport number', 'May 2023'). Small words like 'what', "
            "'did', 'the' are ignored; word endings do not matter. Omit to list the most "
            "important memories.",
        },
        "kinds": {"type": "array", "items": {"type": "string", "enum": list(KINDS)}},
        "k": {"type": "integer", "minimum": 1, "maximum": 50},
        "min_importance": {"type": "integer", "minimum": 1, "maximum": 5},
    },
}
RECALL_DESCRIPTION = (
    "Search what you remember about the person. Query with the telling words (names, "
    "places, things, dates), not a whole question; search again with other words if the "
    "first results miss. Each result shows its id, kind, importance (1-5) and the date it "
    "was remembered; memories near a match in time may hold its context."
)
_FORGET = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


class MemoryTools:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def remember(self, args: dict[str, Any]) -> str:
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("remember needs non-blank 'text'")
        kind = args.get("kind") or "semantic"
        if kind not in WRITABLE_KINDS:
            raise ValueError(
                f"kind '{kind}' cannot be written; use one of {', '.join(WRITABLE_KINDS)}"
            )
        meta: dict[str, Any] = {"source": "tool"}
        given = args.get("importance")
        if given is not None:
            meta["importance"] = coerce_importance(given)
        entry = self.store.remember(text.strip(), kind, meta)
        extra = f", importance {entry.importance}" if given is not None else ""
        return f"Remembered as {entry.id} ({entry.kind}{extra})."

    def recall(self, args: dict[str, Any]) -> str:
        query = args.get("query")
        if query is not None and not isinstance(query, str):
            raise ValueError("'query' must be a string")
        kinds = args.get("kinds")
        if kinds is not None and (
            not isinstance(kinds, list) or any(k not in KINDS for k in kinds)
        ):
            raise ValueError(f"'kinds' must be a list of {', '.join(KINDS)}")
        k = args.get("k", RECALL_DEFAULT_K)
        if not isinstance(k, int) or isinstance(k, bool):
            raise ValueError("'k' must be a whole number")
        floor = args.get("min_importance")
        found = self.store.recall(
            query, kinds, k, coerce_importance(floor) if floor is not None else None
        )
        return "\n".join(recall_line(e) for e in found) if found else "No matching memories."

    def forget(self, args: dict[str, Any]) -> str:
        entry_id = args.get("id")
        if not isinstance(entry_id, str) or not entry_id.strip():
            raise ValueError("forget needs a non-blank 'id'")
        entry_id = entry_id.strip()
        if not self.store.forget(entry_id):
            raise ValueError(f"no memory {entry_id} in this profile; nothing was forgotten")
        return f"Forgot {entry_id}."

    def toolset(self) -> FunctionToolset:
        """Not thread-safe: the store is one SQLite connection, and a write is a transaction on
        it; two calls at once would interleave them. They run one at a time, on the loop's
        thread."""
        return FunctionToolset(
            [
                (
                    ToolSpec(
                        "remember",
                        "Remember a durable fact about the person.",
                        _REMEMBER,
                        thread_safe=False,
                    ),
                    self.remember,
                ),
                (
                    ToolSpec(
                        "recall", RECALL_DESCRIPTION, _RECALL, thread_safe=False, read_only=True
                    ),
                    self.recall,
                ),
                (
                    ToolSpec("forget", "Forget one memory by id.", _FORGET, thread_safe=False),
                    self.forget,
                ),
            ]
        )
