"""Where the butler keeps its state, as the surfaces ask for it (they open no store)."""

from __future__ import annotations

from pathlib import Path


def home() -> Path:
    """The butler's home: ``$BUTLER_HOME``, else the user data dir."""
    from butler_cli.store.files import butler_home

    return butler_home()
