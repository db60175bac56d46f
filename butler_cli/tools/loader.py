"""Finding tool plug-ins: toolsets through the ``butler.tools`` entry points.

The built-in tools load exactly this way (``butler_cli/tools/plugins.py``, registered in
``pyproject.toml``). A plug-in is a callable ``factory(context) -> Toolset | list[Toolset]``;
each toolset says whether it is governed (a gate, classified by the policy) or benign. Find,
then load, then validate: a broken plug-in is named in the error and the butler does not start
without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from butler_cli.core.errors import UsageError
from butler_cli.core.toolsets import Toolset
from butler_cli.entry_points import FoundEntryPoint, in_group
from butler_cli.tools.context import ToolContext

GROUP = "butler.tools"


@dataclass(frozen=True)
class LoadedTools:
    name: str
    entry_point: FoundEntryPoint
    toolsets: list[Toolset]

    @property
    def source(self) -> str:
        """The plug-in, its target and its package (read from the package's metadata now)."""
        return _where(self.entry_point)

    @property
    def ours(self) -> bool:
        """Whether the plug-in is the butler's own (its built-ins): only their
        ``read_only`` claims are believed (see ``ToolSpec``)."""
        return _from_butler(self.entry_point)


def _where(ep: FoundEntryPoint) -> str:
    dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "unknown package"
    return f"tool plug-in '{ep.name}' = {ep.value} ({dist})"


def _from_butler(ep: FoundEntryPoint) -> bool:
    """Whether ``ep`` is one of ours. By the distribution's folder name, which the scan has
    already read: its ``name`` would parse the package's metadata (and import email) on
    every start."""
    if ep.package is None:
        return ep.dist is not None and _normalized(ep.dist.name) == "butler_cli"
    return _normalized(ep.package) == "butler_cli"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


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
