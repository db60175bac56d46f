"""The config file, and the one resolver of the options: flags > environment > this file >
defaults (a resume puts the park's record right after the flags).

TOML at ``$BUTLER_HOME/config.toml`` when BUTLER_HOME is set, else the platform's user config
dir. It holds no secrets: for each provider a base URL and the *name* of the environment
variable with its key (keys set with `butler keys set` live elsewhere: store/stored_keys.py). A
malformed file is reported with its line and never rewritten; writing it (`config set`,
`unset`) goes through tomlkit in :mod:`butler_cli.app.config.config_edit`, which keeps
comments. Reading and checking the file, and the precedence itself, are
:mod:`butler_cli.app.config.config_file` (plain values, cheap: the chat's first line needs
that alone); this module makes the typed :class:`Config` and :class:`Resolved` from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.app.config.config_file import (
    check_config,
    config_file,
    key_sources,
    read_config,
    remember_secrets,
    resolved_value,
)
from butler_cli.app.config.options import recorded_options
from butler_cli.app.config.settings import BY_KEY, CORE_TABLES, ENV, Setting
from butler_cli.core.errors import UsageError
from butler_cli.core.provider_settings import ProviderSettings
from butler_cli.entry_points import in_group

if TYPE_CHECKING:
    from butler_cli.app.config.options import RunOptions
    from butler_cli.core.park import RunContext


@dataclass(frozen=True)
class Config:
    values: dict[str, Any] = field(default_factory=dict)
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    #: The plug-ins' sections (``butler.settings``), each key's value in effect: env, else
    #: the file, else its default. [smtp] (send_email's) is one.
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: [mcp.NAME]: command, args, env, governed (a list of globs, or true for the whole server),
    #: benign (globs of tools the server does not mark read-only that run without asking).
    mcp: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: [aliases]: short names for model specs (fast = "openai:gpt-4o-mini"), for --model.
    aliases: dict[str, str] = field(default_factory=dict)
    #: [hooks]: on_park, on_done, on_error (an argv list or a URL) and timeout_s, checked
    #: here and turned into :class:`butler_cli.hooks.Hooks` where tasks run.
    hooks: dict[str, Any] = field(default_factory=dict)
    #: The file these settings were read from (it may not exist).
    path: Path | None = None
    #: The variables the plug-ins' sections name as holding a secret (masked).
    secret_names: tuple[str, ...] = ()

    def model_spec(self, given: str) -> str:
        """``given`` with an alias replaced by the spec it names (one level: no chains)."""
        return self.aliases.get(given, given)

    def streams(self, opts: RunOptions) -> bool:
        """Whether model answers are streamed: not with --no-stream, nor `stream = false`."""
        return not opts.no_stream and self.values.get("stream", True) is not False

    def allowed_roots(self) -> list[str] | None:
        roots = self.values.get("allowed_roots")
        return list(roots) if roots is not None else None

    def _key_sources(self) -> tuple[list[str], list[str]]:
        return key_sources(
            ((p.api_key_env, p.api_key_file) for p in self.providers.values()),
            self.secret_names,
        )

    def key_variables(self) -> list[str]:
        """The names of every variable the config says holds a secret (provider keys, those
        the plug-ins' sections name: the SMTP password)."""
        return self._key_sources()[0]

    def key_files(self) -> list[Path]:
        return [Path(name) for name in self._key_sources()[1]]

    def remember_secrets(self) -> None:
        """Tell the masking every secret value this config points to: the values of its key
        variables (and the well-known ones), the contents of its key files and the keys kept
        with `butler keys set` (:func:`butler_cli.app.config.config_file.remember_secrets`)."""
        remember_secrets(*self._key_sources())


def config_path() -> Path:
    return Path(config_file())


def load_config(path: Path | None = None) -> Config:
    path = path or config_path()
    config = parse_config(read_config(path), path)
    config.remember_secrets()
    return config


def parse_config(raw: dict[str, Any], path: Path) -> Config:
    """Check a parsed file's settings (:func:`~butler_cli.app.config.config_file.check_config`: a
    usage error naming the file, which is never rewritten) into a :class:`Config`."""
    checked = check_config(raw, path, plugin_sections())
    providers = {
        name: ProviderSettings(
            table.get("base_url"),
            table.get("api_key_env"),
            table.get("api_key_file"),
            images=table.get("images") != "false",
        )
        for name, table in checked.providers.items()
    }
    return Config(
        checked.values,
        providers,
        checked.sections,
        checked.mcp,
        checked.aliases,
        checked.hooks,
        path,
        tuple(checked.secret_names),
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


@dataclass(frozen=True)
class Resolved:
    """An option's value and where it came from: ``flag``, ``park``, ``env VARIABLE``,
    ``file PATH`` or ``default``."""

    key: str
    value: Any
    source: str


def resolve_setting(
    key: str, flag: Any, config: Config, recorded: RunContext | None = None
) -> Resolved:
    """The one precedence (:func:`~butler_cli.app.config.config_file.resolved_value`), for one of
    ``model``, ``policy``, ``max_rounds``, ``system``: the flag, else what the park recorded (a
    resume), else the environment variable (when set and not empty), else the config file,
    else the default."""
    file = str(config.path) if config.path is not None else config_file()
    value, source = resolved_value(key, flag, config.values, file, recorded)
    return Resolved(key, value, source)


def resolve_options(
    opts: RunOptions, config: Config, recorded: RunContext | None = None
) -> RunOptions:
    """What a command or the chat runs with: every option that is a setting through
    :func:`resolve_setting`. ``recorded``: the context of the park being resumed (every
    other option a park records applies too, unless a flag gives it; model options merge,
    those given now on top)."""
    chosen: dict[str, Any] = {
        key: resolve_setting(key, getattr(opts, key), config, recorded).value for key in ENV
    }
    for name in recorded_options() if recorded is not None else ():
        if name not in chosen:
            chosen[name] = _given_or_kept(getattr(opts, name), getattr(recorded, name))
    return replace(opts, **chosen)


def _given_or_kept(given: Any, kept: Any) -> Any:
    """A recorded option: the flag's value, else the park's (a mapping: the park's with the
    flag's keys on top). A flag left as it is when not given (None, "", a switch off) is not
    given."""
    if isinstance(kept, dict):
        return {**kept, **(given or {})}
    return kept if given is None or given == "" or given is False else given
