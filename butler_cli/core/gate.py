"""The gate: a governed toolset that keeps classification and execution apart (spec G1–G4)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from butler_cli.core.errors import ToolsetError
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.toolsets import ToolSpec, run_guarded, unknown_tool
from butler_cli.core.verdicts import Verdict, approve, coerce_verdict

#: A policy: ``classify(name, args)`` returning a Verdict, a verdict dict or None.
Policy = Callable[[str, dict[str, Any]], object]
Describer = Callable[[str, dict[str, Any]], str]
Executor = Callable[[str, dict[str, Any]], str]
#: Checked before the policy; a verdict from a guard is final (e.g. X6's home refusal).
Guard = Callable[[str, dict[str, Any]], Verdict | None]

TITLE_ARGS_MAX = 120


def compact_json(value: object) -> str:
    """JSON without spaces and without ASCII escaping — the form titles and hashes use."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)


def default_title(name: str, args: dict[str, Any]) -> str:
    """``name(<compact JSON args>)``, args cut to 119 characters plus ``…`` (spec G3)."""
    text = compact_json(args)
    if len(text) > TITLE_ARGS_MAX:
        text = text[: TITLE_ARGS_MAX - 1] + "…"
    return f"{name}({text})"


def default_decision(spec: ToolSpec) -> str:
    """What a governed tool gets when the policy has no opinion (G2): its default, else approve."""
    return spec.default_verdict.decision if spec.default_verdict is not None else "approve"


class Gate:
    """Governed tools: classified by an injected policy, run only once cleared."""

    governed = True

    def __init__(
        self,
        specs: Iterable[ToolSpec],
        executor: Executor,
        *,
        policy: Policy | None = None,
        describer: Describer | None = None,
        guard: Guard | None = None,
    ) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ToolsetError(
                    f"governed tool '{spec.name}' is defined twice",
                    code="duplicate_governed_tool",
                )
            self._specs[spec.name] = spec
        if not self._specs:
            raise ToolsetError("a gate needs at least one governed tool", code="no_governed_tools")
        self._executor = executor
        self._policy = policy
        self._describer = describer
        self._guard = guard

    def specs(self) -> Sequence[ToolSpec]:
        return list(self._specs.values())

    def classify(self, name: str, args: dict[str, Any]) -> Verdict:
        """Guard, then policy, then the spec's default, then approve (spec G2)."""
        if self._guard is not None:
            guarded = self._guard(name, copy.deepcopy(args))
            if guarded is not None:
                return guarded
        if self._policy is not None:
            try:
                verdict = coerce_verdict(self._policy(name, copy.deepcopy(args)))
            except Exception as exc:  # a broken policy means a person decides
                return approve(f"policy error: {type(exc).__name__}: {exc}"[:300])
            if verdict is not None:
                return verdict
        spec = self._specs.get(name)
        if spec is not None and spec.default_verdict is not None:
            return spec.default_verdict
        return approve(f"'{name}' has no risk policy — asking you first")

    def describe(self, name: str, args: dict[str, Any]) -> str:
        if self._describer is not None:
            try:
                return self._describer(name, copy.deepcopy(args))
            except Exception:  # a describer must never stop the approval from showing
                pass
        return default_title(name, args)

    def run(self, call: ToolUseBlock) -> ToolResultBlock:
        """Execute without re-classifying (spec G4)."""
        if call.name not in self._specs:
            return unknown_tool(call)
        executor = self._executor
        return run_guarded(call, lambda args: executor(call.name, args))
