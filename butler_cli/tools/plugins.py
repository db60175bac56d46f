"""Tool plug-ins: toolsets found through the ``butler.tools`` entry points.

The built-in tools load exactly this way (see ``pyproject.toml``). A plug-in is a callable
``factory(context) -> Toolset | list[Toolset]``; each toolset says whether it is governed (a
gate, classified by the policy) or benign. Find, then load, then validate: a broken plug-in is
named in the error and the butler does not start without it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.core.errors import UsageError
from butler_cli.core.gate import Policy
from butler_cli.core.toolsets import Toolset
from butler_cli.entry_points import in_group

if TYPE_CHECKING:
    from butler_cli.tools.paths import PathRules

GROUP = "butler.tools"


@dataclass(frozen=True)
class ToolContext:
    """What a tool plug-in may build its toolsets from."""

    base_dir: Path
    home: Path
    policy: Policy | None
    protected: Sequence[Path] = ()
    roots: Sequence[Path] = ()
    smtp: Mapping[str, Any] = field(default_factory=dict)
    #: [sandbox] settings for programs the butler starts (``network``).
    sandbox: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a program a plug-in starts: never the butler's keys."""
        from butler_cli.tools.redact import child_env

        return child_env(extra)

    def path_rules(self) -> PathRules:
        """The resolver for a plug-in's governed tools that take paths: name them in
        ``ToolSpec.path_args`` and pass this as ``Gate(..., paths=context.path_rules())``; the
        policy then judges, and the executor gets, the resolved paths, checked against the
        allowed roots and the butler's own files like the built-in file tools."""
        from butler_cli.tools.paths import PathRules

        return PathRules(self.base_dir, self.home, self.protected, self.roots)


@dataclass(frozen=True)
class LoadedTools:
    name: str
    entry_point: EntryPoint
    toolsets: list[Toolset]

    @property
    def source(self) -> str:
        """The plug-in, its target and its package (read from the package's metadata now)."""
        return _where(self.entry_point)


def _where(ep: EntryPoint) -> str:
    dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "unknown package"
    return f"tool plug-in '{ep.name}' = {ep.value} ({dist})"


def _from_butler(ep: EntryPoint) -> bool:
    """Whether ``ep`` is one of ours. By the distribution's folder name, which importlib has
    already read: its ``name`` would parse the package's metadata (and import email) on
    every start."""
    if ep.dist is None:
        return False
    name = getattr(ep.dist, "_normalized_name", None) or ep.dist.name
    return re.sub(r"[-_.]+", "_", name).lower() == "butler_cli"


def load_tool_plugins(context: ToolContext) -> list[LoadedTools]:
    """Every ``butler.tools`` plug-in, built-ins first (they come from butler-cli), then by name."""
    found = sorted(in_group(GROUP), key=lambda ep: (not _from_butler(ep), ep.name))
    loaded: list[LoadedTools] = []
    for ep in found:
        try:
            factory = ep.load()
            made = factory(context)
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(
                f"{_where(ep)} failed: {type(exc).__name__}: {exc}"[:400], code="tool_plugin"
            ) from exc
        toolsets = list(made) if isinstance(made, list | tuple) else [made]
        for toolset in toolsets:
            if not (
                hasattr(toolset, "specs")
                and hasattr(toolset, "run")
                and hasattr(toolset, "governed")
            ):
                raise UsageError(
                    f"{_where(ep)} returned {type(toolset).__name__}, not a toolset",
                    code="tool_plugin",
                )
        loaded.append(LoadedTools(ep.name, ep, toolsets))
    return loaded


# -- the built-ins, registered under butler.tools in pyproject.toml -----------------------------
def files(context: ToolContext) -> list[Toolset]:
    from butler_cli.tools.files import FileTools

    tools = FileTools(context.base_dir, context.home, context.protected, context.roots)
    return [tools.benign(), tools.governed(context.policy)]


def clock(context: ToolContext) -> Toolset:
    from butler_cli.tools.clock import clock_toolset

    return clock_toolset()


def command(context: ToolContext) -> Toolset:
    from butler_cli.tools.command import CommandTool

    return CommandTool(
        context.base_dir,
        context.home,
        list(context.roots),
        protected=list(context.protected),
        network=bool(context.sandbox.get("network", True)),
    ).governed(context.policy)


def http(context: ToolContext) -> Toolset:
    from butler_cli.tools.http import http_gate

    return http_gate(context.policy)


def email(context: ToolContext) -> Toolset:
    from butler_cli.tools.email import EmailTool

    return EmailTool(context.smtp).governed(context.policy)
