"""Where the butler keeps its state, as the surfaces ask for it (they open no store)."""

from __future__ import annotations

from pathlib import Path


def home() -> Path:
    """The butler's home: ``$BUTLER_HOME``, else the user data dir."""
    from butler_cli.store.files import butler_home

    return butler_home()


def park_ids(incomplete: str, *, done: bool) -> list[str]:
    """Ids of the parks awaiting a decision (``done``: decided ones too) that start with
    ``incomplete``, for shell completion: file names only — fast, no key or park read, and
    nothing of a park's content reaches the shell."""
    parks = home() / "parks"
    folders = [parks, parks / "done"] if done else [parks]
    found: set[str] = set()
    for folder in folders:
        try:
            names = [p.name for p in folder.iterdir()]
        except OSError:
            continue
        found.update(n[: -len(".json")] for n in names if n.endswith(".json"))
    return sorted(i for i in found if i.startswith(incomplete) and i.isalnum())
