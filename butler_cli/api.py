"""The plug-in contract: everything a policy or tool plug-in author imports, from one place.

A **policy** (``butler.policies`` entry point, ``module:attr`` or ``file.py:attr``) is a callable
``classify(name, args)`` or an object with a ``classify`` method (see :class:`Policy`), returning
:func:`allow`, :func:`approve`, :func:`refuse` or ``None`` (no opinion). A class is created with
no arguments; an object with ``butler_configure(settings)`` is configured instead and returns
the policy. An optional ``governs(tool_name) -> bool`` on the policy object claims MCP tools
(benign by default) for the gate.

A **tool plug-in** (``butler.tools`` entry point) is ``factory(context: ToolContext)`` returning
a toolset or a list of them. :func:`tool` turns a typed function into a :class:`Tool` (a
:class:`ToolSpec` and a validating runner); :func:`benign_toolset` and :func:`governed_toolset`
put tools together.

What a plug-in needs beyond those, it finds here too: :func:`default_title` (the title a
person sees, for a describer that falls back to it), :func:`coerce_verdict` (what a wrapped
policy returned, as a verdict), :func:`arg_matches` and :func:`compile_pattern` (the argument
patterns of rule files and chat grants, ``glob:``/``re:``, path arguments matched as resolved
paths), :func:`read_text_regular` (a person-named file, refusing a FIFO or device in its place),
and on :class:`ToolContext` the config sections (``section(name)``, ``sandbox``), a stored secret
(``secret(name)``), the path checks (``path_rules()``) and a child program's environment
(``child_env()``). A benign tool's calls run side by side with the others of their round,
each on its own thread (``@tool(thread_safe=False)`` or ``ToolSpec(thread_safe=False)`` says
it must not); Ctrl-C stops them all, and a tool that waits on something it can cancel
registers the cancelling with :func:`on_interrupt`. The shipped policies and the built-in
tools import from the butler nothing but this module (a test reads their imports).

A plug-in's own **config section** is declared once, as a tuple of :class:`Setting` (name,
type, default, environment variable, choices, whether `config set` takes it) named by an entry
point in ``butler.settings`` (``acme = "acme_pkg.settings:SETTINGS"`` makes ``[acme]``). The
file's section is checked against it whenever the file is read (a wrong type is one line and
exit 2), `butler config show/get/set` know its keys, and the plug-in reads the values in
effect with ``ToolContext.section("acme")`` or ``PolicySettings.section("acme")``.

Nothing else of butler's internals is part of the contract: what is not exported here may
change. Importing this module is cheap: pydantic loads when :func:`tool` first builds a schema.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Protocol,
    get_type_hints,
    overload,
    runtime_checkable,
)

from butler_cli.core.errors import PolicyLoadError
from butler_cli.core.gate import Gate, PathJudge, default_title
from butler_cli.core.patterns import arg_matches, compile_pattern
from butler_cli.core.setting import Setting
from butler_cli.core.together import on_interrupt
from butler_cli.core.toolsets import FunctionToolset, Toolset, ToolSpec
from butler_cli.core.verdicts import Verdict, allow, approve, coerce_verdict, refuse
from butler_cli.policy.settings import PolicySettings
from butler_cli.store.files import read_text_regular as _read_regular
from butler_cli.tools.context import Classifier, ToolContext

if TYPE_CHECKING:  # pydantic loads when a tool is made with @tool: a policy that imports
    # this module (every shipped one does) costs a run nothing of it
    from pydantic import BaseModel

__all__ = [
    "Classifier",
    "FunctionToolset",
    "Gate",
    "PathJudge",
    "Policy",
    "PolicyLoadError",
    "PolicySettings",
    "Setting",
    "Tool",
    "ToolContext",
    "ToolSpec",
    "Toolset",
    "Verdict",
    "allow",
    "approve",
    "arg_matches",
    "benign_toolset",
    "coerce_verdict",
    "compile_pattern",
    "default_title",
    "governed_toolset",
    "on_interrupt",
    "read_text_regular",
    "refuse",
    "tool",
]


def read_text_regular(path: Path) -> str:
    """A text file a person named (a rule file, say), symlinks followed: ``OSError`` when a
    FIFO, socket or device is in its place (named, never waited on), ``UnicodeDecodeError``
    when it is not UTF-8."""
    return _read_regular(path)


@runtime_checkable
class Policy(Protocol):
    """A policy object. Optional, looked up on the same object by the loader:

    * ``governs(self, tool_name: str) -> bool`` — put that (MCP) tool behind the gate;
    * ``butler_configure(settings: PolicySettings) -> Policy`` — a classmethod (or a function
      attribute) called once at load time with the butler's home and ``--policy-file``.
    """

    def classify(self, name: str, args: dict[str, Any]) -> Verdict | None:
        """The verdict on one governed call, or None for no opinion (the tool's default)."""
        ...


@dataclass(frozen=True)
class Tool:
    """A tool built by :func:`tool`: its spec, and a runner that validates the model's
    arguments first (a bad one is a ``ValueError`` naming the field: an error result)."""

    spec: ToolSpec
    fn: Callable[..., object]
    model: type[BaseModel]

    @property
    def name(self) -> str:
        return self.spec.name

    def check(self, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments as the function's type hints read them; ValueError naming each bad
        field otherwise."""
        from pydantic import ValidationError

        try:
            parsed = self.model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"'{'.'.join(str(p) for p in err['loc']) or '(arguments)'}': {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            raise ValueError(f"{self.name}: bad argument {problems}") from None
        fields = type(parsed).model_fields
        return {str(info.alias): getattr(parsed, key) for key, info in fields.items()}

    def run(self, args: dict[str, Any]) -> str:
        """Validate, then call the function; its return value is the result text."""
        return str(self.fn(**self.check(args)))

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        """The decorated function still works as itself."""
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., object], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    default: Verdict | None = None,
    path_args: Sequence[str] = (),
    thread_safe: bool = True,
) -> Callable[[Callable[..., object]], Tool]: ...
def tool(
    fn: Callable[..., object] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    default: Verdict | None = None,
    path_args: Sequence[str] = (),
    thread_safe: bool = True,
) -> Tool | Callable[[Callable[..., object]], Tool]:
    """``@tool`` or ``@tool(name=…, description=…, default=approve(…), path_args=(…),
    thread_safe=False)``.

    The JSON schema comes from the type hints (pydantic; ``Annotated[str, Field(description=…)]``
    describes a field), the description from the docstring. Unknown arguments are refused.
    ``default`` and ``path_args`` matter for governed tools (see :class:`ToolSpec`).
    A benign tool's calls of one round run side by side on threads; ``thread_safe=False``
    runs them one at a time on the loop's own thread instead (see :class:`ToolSpec`).
    """

    def build(func: Callable[..., object]) -> Tool:
        model = _arguments_model(func)
        schema = _strip_titles(model.model_json_schema())
        spec = ToolSpec(
            name or func.__name__,
            description or inspect.cleandoc(func.__doc__ or "").split("\n\n")[0] or func.__name__,
            schema,
            default,
            tuple(path_args),
            thread_safe,
        )
        return Tool(spec, func, model)

    return build(fn) if fn is not None else build


def benign_toolset(tools: Iterable[Tool]) -> Toolset:
    """Tools that run inline, without asking the policy."""
    return FunctionToolset((t.spec, t.run) for t in tools)


def governed_toolset(
    tools: Iterable[Tool],
    policy: Callable[[str, dict[str, Any]], object] | None,
    *,
    paths: PathJudge | None = None,
) -> Toolset:
    """Tools behind the gate, classified by ``policy`` (``context.policy``) before they run.
    A call with bad arguments is refused before the policy or a person sees it."""
    by_name = {t.name: t for t in tools}

    def guard(name: str, args: dict[str, Any]) -> Verdict | None:
        try:
            by_name[name].check(args)
        except ValueError as exc:
            return refuse(str(exc))
        return None

    return Gate(
        [t.spec for t in by_name.values()],
        lambda name, args: by_name[name].run(args),
        policy=policy,
        guard=guard,
        paths=paths,
    )


_ANNOTATED: Any = Annotated  # built at run time, from the function's own hints


def _arguments_model(func: Callable[..., object]) -> type[BaseModel]:
    from pydantic import ConfigDict, Field, create_model

    hints = get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"@tool {func.__name__}: *args and **kwargs cannot be described")
        # Each field under a neutral name, the argument's name as its alias: an argument may be
        # called ``json`` or ``model_name`` without shadowing pydantic's own attributes.
        hint = _ANNOTATED[hints.get(param.name, Any), Field(alias=param.name)]
        default = ... if param.default is param.empty else param.default
        fields[f"arg{len(fields)}"] = (hint, default)
    config = ConfigDict(extra="forbid", protected_namespaces=())
    return create_model(f"{func.__name__}_arguments", __config__=config, **fields)


def _strip_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without pydantic's generated ``title`` keys (noise for the model)."""
    out = {k: v for k, v in schema.items() if k != "title"}
    props = out.get("properties")
    if isinstance(props, dict):
        out["properties"] = {
            key: {k: v for k, v in value.items() if k != "title"}
            if isinstance(value, dict)
            else value
            for key, value in props.items()
        }
    return out
