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


#: Arguments that name what a call acts on: a title shows them first, and whole.
TARGET_KEYS = frozenset(
    {"path", "paths", "src", "dst", "file", "dir", "argv", "command", "cmd", "url", "uri"}
    | {"to", "cc", "bcc", "recipients"}
)
#: An argument this long (as ``"key":value``) goes after the shorter ones in a title.
TITLE_SHORT_ARG = 60
#: However long the target, this much of the other arguments is still shown.
TITLE_REST_MIN = 40


def default_title(name: str, args: dict[str, Any]) -> str:
    """``name(<compact JSON args>)`` with what the call acts on first (spec G3).

    The arguments naming the target (path, argv, URL, recipients: TARGET_KEYS) come first and
    are never cut; then the other short arguments, then the long ones (a file's content), in
    their own order. Only those others are cut, past TITLE_ARGS_MAX characters, with ``…``:
    a long first argument can no longer push the path out of the title."""
    pairs = [(key, f"{compact_json(key)}:{compact_json(value)}") for key, value in args.items()]
    target = ",".join(text for key, text in pairs if key in TARGET_KEYS)
    others = [text for key, text in pairs if key not in TARGET_KEYS]
    others.sort(key=lambda text: len(text) > TITLE_SHORT_ARG)  # stable: short ones first
    rest = ",".join(others)
    room = max(TITLE_ARGS_MAX - len(target) - (1 if target else 0), TITLE_REST_MIN)
    close = "}"
    if len(rest) > room:
        rest, close = rest[: room - 1] + "…", ""  # cut: the JSON stays open, as it always did
    return f"{name}({{{','.join(part for part in (target, rest) if part)}{close})"


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
