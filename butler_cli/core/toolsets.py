"""Toolsets: benign tools that run inline, and their composition into one toolbox.

A toolset lists :class:`ToolSpec` s and runs calls by name. The :class:`Toolbox` composes
every toolset the butler uses (benign and governed) and refuses a name collision before the
first model call (spec G5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from butler_cli.core.errors import ToolsetError
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock, error_result
from butler_cli.core.provider import ToolDefinition
from butler_cli.core.verdicts import Verdict

ToolFn = Callable[[dict[str, Any]], str]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool's contract. ``default_verdict`` matters for governed tools only (spec G2).

    ``path_args`` names the arguments that are file paths: the gate judges (and the tool runs
    on) the absolute path each one resolves to, never the text the model wrote.

    ``thread_safe``: a benign tool's calls in one round run side by side, each on a thread of
    its own (``core.together``). A tool that must not (it keeps state without a lock, or a
    connection bound to one thread) says ``False``: its calls then run on the loop's own
    thread, one at a time, after the others of the round have ended. Governed tools always
    run that way.

    ``read_only``: the tool only reads, in this process — it cannot move or replace a folder.
    After a round of nothing but such calls the gate's watch is not run (it costs more than
    the round). Honoured only for the butler's own tools (the session decides which:
    ``Equipment.unwatched``); a plug-in's or an MCP server's claim is never taken on its word.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    default_verdict: Verdict | None = None
    path_args: tuple[str, ...] = ()
    thread_safe: bool = True
    read_only: bool = False

    def definition(self) -> ToolDefinition:
        return ToolDefinition(self.name, self.description, self.input_schema)


class Toolset(Protocol):
    """Anything that lists tools and runs them by name."""

    governed: bool

    def specs(self) -> Sequence[ToolSpec]: ...

    def run(self, call: ToolUseBlock) -> ToolResultBlock: ...


class GovernedToolset(Toolset, Protocol):
    """A toolset whose calls are classified before they run (the gate)."""

    def classify(self, name: str, args: dict[str, Any]) -> Verdict: ...

    def describe(self, name: str, args: dict[str, Any]) -> str: ...

    def judged(self, name: str, args: dict[str, Any]) -> dict[str, Any]: ...


def run_guarded(call: ToolUseBlock, fn: Callable[[dict[str, Any]], str]) -> ToolResultBlock:
    """Run one tool function; any exception becomes an error result (spec L6)."""
    try:
        content = fn(dict(call.input))
    except Exception as exc:  # a flaky tool never crashes or parks the task
        return error_result(call.id, str(exc) or type(exc).__name__)
    return ToolResultBlock(tool_use_id=call.id, content=str(content))


def unknown_tool(call: ToolUseBlock) -> ToolResultBlock:
    return error_result(call.id, f"Unknown tool '{call.name}' — nothing was run.")


class FunctionToolset:
    """Benign tools backed by plain functions ``fn(args) -> str``."""

    governed = False

    def __init__(self, tools: Iterable[tuple[ToolSpec, ToolFn]]) -> None:
        self._tools: dict[str, tuple[ToolSpec, ToolFn]] = {}
        for spec, fn in tools:
            if spec.name in self._tools:
                raise ToolsetError(f"tool '{spec.name}' is defined twice", code="duplicate_tool")
            self._tools[spec.name] = (spec, fn)

    def specs(self) -> Sequence[ToolSpec]:
        return [spec for spec, _ in self._tools.values()]

    def run(self, call: ToolUseBlock) -> ToolResultBlock:
        entry = self._tools.get(call.name)
        if entry is None:
            return unknown_tool(call)
        return run_guarded(call, entry[1])


class Toolbox:
    """Every tool the butler offers, with each name owned by exactly one toolset (spec G5)."""

    def __init__(self, toolsets: Iterable[Toolset]) -> None:
        self._owner: dict[str, Toolset] = {}
        self._beside: set[str] = set()
        self._definitions: list[ToolDefinition] = []
        for toolset in toolsets:
            for spec in toolset.specs():
                if spec.name in self._owner:
                    raise ToolsetError(
                        f"tool name '{spec.name}' is offered by two toolsets; rename one",
                        code="tool_name_collision",
                    )
                self._owner[spec.name] = toolset
                if spec.thread_safe and not toolset.governed:
                    self._beside.add(spec.name)
                self._definitions.append(spec.definition())
        self.toolsets: tuple[Toolset, ...] = tuple(dict.fromkeys(self._owner.values()))

    def definitions(self) -> list[ToolDefinition]:
        return list(self._definitions)

    def owner(self, name: str) -> Toolset | None:
        return self._owner.get(name)

    def gate_for(self, name: str) -> GovernedToolset | None:
        """The gate that owns ``name``, or None for benign and unknown tools."""
        owner = self._owner.get(name)
        if owner is not None and owner.governed:
            return owner  # type: ignore[return-value]
        return None

    def is_governed(self, name: str) -> bool:
        return self.gate_for(name) is not None

    def runs_beside(self, name: str) -> bool:
        """Whether calls of ``name`` may run side by side with others of their round: a
        benign tool that did not declare itself not thread-safe."""
        return name in self._beside

    def title(self, call: ToolUseBlock) -> str:
        """What a person is shown first for a governed call: its gate's title (G3)."""
        gate = self.gate_for(call.name)
        assert gate is not None
        return gate.describe(call.name, dict(call.input))

    def ran(self, call: ToolUseBlock) -> None:
        """Called on the loop's own thread as soon as ``call`` has run, before its result is
        recorded or shown (a tool on a thread of its own could not stop the task by raising):
        a subclass checks here what the call may have changed. Nothing by default."""

    def run(self, call: ToolUseBlock) -> ToolResultBlock:
        """Execute a cleared call. Never classifies (spec G4); unknown name → error result."""
        owner = self._owner.get(call.name)
        if owner is None:
            return unknown_tool(call)
        return owner.run(call)
