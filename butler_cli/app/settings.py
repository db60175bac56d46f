"""Every setting a person can put in the config file, declared once.

A :class:`Setting` says a key's type, its default, the environment variable that may set it,
whether a command's flag and a resumed park take part in its precedence (``resolved``), and
whether `butler config set` takes it. Everything else reads this table: the file check
(:mod:`butler_cli.app.config_file`), the one precedence (``resolved_value``), `config
set/unset/get` and their help (:mod:`butler_cli.app.config_edit`). Adding a setting is one row
here plus the code that uses it.

Plain classes and tuples: the chat's first line reads the file through this, before any
dataclass or pathlib is worth its import.
"""

from __future__ import annotations

from typing import Any

from butler_cli.core.defaults import DEFAULT_MAX_ROUNDS, DEFAULT_POLICY, DEFAULT_SYSTEM


class Setting:
    """One key of the config file: ``model``, ``smtp.port``, ``sandbox.network``…"""

    __slots__ = ("key", "kind", "default", "env", "resolved", "settable", "help")

    def __init__(
        self,
        key: str,
        kind: type[Any],
        default: Any = None,
        *,
        env: str | None = None,
        resolved: bool = False,
        settable: bool = True,
        help: str = "",
    ) -> None:
        self.key = key
        self.kind = kind
        self.default = default
        self.env = env
        #: a command's flag and a resumed park's record come before env, file and default
        self.resolved = resolved
        #: `butler config set KEY VALUE` takes it
        self.settable = settable
        self.help = help

    @property
    def table(self) -> str | None:
        """The table it lives in (``smtp`` for ``smtp.port``), None at the top level."""
        return self.key.split(".", 1)[0] if "." in self.key else None

    @property
    def name(self) -> str:
        """Its name inside its table (``port`` for ``smtp.port``)."""
        return self.key.rsplit(".", 1)[-1]

    def parse(self, text: str, given_as: str | None = None) -> Any:
        """A value given as text (`config set`, or the variable ``given_as``) as this key's
        type; a usage error naming where it was given when it is not one."""
        from butler_cli.core.errors import UsageError

        if self.kind is int:
            if not text.isdigit():
                raise UsageError(f"{given_as or self.key} must be a whole number, not {text!r}")
            return int(text)
        if self.kind is bool:
            if text.lower() not in ("true", "false"):
                raise UsageError(f"{given_as or self.key} must be true or false")
            return text.lower() == "true"
        if self.kind is list:
            return [p.strip() for p in text.split(",") if p.strip()]
        return text

    def accepts(self, value: Any) -> bool:
        """Whether a value read from the file has this key's type (a bool is no number)."""
        if self.kind is not bool and isinstance(value, bool):
            return False
        if self.kind is list:
            return isinstance(value, list) and all(isinstance(v, str) for v in value)
        return isinstance(value, self.kind)


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
    Setting("smtp.host", str, help="the SMTP server for send_email"),
    Setting("smtp.port", int),
    Setting("smtp.tls", str, "starttls", help="starttls, ssl or none"),
    Setting("smtp.user", str),
    Setting("smtp.password_env", str, "BUTLER_SMTP_PASSWORD", help="the variable's NAME"),
    Setting("smtp.sender", str),
    Setting("sandbox.network", bool, True, help="false cuts run_command off the network"),
)

BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
#: The top-level keys, by type (the file check).
TOP_KEYS: dict[str, type[Any]] = {s.key: s.kind for s in SETTINGS if s.table is None}
#: A table's keys by type, e.g. ``table_keys("smtp")``.


def table_keys(table: str) -> dict[str, type[Any]]:
    return {s.name: s.kind for s in SETTINGS if s.table == table}


#: The options every command resolves (flag > park > env > file > default), by variable.
ENV: dict[str, str] = {s.key: s.env for s in SETTINGS if s.resolved and s.env}
#: What an option is when nothing sets it.
DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS if s.default is not None}
#: The keys `config set`, `unset` and `get` take, for their help and errors.
KEY_HELP = ", ".join(
    [s.key for s in SETTINGS if s.settable and s.table is None]
    + sorted({f"{s.table}.<field>" for s in SETTINGS if s.settable and s.table})
    + ["aliases.<name>", "providers.<name>.base_url / api_key_env / api_key_file"]
)
