"""Export and import of a profile's memory (spec V1). Import refuses a malformed file whole."""

from __future__ import annotations

import json
from typing import Any

from butler_cli.core.errors import UsageError
from butler_cli.memory.entries import KINDS, Entry, coerce_importance, new_id
from butler_cli.memory.store import MemoryStore

FORMAT = "butler-memory"
VERSION = 1


def export_json(store: MemoryStore) -> str:
    data = {
        "format": FORMAT,
        "version": VERSION,
        "profile": store.profile,
        "entries": [e.to_json() for e in store.entries()],
    }
    return json.dumps(data, ensure_ascii=False, indent=2)


def export_markdown(store: MemoryStore) -> str:
    lines = [f"# butler memory — profile {store.profile}", ""]
    for kind in KINDS:
        entries = store.entries([kind])
        if not entries:
            continue
        lines += [f"## {kind}", ""]
        for e in entries:
            text = " ".join(e.text.split())
            lines.append(f"- **{e.id}** (importance {e.importance}, {e.ts[:19]}Z): {text}")
        lines.append("")
    return "\n".join(lines)


def parse_export(text: str, source: str) -> list[Entry]:
    """Every entry of an export, or a UsageError naming the first problem (nothing imported)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{source} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f'{source} is not a butler memory export (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise UsageError(f"{source} has export version {data.get('version')!r}; expected {VERSION}")
    raw = data.get("entries")
    if not isinstance(raw, list):
        raise UsageError(f'{source}: "entries" must be a list')
    return [_entry(item, i, source) for i, item in enumerate(raw)]


def _entry(item: Any, i: int, source: str) -> Entry:
    where = f"{source}: entry {i}"
    if not isinstance(item, dict):
        raise UsageError(f"{where} is not an object")
    text, kind, ts = item.get("text"), item.get("kind"), item.get("ts")
    meta = item.get("meta", {})
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{where} has no text")
    if kind not in KINDS:
        raise UsageError(f"{where} has kind {kind!r}, not one of {', '.join(KINDS)}")
    if not isinstance(ts, str) or not ts:
        raise UsageError(f"{where} has no ts")
    if not isinstance(meta, dict):
        raise UsageError(f"{where}: meta must be an object")
    try:
        meta = {**meta, "importance": coerce_importance(meta.get("importance"))}
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from exc
    entry_id = item.get("id")
    return Entry(
        entry_id if isinstance(entry_id, str) and entry_id else new_id(), kind, text, ts, meta
    )


def import_entries(store: MemoryStore, entries: list[Entry]) -> tuple[int, int]:
    """Add entries; one already in this profile (same id, or same kind, text and time) is
    skipped, so importing twice adds nothing; an id another profile holds, or an earlier entry
    of the same file, is renewed."""
    fresh: list[Entry] = []
    taken: set[str] = set()
    copies: set[tuple[str, str, str]] = set()
    skipped = 0
    for e in entries:
        copy = (e.kind, e.text, e.ts)
        if copy in copies or store.get(e.id) is not None or store.has_copy(e):
            skipped += 1
            continue
        if e.id in taken or store.id_taken(e.id):
            e = Entry(new_id(), e.kind, e.text, e.ts, e.meta)
        taken.add(e.id)
        copies.add(copy)
        fresh.append(e)
    return store.add_entries(fresh), skipped
