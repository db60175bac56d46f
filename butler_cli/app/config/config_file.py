"""The config file read and checked into plain values: no dataclass, no pathlib, no provider
table, so the chat's first prompt waits on no more than this (its first line names the model
and policy, and a broken file stops it there). :mod:`butler_cli.app.config.config` makes the typed
:class:`~butler_cli.app.config.config.Config` from what this checks; the format is described there.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from butler_cli.app.config.settings import (
    BY_KEY,
    CORE_TABLES,
    DEFAULTS,
    ENV,
    OWN_SECTIONS,
    TOP_KEYS,
    Setting,
    table_rows,
)
from butler_cli.core.errors import UsageError
from butler_cli.store.files import HOME_ENV, home_dir, read_text_regular, spelt_as_path
from butler_cli.tools.redact import remember_environment_secrets, remember_secret

if TYPE_CHECKING:
    from pathlib import Path

    from butler_cli.core.park import RunContext

CONFIG_FILE = "config.toml"
PROVIDER_KEYS = {"base_url", "api_key_env", "api_key_file", "images"}
MODEL_ENV = ENV["model"]
#: The plug-ins' sections as :func:`butler_cli.app.config.settings.plugin_sections` gives them.
Declared = Mapping[str, tuple[Setting, ...]]


class Checked:
    """A config file's settings, checked: the top-level values and each table as plain data.
    (A plain class: a NamedTuple or a dataclass costs a millisecond to make, before the
    chat's first prompt.)"""

    __slots__ = (
        "values",
        "providers",
        "sections",
        "mcp",
        "aliases",
        "hooks",
        "secret_names",
    )

    def __init__(
        self,
        values: dict[str, Any],
        providers: dict[str, dict[str, str]],
        sections: dict[str, dict[str, Any]],
        mcp: dict[str, dict[str, Any]],
        aliases: dict[str, str],
        hooks: dict[str, Any],
        secret_names: list[str],
    ) -> None:
        self.values = values
        self.providers = providers
        #: Each section's values in effect (env > file > default), by section: the butler's
        #: own made of declared rows alone ([sandbox]), then the plug-ins'.
        self.sections = sections
        self.mcp = mcp
        self.aliases = aliases
        self.hooks = hooks
        #: The variables the plug-ins' sections name as holding a secret.
        self.secret_names = secret_names

    def key_sources(self) -> tuple[list[str], list[str]]:
        """See :func:`key_sources`."""
        return key_sources(
            ((t.get("api_key_env"), t.get("api_key_file")) for t in self.providers.values()),
            self.secret_names,
        )


def config_file() -> str:
    """``str(config_path())``, made without pathlib (the chat's first prompt reads the
    config): under ``$BUTLER_HOME`` when it is set, else in the user config dir."""
    if os.environ.get(HOME_ENV):
        return os.path.join(home_dir(), CONFIG_FILE)
    import platformdirs

    folder = platformdirs.user_config_dir("butler", appauthor=False)
    return spelt_as_path(os.path.join(folder, CONFIG_FILE))


def check_config(
    raw: dict[str, Any], path: str | Path, declared: Declared | None = None
) -> Checked:
    """Check a parsed file's settings; anything unknown or of the wrong type is a usage
    error naming the file (which is never rewritten). ``declared``: the plug-ins' sections
    (:func:`~butler_cli.app.config.settings.plugin_sections`); None — the chat's first line, which
    loads no plug-in — leaves a table that is not the butler's own for the full read, which
    comes before any turn runs."""
    aliases: dict[str, str] = {}
    values: dict[str, Any] = {}
    providers: dict[str, dict[str, str]] = {}
    tables: dict[str, dict[str, Any]] = {}
    mcp: dict[str, dict[str, Any]] = {}
    hooks: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "providers":
            if not isinstance(value, dict):
                raise _bad(path, "[providers] must be a table of provider tables")
            for name, table in value.items():
                if (
                    not isinstance(table, dict)
                    or set(table) - PROVIDER_KEYS
                    or not all(
                        isinstance(v, bool if k == "images" else str) for k, v in table.items()
                    )
                ):
                    raise _bad(
                        path,
                        f"[providers.{name}] takes only {', '.join(sorted(PROVIDER_KEYS))} "
                        "(images = true or false; the others text)",
                    )
                # kept as text like the others ("true"/"false"): ProviderSettings reads it
                providers[name] = {
                    k: str(v).lower() if k == "images" else v for k, v in table.items()
                }
        elif key == "aliases":
            if not isinstance(value, dict) or not all(
                isinstance(v, str) and ":" in v for v in value.values()
            ):
                raise _bad(path, '[aliases] maps a name to a model spec: fast = "openai:gpt-4o"')
            aliases = dict(value)
        elif key == "mcp":
            mcp = _mcp(value, path)
        elif key in OWN_SECTIONS:
            tables[key] = _table(key, table_rows(key), value, path)
        elif key == "hooks":
            hooks = _hooks(value, path)
        elif key in TOP_KEYS:
            problem = BY_KEY[key].problem(value)
            if problem:
                raise _bad(path, f"{key} {problem}")
            values[key] = value
        elif declared is not None and key in declared:
            tables[key] = _table(key, declared[key], value, path)
        elif declared is None and isinstance(value, dict):
            continue  # a plug-in's section, perhaps: checked by the full read
        else:
            known = [*TOP_KEYS, *CORE_TABLES, *(declared or ())]
            raise _bad(path, f"unknown setting '{key}'; known: {', '.join(known)}")
    sections: dict[str, dict[str, Any]] = {}
    secret_names: list[str] = []
    own = {name: table_rows(name) for name in OWN_SECTIONS}
    for name, rows in {**own, **(declared or {})}.items():
        found = section_values(rows, tables.get(name, {}), str(path))
        sections[name] = {row.name: value for row, (value, _) in found.items()}
        secret_names += [v for row, (v, _) in found.items() if row.secret_name and v]
    return Checked(values, providers, sections, mcp, aliases, hooks, secret_names)


def section_values(
    rows: Iterable[Setting], table: Mapping[str, Any], file: str
) -> dict[Setting, tuple[Any, str]]:
    """A section's values in effect, each with where it came from: the key's variable (when
    set and not empty), else the file's ``table``, else its default (a key with none of them
    is left out)."""
    found: dict[Setting, tuple[Any, str]] = {}
    for row in rows:
        from_env = os.environ.get(row.env) if row.env else None
        if row.env and from_env:
            found[row] = (row.parse(from_env, row.env), f"env {row.env}")
        elif row.name in table:
            found[row] = (table[row.name], f"file {file}")
        elif row.default is not None:
            found[row] = (row.default, "default")
    return found


def _hooks(value: Any, path: str | Path) -> dict[str, Any]:
    from butler_cli.hooks import Hooks  # only when there is a [hooks] section

    try:
        Hooks.from_table(value)
    except UsageError as exc:
        raise _bad(path, exc.message) from exc
    return dict(value)


#: What an [mcp.NAME] table may hold.
MCP_KEYS = ("command", "url", "args", "env", "governed", "benign", "start_timeout", "sandbox")


def _mcp(value: Any, path: str | Path) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise _bad(path, "[mcp] must hold one [mcp.NAME] table per server")
    for name, table in value.items():
        where = f"[mcp.{name}]"
        if not isinstance(table, dict) or not (
            isinstance(table.get("command"), str) ^ isinstance(table.get("url"), str)
        ):
            raise _bad(path, f'{where} needs command = "program" (stdio) or url = "http…" (HTTP)')
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,48}", name):
            raise _bad(path, f"{where}: a server's name is letters, digits, _ and - (1 to 48)")
        if set(table) - set(MCP_KEYS):
            raise _bad(path, f"{where} takes {', '.join(MCP_KEYS)}")
        timeout = table.get("start_timeout", 1)
        number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
        if not number or not 0 < timeout <= 600:
            raise _bad(path, f"{where} start_timeout must be a number of seconds (0 to 600)")
        if not isinstance(table.get("sandbox", True), bool):
            raise _bad(path, f"{where} sandbox must be true or false")
        benign = table.get("benign", [])
        if not (isinstance(benign, list) and all(isinstance(g, str) for g in benign)):
            raise _bad(path, f"{where} benign must be a list of tool globs")
        args, env, governed = table.get("args", []), table.get("env", {}), table.get("governed", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise _bad(path, f"{where} args must be a list of strings")
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise _bad(path, f"{where} env must be a table of strings")
        if governed is not True and not (
            isinstance(governed, list) and all(isinstance(g, str) for g in governed)
        ):
            raise _bad(path, f"{where} governed must be true or a list of tool globs")
    return dict(value)


def _table(name: str, rows: Iterable[Setting], value: Any, path: str | Path) -> dict[str, Any]:
    """A settings table (``[sandbox]``, a plug-in's ``[smtp]``): only its declared keys, each
    of its type."""
    by_name = {row.name: row for row in rows}
    if not isinstance(value, dict) or set(value) - set(by_name):
        raise _bad(path, f"[{name}] takes {', '.join(by_name)}")
    for key, row in by_name.items():
        problem = row.problem(value[key]) if key in value else None
        if problem:
            raise _bad(path, f"{row.key} {problem}")
    return dict(value)


def _bad(path: str | Path, what: str) -> UsageError:
    return UsageError(f"config file {path}: {what} (it was left as it is)")


def read_config(path: str | Path) -> dict[str, Any]:
    """The file parsed, or {} when there is none; unreadable or malformed: a usage error."""
    try:
        text = read_text_regular(path)  # a FIFO in its place is named, never waited on
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"config file {path} cannot be read: {exc}") from exc
    import tomllib  # only when there is a file: the chat's first prompt waits on this

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is malformed: {exc} (it was left as it is)") from exc


