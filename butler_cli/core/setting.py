"""One setting of the config file, declared once: :class:`Setting`.

The butler's own keys are rows of :mod:`butler_cli.app.config.settings`; a plug-in declares its
section's keys with the same class (exported by :mod:`butler_cli.api`). Every reader — the
file check, the precedence, `config set/get/show`, what a plug-in is given — derives from the
row. A plain class (no dataclass): the chat's first line reads the file through it.
"""

from __future__ import annotations

from typing import Any

from butler_cli.core.errors import UsageError

#: How a kind is named in a one-line error.
_KIND_NAMES: dict[type[Any], str] = {
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    list: "a list of strings",
    str: "a string",
}


class Setting:
    """One key of the config file: ``model``, ``sandbox.network``, a plug-in's ``host``…

    ``kind`` is ``str``, ``int``, ``float``, ``bool`` or ``list`` (of strings); ``env`` the
    variable that sets it (it comes before the file); ``choices`` the only values a string may
    take; ``above`` what a number must exceed; ``secret_name`` says its value is the NAME of a
    variable holding a secret (that variable's value is masked wherever the butler shows or
    keeps text).
    """

    __slots__ = (
        "key",
        "kind",
        "default",
        "env",
        "resolved",
        "settable",
        "help",
        "choices",
        "above",
        "secret_name",
    )

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
        choices: tuple[str, ...] = (),
        above: float | None = None,
        secret_name: bool = False,
    ) -> None:
        if kind not in _KIND_NAMES:
            raise TypeError(f"setting {key!r}: kind must be one of str, int, float, bool, list")
        self.key = key
        self.kind = kind
        self.default = default
        self.env = env
        #: a command's flag and a resumed park's record come before env, file and default
        self.resolved = resolved
        #: `butler config set KEY VALUE` takes it
        self.settable = settable
        self.help = help
        self.choices = tuple(choices)
        #: a number must be more than this (a timeout of 0 is no timeout)
        self.above = above
        self.secret_name = secret_name

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, {self.kind.__name__})"

    @property
    def table(self) -> str | None:
        """The table it lives in (``smtp`` for ``smtp.port``), None at the top level."""
        return self.key.split(".", 1)[0] if "." in self.key else None

    @property
    def name(self) -> str:
        """Its name inside its table (``port`` for ``smtp.port``)."""
        return self.key.rsplit(".", 1)[-1]

    def within(self, table: str) -> Setting:
        """This declaration as the key ``table.name`` (a plug-in declares bare names; its
        section's name is its entry point's)."""
        return Setting(
            f"{table}.{self.key}",
            self.kind,
            self.default,
            env=self.env,
            settable=self.settable,
            help=self.help,
            choices=self.choices,
            above=self.above,
            secret_name=self.secret_name,
        )

    def parse(self, text: str, given_as: str | None = None) -> Any:
        """A value given as text (`config set`, or the variable ``given_as``) as this key's
        type; a usage error naming where it was given when it is not one."""
        where = given_as or self.key
        value: Any = text
        if self.kind is int:
            if not text.isdigit():
                raise UsageError(f"{where} must be a whole number, not {text!r}")
            value = int(text)
        elif self.kind is float:
            try:
                value = float(text)
            except ValueError:
                raise UsageError(f"{where} must be a number, not {text!r}") from None
        elif self.kind is bool:
            if text.lower() not in ("true", "false"):
                raise UsageError(f"{where} must be true or false")
            value = text.lower() == "true"
        elif self.kind is list:
            value = [p.strip() for p in text.split(",") if p.strip()]
        problem = self.problem(value)
        if problem:
            raise UsageError(f"{where} {problem}")
        return value

    def problem(self, value: Any) -> str | None:
        """What is wrong with a value read from the file (``must be a whole number``), or
        None when it has this key's type (a bool is no number) and is one of its choices."""
        if self.kind is not bool and isinstance(value, bool):
            ok = False
        elif self.kind is list:
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        elif self.kind is float:
            ok = isinstance(value, int | float)
        else:
            ok = isinstance(value, self.kind)
        if not ok:
            return f"must be {_KIND_NAMES[self.kind]}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(self.choices)}"
        if self.above is not None and value <= self.above:
            return f"must be more than {self.above:g}"
        return None

    def accepts(self, value: Any) -> bool:
        """Whether a value read from the file is right for this key (:meth:`problem`)."""
        return self.problem(value) is None
