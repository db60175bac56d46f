"""Where the butler keeps its state, as the surfaces ask for it (they open no store)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from butler_cli.store.files import butler_home, ensure_private_dir
from butler_cli.store.files import home_dir as where

if TYPE_CHECKING:  # the chat's first prompt reads the home without pathlib
    from pathlib import Path


def home() -> Path:
    """The butler's home: ``$BUTLER_HOME``, else the user data dir."""
    return butler_home()


def home_dir() -> str:
    """``str(home())``, made without pathlib: all the chat's first prompt needs."""
    return where()


def private_dir(path: str | Path) -> None:
    """``path`` made if missing, and 0700: a folder of the person's own (the chat history's,
    the scheduler's)."""
    ensure_private_dir(str(path))


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