def key_sources(
    providers: Iterable[tuple[str | None, str | None]], secret_names: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(the names of every variable the config says holds a secret — provider keys, those a
    plug-in's section names (the SMTP password) —, the key files it names, ``~`` expanded),
    from each provider's (api_key_env, api_key_file)."""
    names: list[str] = []
    files: list[str] = []
    for key_env, key_file in providers:
        if key_env:
            names.append(key_env)
        if key_file:
            files.append(os.path.expanduser(key_file))
    return [*names, *secret_names], files


def remember_secrets(names: list[str], files: list[str], *, stored_keys: bool = True) -> None:
    """Tell the masking every secret value a config points to: the values of its key
    variables (and the well-known ones), the contents of its key files and, unless
    ``stored_keys`` is False, the keys kept with `butler keys set`."""
    remember_environment_secrets(names)
    for key_file in files:
        # an unreadable one is reported when used
        with (
            contextlib.suppress(OSError),
            open(key_file, encoding="utf-8", errors="replace") as f,
        ):
            remember_secret(f.read())
    if stored_keys:
        from butler_cli.store.stored_keys import stored_values

        for value in stored_values():  # keys kept with `butler keys set`, masked alike
            remember_secret(value)


def resolved_value(
    key: str,
    flag: Any,
    values: Mapping[str, Any],
    file: str,
    recorded: RunContext | None = None,
) -> tuple[Any, str]:
    """The one precedence, for one of ``model``, ``policy``, ``max_rounds``, ``system``: the
    flag, else what the park recorded (a resume), else the environment variable (when set and
    not empty), else the config file's ``values`` (read from ``file``), else the default — as
    (value, where it came from: ``flag``, ``park``, ``env VARIABLE``, ``file PATH`` or
    ``default``). A variable that is not a number where one is needed is a usage error,
    whichever command reads it. (:func:`butler_cli.app.config.config.resolve_setting` gives it
    typed.)
    """
    if flag is not None:
        return flag, "flag"
    if recorded is not None and getattr(recorded, key) is not None:
        return getattr(recorded, key), "park"
    env = ENV[key]
    from_env = os.environ.get(env)
    if from_env:
        return BY_KEY[key].parse(from_env, env), f"env {env}"
    if key in values:
        return values[key], f"file {file}"
    return DEFAULTS.get(key), "default"


def chosen_options(given: Mapping[str, Any], *, stored_keys: bool = True) -> dict[str, Any]:
    """Model, policy, system and max_rounds as ``resolve_options(RunOptions(**given),
    load_config())`` resolves them (``given``: the flags, None where none), the config file's
    secrets handed to the masking alike — without making a Config or a RunOptions (each a
    dataclass: a millisecond or two to make), for the chat's first line. ``stored_keys``
    False leaves out the keys kept with `butler keys set` (platformdirs, the keys file, maybe
    the keyring): the chat's butler reads the config again with them before any turn runs."""
    path = config_file()
    checked = check_config(read_config(path), path)
    remember_secrets(*checked.key_sources(), stored_keys=stored_keys)
    return {key: resolved_value(key, given.get(key), checked.values, path)[0] for key in ENV}
