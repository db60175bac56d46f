"""Changing the config file: `config set`, `unset`, `get` and `edit`.

The file is a person's: it is rewritten through tomlkit, so their comments, layout and tables
(``[mcp]`` servers included) survive, and any unicode is written as TOML allows. Every change
is checked as the whole new file before it replaces the old one; a malformed file is never
rewritten, and one a person broke in their editor is reported and left as they wrote it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from butler_cli.app.config.config import (
    Resolved,
    config_path,
    find_setting,
    load_config,
    parse_config,
    resolve_setting,
)
from butler_cli.app.config.config_file import PROVIDER_KEYS, read_config, section_values
from butler_cli.app.config.editor import run_editor
from butler_cli.app.config.settings import ENV, KEY_HELP
from butler_cli.core.errors import UsageError
from butler_cli.providers import REMOTE
from butler_cli.store.files import read_text_regular, write_atomic


def _parts(key: str) -> list[str]:
    """The table path of a known key; anything else is a usage error listing the known."""
    parts = key.split(".")
    setting = find_setting(key)
    known = (
        (setting is not None and setting.settable)
        or (len(parts) == 2 and parts[0] == "aliases" and bool(parts[1]))
        or (len(parts) == 3 and parts[0] == "providers" and parts[2] in PROVIDER_KEYS)
    )
    if not known or not all(parts):
        raise UsageError(f"unknown key '{key}'; use one of {KEY_HELP}")
    return parts


def _typed(key: str, value: str) -> Any:
    if key.startswith("providers.") and key.endswith(".images") and value in ("true", "false"):
        return value == "true"
    setting = find_setting(key)
    return setting.parse(value) if setting is not None else value


def _document(path: Path) -> Any:
    import tomlkit

    load_config(path)  # a malformed file is refused here, never overwritten
    try:
        return tomlkit.parse(read_text_regular(path))
    except FileNotFoundError:
        return tomlkit.document()


def _write(doc: Any, path: Path) -> Path:
    """Check the whole new file as a later command will read it, then replace the old."""
    import tomlkit

    text = tomlkit.dumps(doc)
    parse_config(tomllib.loads(text), path)  # a bad value is refused; the file is untouched
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"))
    return path


def set_value(key: str, value: str, path: Path | None = None) -> Path:
    """Set one key (``model``, ``providers.openai.base_url``…) in the file, kept 0600."""
    import tomlkit

    path = path or config_path()
    parts = _parts(key)
    typed = _typed(key, value)
    doc = _document(path)
    table = doc
    for name in parts[:-1]:
        if name not in table:
            table[name] = tomlkit.table(is_super_table=name == "providers")
        table = table[name]
    table[parts[-1]] = typed
    return _write(doc, path)


def unset_value(key: str, path: Path | None = None) -> Path:
    """Remove one key from the file (and a table it leaves empty)."""
    path = path or config_path()
    parts = _parts(key)
    doc = _document(path)
    chain = [doc]
    for name in parts[:-1]:
        if name not in chain[-1]:
            raise UsageError(f"{key} is not set in {path}")
        chain.append(chain[-1][name])
    if parts[-1] not in chain[-1]:
        raise UsageError(f"{key} is not set in {path}")
    del chain[-1][parts[-1]]
    for depth in range(len(parts) - 1, 0, -1):  # drop the tables the removal left empty
        if len(chain[depth]) == 0:
            del chain[depth - 1][parts[depth - 1]]
    return _write(doc, path)


def get_value(key: str, flags: dict[str, Any] | None = None, path: Path | None = None) -> Resolved:
    """The value a command would use for ``key``, and where it comes from. ``flags`` are
    the command-line values a command would be given (None: not given)."""
    path = path or config_path()
    parts = _parts(key)
    raw: Any = read_config(path)
    config = parse_config(raw, path)
    if key in ENV:  # the options a command resolves: the very resolver it uses
        return resolve_setting(key, (flags or {}).get(key), config)
    setting = find_setting(key)
    if setting is not None:  # its variable, the file, its default: what a reader is given
        table = raw.get(setting.table, {}) if setting.table else raw
        value, source = section_values([setting], table, str(path)).get(setting, (None, "default"))
        return Resolved(key, value, source)
    for name in parts:
        raw = raw.get(name) if isinstance(raw, dict) else None
    if raw is not None:
        return Resolved(key, raw, f"file {path}")
    return Resolved(key, _default(parts), "default")


def _default(parts: list[str]) -> Any:
    """A provider's own base URL or key variable; nothing else has a default here."""
    if parts[0] == "providers":
        kind = next((k for k in REMOTE if k.name == parts[1]), None)
        if kind is not None and parts[2] == "base_url":
            return kind.base_url
        if kind is not None and parts[2] == "api_key_env":
            return kind.key_env
    return None


TEMPLATE = """\
# butler's config: `butler config --help` and the README's "Models and configuration".
# model = "anthropic:claude-sonnet-4-5"
# [aliases]
# fast = "openai:gpt-4o-mini"
"""


def edit(path: Path | None = None) -> Path:
    """Open the file in ``$EDITOR`` (else ``$VISUAL``, else vi), then check it. A broken file
    is reported — a usage error naming its line — and left exactly as the person wrote it."""
    path = path or config_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, TEMPLATE.encode("utf-8"))
    run_editor(path, [Path.cwd()])  # it runs with your rights: checked first
    load_config(path)
    return path
