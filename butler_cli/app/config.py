"""The config file, and the one resolver of the options: flags > environment > this file >
defaults (a resume puts the park's record right after the flags).

TOML at ``$BUTLER_HOME/config.toml`` when BUTLER_HOME is set, else the platform's user config
dir. It holds no secrets: for each provider a base URL and the *name* of the environment
variable with its key (keys set with `butler keys set` live elsewhere: store/stored_keys.py). A
malformed file is reported with its line and never rewritten; writing it (`config set`,
`unset`) goes through tomlkit in :mod:`butler_cli.app.config_edit`, which keeps comments.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.app.options import MODEL_ENV, RunOptions
from butler_cli.core.defaults import DEFAULT_MAX_ROUNDS, DEFAULT_POLICY, DEFAULT_SYSTEM
from butler_cli.core.errors import UsageError
from butler_cli.providers import ProviderSettings
from butler_cli.store.files import HOME_ENV, read_text_regular

if TYPE_CHECKING:
    from butler_cli.core.park import RunContext

CONFIG_FILE = "config.toml"
TOP_KEYS: dict[str, type[Any]] = {
    "model": str,
    "policy": str,
    "max_rounds": int,
    "system": str,
    "allowed_roots": list,
}
SMTP_KEYS: dict[str, type[Any]] = {
    "host": str,
    "port": int,
    "tls": str,
    "user": str,
    "password_env": str,
    "sender": str,
}
TLS_MODES = ("starttls", "ssl", "none")
PROVIDER_KEYS = {"base_url", "api_key_env", "api_key_file"}
TABLES = ("providers", "aliases", "smtp", "mcp", "sandbox", "hooks")
ENV = {
    "model": MODEL_ENV,
    "policy": "BUTLER_POLICY",
    "max_rounds": "BUTLER_MAX_ROUNDS",
    "system": "BUTLER_SYSTEM",
}
#: What an option is when no flag, park, variable or file sets it (the model has none).
DEFAULTS: dict[str, Any] = {
    "policy": DEFAULT_POLICY,
    "max_rounds": DEFAULT_MAX_ROUNDS,
    "system": DEFAULT_SYSTEM,
}


@dataclass(frozen=True)
class Config:
    values: dict[str, Any] = field(default_factory=dict)
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    #: [smtp] for send_email: host, port, tls, user, password_env (a variable NAME), sender.
    smtp: dict[str, Any] = field(default_factory=dict)
    #: [mcp.NAME]: command, args, env, governed (a list of globs, or true for the whole server),
    #: benign (globs of tools the server does not mark read-only that run without asking).
    mcp: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: [sandbox] for run_command: network (true by default; false cuts it).
    sandbox: dict[str, Any] = field(default_factory=dict)
    #: [aliases]: short names for model specs (fast = "openai:gpt-4o-mini"), for --model.
    aliases: dict[str, str] = field(default_factory=dict)
    #: [hooks]: on_park, on_done, on_error (an argv list or a URL) and timeout_s, checked
    #: here and turned into :class:`butler_cli.hooks.Hooks` where tasks run.
    hooks: dict[str, Any] = field(default_factory=dict)
    #: The file these settings were read from (it may not exist).
    path: Path | None = None

    def model_spec(self, given: str) -> str:
        """``given`` with an alias replaced by the spec it names (one level: no chains)."""
        return self.aliases.get(given, given)

    def allowed_roots(self) -> list[str] | None:
        roots = self.values.get("allowed_roots")
        return list(roots) if roots is not None else None

    def key_variables(self) -> list[str]:
        """The names of every variable the config says holds a secret (provider keys, the
        SMTP password)."""
        names = [p.api_key_env for p in self.providers.values() if p.api_key_env]
        smtp_env = self.smtp.get("password_env", "BUTLER_SMTP_PASSWORD")
        return [*names, smtp_env] if isinstance(smtp_env, str) else names

    def key_files(self) -> list[Path]:
        return [
            Path(os.path.expanduser(p.api_key_file))
            for p in self.providers.values()
            if p.api_key_file
        ]

    def remember_secrets(self) -> None:
        """Tell the masking every secret value this config points to: the values of its key
        variables (and the well-known ones), and the contents of its key files."""
        from butler_cli.store.stored_keys import stored_values
        from butler_cli.tools.redact import remember_environment_secrets, remember_secret

        remember_environment_secrets(self.key_variables())
        for key_file in self.key_files():
            with contextlib.suppress(OSError):  # an unreadable one is reported when used
                remember_secret(key_file.read_text(encoding="utf-8", errors="replace"))
        for value in stored_values():  # keys kept with `butler keys set`, masked alike
            remember_secret(value)


def config_path() -> Path:
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home).expanduser().absolute() / CONFIG_FILE
    import platformdirs

    return Path(platformdirs.user_config_dir("butler", appauthor=False)) / CONFIG_FILE


def load_config(path: Path | None = None) -> Config:
    path = path or config_path()
    config = parse_config(_read(path), path)
    config.remember_secrets()
    return config


def parse_config(raw: dict[str, Any], path: Path) -> Config:
    """Check a parsed file's settings; anything unknown or of the wrong type is a usage
    error naming the file (which is never rewritten)."""
    aliases: dict[str, str] = {}
    values: dict[str, Any] = {}
    providers: dict[str, ProviderSettings] = {}
    smtp: dict[str, Any] = {}
    mcp: dict[str, dict[str, Any]] = {}
    sandbox: dict[str, Any] = {}
    hooks: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "providers":
            if not isinstance(value, dict):
                raise _bad(path, "[providers] must be a table of provider tables")
            for name, table in value.items():
                if (
                    not isinstance(table, dict)
                    or set(table) - PROVIDER_KEYS
                    or not all(isinstance(v, str) for v in table.values())
                ):
                    raise _bad(
                        path, f"[providers.{name}] takes only {', '.join(sorted(PROVIDER_KEYS))}"
                    )
                providers[name] = ProviderSettings(
                    table.get("base_url"), table.get("api_key_env"), table.get("api_key_file")
                )
        elif key == "aliases":
            if not isinstance(value, dict) or not all(
                isinstance(v, str) and ":" in v for v in value.values()
            ):
                raise _bad(path, '[aliases] maps a name to a model spec: fast = "openai:gpt-4o"')
            aliases = dict(value)
        elif key == "smtp":
            smtp = _smtp(value, path)
        elif key == "mcp":
            mcp = _mcp(value, path)
        elif key == "sandbox":
            if not isinstance(value, dict) or set(value) - {"network"}:
                raise _bad(path, "[sandbox] takes network = true or false")
            if not isinstance(value.get("network", True), bool):
                raise _bad(path, "sandbox.network must be true or false")
            sandbox = dict(value)
        elif key == "hooks":
            hooks = _hooks(value, path)
        elif key in TOP_KEYS:
            if not isinstance(value, TOP_KEYS[key]) or isinstance(value, bool):
                raise _bad(path, f"{key} must be a {TOP_KEYS[key].__name__}")
            if key == "allowed_roots" and not all(isinstance(v, str) for v in value):
                raise _bad(path, "allowed_roots must be a list of folder paths")
            values[key] = value
        else:
            raise _bad(
                path,
                f"unknown setting '{key}'; known: {', '.join([*TOP_KEYS, *TABLES])}",
            )
    return Config(values, providers, smtp, mcp, sandbox, aliases, hooks, path)


def _hooks(value: Any, path: Path) -> dict[str, Any]:
    from butler_cli.hooks import Hooks  # only when there is a [hooks] section

    try:
        Hooks.from_table(value)
    except UsageError as exc:
        raise _bad(path, exc.message) from exc
    return dict(value)


def _mcp(value: Any, path: Path) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise _bad(path, "[mcp] must hold one [mcp.NAME] table per server")
    for name, table in value.items():
        where = f"[mcp.{name}]"
        if not isinstance(table, dict) or not (
            isinstance(table.get("command"), str) ^ isinstance(table.get("url"), str)
        ):
            raise _bad(path, f'{where} needs command = "program" (stdio) or url = "http…" (HTTP)')
        if set(table) - {"command", "url", "args", "env", "governed", "benign"}:
            raise _bad(path, f"{where} takes command or url, args, env, governed, benign")
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


def _smtp(value: Any, path: Path) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) - set(SMTP_KEYS):
        raise _bad(path, f"[smtp] takes {', '.join(SMTP_KEYS)}")
    for key, kind in SMTP_KEYS.items():
        if key in value and (not isinstance(value[key], kind) or isinstance(value[key], bool)):
            raise _bad(path, f"smtp.{key} must be a {kind.__name__}")
    if value.get("tls", "starttls") not in TLS_MODES:
        raise _bad(path, f"smtp.tls must be one of {', '.join(TLS_MODES)}")
    return dict(value)


def _read(path: Path) -> dict[str, Any]:
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


def _bad(path: Path, what: str) -> UsageError:
    return UsageError(f"config file {path}: {what} (it was left as it is)")


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
    """The one precedence, for one of ``model``, ``policy``, ``max_rounds``, ``system``: the
    flag, else what the park recorded (a resume), else the environment variable (when set and
    not empty), else the config file, else the default. A variable that is not a number where
    one is needed is a usage error, whichever command reads it."""
    if flag is not None:
        return Resolved(key, flag, "flag")
    if recorded is not None and getattr(recorded, key) is not None:
        return Resolved(key, getattr(recorded, key), "park")
    env = ENV[key]
    from_env = os.environ.get(env)
    if from_env:
        if key == "max_rounds":
            if not from_env.isdigit():
                raise UsageError(f"{env} must be a whole number, not {from_env!r}")
            return Resolved(key, int(from_env), f"env {env}")
        return Resolved(key, from_env, f"env {env}")
    if key in config.values:
        return Resolved(key, config.values[key], f"file {config.path or config_path()}")
    return Resolved(key, DEFAULTS.get(key), "default")


def resolve_options(
    opts: RunOptions, config: Config, recorded: RunContext | None = None
) -> RunOptions:
    """What a command or the chat runs with: every option through :func:`resolve_setting`.
    ``recorded``: the context of the park being resumed (its profile, policy file, base URL
    and model options apply too, unless a flag gives them)."""
    chosen: dict[str, Any] = {
        key: resolve_setting(key, getattr(opts, key), config, recorded).value for key in ENV
    }
    if recorded is not None:
        chosen |= {
            "profile": opts.profile or recorded.profile,
            "policy_file": opts.policy_file or recorded.policy_file,
            "base_url": opts.base_url or recorded.base_url,
            # the park's options, with any given now on top
            "model_options": {**recorded.model_options, **(opts.model_options or {})},
        }
    return replace(opts, **chosen)
