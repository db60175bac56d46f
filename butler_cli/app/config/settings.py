"""Every setting a person can put in the config file, declared once.

A :class:`Setting` says a key's type, its default, the environment variable that may set it,
whether a command's flag and a resumed park take part in its precedence (``resolved``), and
whether `butler config set` takes it. Everything else reads this table: the file check
(:mod:`butler_cli.app.config.config_file`), the one precedence (``resolved_value``),
`config set/unset/get` and their help (:mod:`butler_cli.app.config.config_edit`). Adding a
setting is one row here plus the code that uses it.

Plain classes and tuples: the chat's first line reads the file through this, before any
dataclass or pathlib is worth its import.
"""

from __future__ import annotations

import re
from typing import Any

from butler_cli.core.defaults import DEFAULT_MAX_ROUNDS, DEFAULT_POLICY, DEFAULT_SYSTEM
from butler_cli.core.errors import UsageError
from butler_cli.core.setting import Setting

__all__ = ["SETTINGS", "Setting", "plugin_sections", "find_setting"]


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "model",
        str,
        env="BUTLER_MODEL",
        resolved=True,
        help="the model, as provider:name or an alias",
    ),
    Setting(
        "policy",
        str,
        DEFAULT_POLICY,
        env="BUTLER_POLICY",
        resolved=True,
        help="the policy that classifies governed calls",
    ),
    Setting(
        "max_rounds",
        int,
        DEFAULT_MAX_ROUNDS,
        env="BUTLER_MAX_ROUNDS",
        resolved=True,
        help="rounds of tool calls a task may take",
    ),
    Setting(
        "system",
        str,
        DEFAULT_SYSTEM,
        env="BUTLER_SYSTEM",
        resolved=True,
        help="your own persona for the system prompt",
    ),
    Setting("allowed_roots", list, help="folders the tools may reach, comma-separated"),
    Setting("sandbox.network", bool, True, help="false cuts run_command off the network"),
)

BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
#: The top-level keys, by type (the file check).
TOP_KEYS: dict[str, type[Any]] = {s.key: s.kind for s in SETTINGS if s.table is None}
#: The butler's own tables (a plug-in's section may not take one of these names).
CORE_TABLES = ("providers", "aliases", "mcp", "sandbox", "hooks")


def table_rows(table: str) -> tuple[Setting, ...]:
    """The butler's own keys of a table, e.g. ``table_rows("sandbox")``."""
    return tuple(s for s in SETTINGS if s.table == table)


#: The options every command resolves (flag > park > env > file > default), by variable.
ENV: dict[str, str] = {s.key: s.env for s in SETTINGS if s.resolved and s.env}
#: What an option is when nothing sets it.
DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS if s.default is not None}
#: The keys `config set`, `unset` and `get` take, for their help and errors.
KEY_HELP = ", ".join(
    [s.key for s in SETTINGS if s.settable and s.table is None]
    + sorted({f"{s.table}.<field>" for s in SETTINGS if s.settable and s.table})
    + [
        "<section>.<field> of a plug-in's section (`butler config show`)",
        "aliases.<name>",
        "providers.<name>.base_url / api_key_env / api_key_file",
    ]
)

#: The entry point group where a plug-in declares its config section: the entry point's name
#: is the section's (``[smtp]``), its target a sequence of :class:`Setting` (bare names).
GROUP = "butler.settings"
_SECTION_NAME = re.compile(r"[a-z][a-z0-9_-]{0,47}")
_sections: dict[str, tuple[Setting, ...]] | None = None


def plugin_sections() -> dict[str, tuple[Setting, ...]]:
    """Every plug-in's section, by name, each key as ``section.name`` — read once per process
    from the ``butler.settings`` entry points (never on the chat's first line). A declaration
    that cannot be loaded, is not a sequence of settings, or takes a name the butler or another
    plug-in uses is a usage error naming it: the butler does not start on a half-read file."""
    global _sections
    if _sections is None:
        from butler_cli.entry_points import in_group

        found: dict[str, tuple[Setting, ...]] = {}
        targets: dict[str, str] = {}
        for ep in sorted(in_group(GROUP), key=lambda ep: ep.name):
            if targets.get(ep.name) == ep.value:
                continue  # the same package seen twice on the path (user and system site)
            found[ep.name] = _declared(ep.name, ep.value, ep.load, found)
            targets[ep.name] = ep.value
        _sections = found
    return _sections


def _declared(
    name: str, target: str, load: Any, taken: dict[str, tuple[Setting, ...]]
) -> tuple[Setting, ...]:
    where = f"settings plug-in '{name}' = {target}"
    if not _SECTION_NAME.fullmatch(name) or name in CORE_TABLES or name in BY_KEY:
        raise UsageError(f"{where}: '{name}' cannot name a section", code="settings_plugin")
    if name in taken:
        raise UsageError(f"{where}: section [{name}] is declared twice", code="settings_plugin")
    try:
        declared = load()
    except Exception as exc:
        raise UsageError(
            f"{where} failed: {type(exc).__name__}: {exc}"[:400], code="settings_plugin"
        ) from exc
    rows = tuple(declared) if isinstance(declared, list | tuple) else ()
    names = [s.key for s in rows if isinstance(s, Setting)]
    if not rows or len(names) != len(rows) or len(set(names)) != len(names):
        raise UsageError(f"{where}: not a list of distinct Setting", code="settings_plugin")
    if any(not re.fullmatch(r"[a-z][a-z0-9_]{0,47}", n) for n in names):
        raise UsageError(f"{where}: a setting's name is a-z, 0-9 and _", code="settings_plugin")
    for row in rows:
        problem = row.problem(row.default) if row.default is not None else None
        if problem:
            raise UsageError(f"{where}: the default of {row.key} {problem}", code="settings_plugin")
    return tuple(s.within(name) for s in rows)


def find_setting(key: str) -> Setting | None:
    """The declaration of ``key``: the butler's own, else a plug-in section's."""
    if key in BY_KEY:
        return BY_KEY[key]
    table = key.split(".", 1)[0] if "." in key else None
    if table is None or table in CORE_TABLES:
        return None
    return next((s for s in plugin_sections().get(table, ()) if s.key == key), None)
