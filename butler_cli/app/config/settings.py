"""Every setting a person can put in the config file, declared once.

A :class:`Setting` says a key's type, its default, the environment variable that may set it,
whether a command's flag and a resumed park take part in its precedence (``resolved``), and
whether `butler config set` takes it. Everything else reads this table: the file check
(:mod:`butler_cli.app.config.config_file`), the one precedence (``resolved_value``),
`config set/unset/get` and their help (:mod:`butler_cli.app.config.config_edit`). Adding a
setting is one row here plus the code that uses it. A plug-in declares its own section with a
``butler.settings`` entry point, read with the typed config
(:func:`butler_cli.app.config.config.plugin_sections`), never on the chat's first line.

Plain classes and tuples: the chat's first line reads the file through this, before any
dataclass or pathlib is worth its import.
"""

from __future__ import annotations

from typing import Any

from butler_cli.core.defaults import DEFAULT_MAX_ROUNDS, DEFAULT_POLICY, DEFAULT_SYSTEM
from butler_cli.core.setting import Setting

__all__ = ["SETTINGS", "Setting"]


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
    Setting(
        "stream",
        bool,
        True,
        help="false asks the model for every answer whole, never streamed (--no-stream)",
    ),
    Setting("sandbox.network", bool, True, help="false cuts run_command off the network"),
)

BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
#: The top-level keys, by type (the file check).
TOP_KEYS: dict[str, type[Any]] = {s.key: s.kind for s in SETTINGS if s.table is None}


#: The butler's own tables made of declared rows alone ([sandbox]): read like a plug-in's
#: section (``Config.sections``, ``ToolContext.section``), so a new key is its row plus its use.
OWN_SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(s.table for s in SETTINGS if s.table))


#: The butler's own tables (a plug-in's section may not take one of these names).
CORE_TABLES = ("providers", "aliases", "mcp", "hooks", *OWN_SECTIONS)


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
        "providers.<name>.base_url / api_key_env / api_key_file / images",
    ]
)
