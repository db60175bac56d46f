"""What shell completion offers for the words that name things the butler keeps: conversation
and schedule ids, kept approvals' numbers, model specs (park ids: :func:`home.park_ids`).

Read the cheapest way — one read-only SQLite query, the config file, the model lists
``butler models`` cached — never the network, never creating a file. Nothing here fails: a
state file that is corrupt, unreadable or of another shape offers nothing (the command itself
reports it when it is run), and only what matches the butler's own id shapes, or a name the
person wrote in their config, reaches the shell.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

from butler_cli.app.config.config_file import check_config, config_file, read_config
from butler_cli.app.config.home import home_dir
from butler_cli.core.errors import ButlerError

#: The butler's ids: the park alphabet (no 0/o, 1/l/i), conversations with their ``c-``.
_CONVERSATION = re.compile(r"c-[a-hj-km-np-z2-9]{1,12}")
_SCHEDULE = re.compile(r"[a-hj-km-np-z2-9]{1,12}")
#: A model spec or an alias as a shell word: no spaces, quotes or control characters.
_SPEC = re.compile(r"[\w.:/@+-]{1,200}")
#: What ``--model`` starts with before a model's name (`butler models` lists them).
PROVIDERS = ("openai:", "anthropic:", "ollama:", "openai-compatible:", "scripted:")


def conversation_ids(incomplete: str) -> list[str]:
    """Saved conversations' ids (latest first) that start with what is typed."""
    found = _column("conversations.db", "SELECT id FROM conversations ORDER BY updated DESC")
    return _matching(found, incomplete, _CONVERSATION)


def schedule_ids(incomplete: str) -> list[str]:
    """Scheduled tasks' ids that start with what is typed."""
    found = _column("schedule.db", "SELECT id FROM jobs ORDER BY id")
    return _matching(found, incomplete, _SCHEDULE)


def model_specs(incomplete: str) -> list[str]:
    """What ``--model`` may be: the config's aliases and model, the models the providers
    listed last (`butler models PROVIDER`, cached), and each provider's prefix."""
    named: list[str] = []
    try:
        path = config_file()
        checked = check_config(read_config(path), path)
        named += checked.aliases
        model = checked.values.get("model")
        named += [model] if isinstance(model, str) else []
    except (ButlerError, OSError, ValueError, TypeError):
        pass  # a broken config is the command's to report, not completion's
    named += _cached_models()
    return _matching([*dict.fromkeys(named), *PROVIDERS], incomplete, _SPEC)


def quietly(values: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``values`` that offers nothing instead of failing: completion never prints a
    traceback into a person's shell, whatever the home holds."""

    def offer(incomplete: str) -> list[str]:
        try:
            return values(incomplete)
        except Exception:  # noqa: BLE001 — completion offers nothing rather than fail
            return []

    offer.__doc__ = values.__doc__
    return offer


def _matching(found: Iterable[object], incomplete: str, shape: re.Pattern[str]) -> list[str]:
    return [
        v
        for v in dict.fromkeys(found)
        if isinstance(v, str) and shape.fullmatch(v) and v.startswith(incomplete)
    ]


def _column(name: str, query: str) -> list[object]:
    """The first column of ``query`` on the home's database ``name``, opened read-only (it is
    never created); nothing when it is missing, locked, corrupt or of another shape."""
    path = Path(home_dir()) / name
    if not path.is_file():
        return []
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=0.2)
        try:
            return [row[0] for row in db.execute(query).fetchmany(500)]
        finally:
            db.close()
    except sqlite3.Error:
        return []


def _cached_models() -> list[str]:
    """The model specs `butler models PROVIDER` cached (never asks a server)."""
    try:
        # app.views.model_list's CACHE_FILE (that module imports the providers)
        with open(os.path.join(home_dir(), "models-cache.json"), encoding="utf-8") as fh:
            cache = json.load(fh)
    except (OSError, ValueError):
        return []
    found: list[str] = []
    for entry in cache.values() if isinstance(cache, dict) else ():
        models = entry.get("models") if isinstance(entry, dict) else None
        found += [m for m in models if isinstance(m, str)] if isinstance(models, list) else []
    return found
