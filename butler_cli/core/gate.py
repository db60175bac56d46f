"""The gate: a governed toolset that keeps classification and execution apart (spec G1–G4)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from butler_cli.core.errors import ToolsetError
from butler_cli.core.judged import JudgedArgs
from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
from butler_cli.core.toolsets import ToolSpec, run_guarded, unknown_tool
from butler_cli.core.verdicts import Verdict, approve, coerce_verdict, refuse

#: A policy: ``classify(name, args)`` returning a Verdict, a verdict dict or None.
Policy = Callable[[str, dict[str, Any]], object]
Describer = Callable[[str, dict[str, Any]], str]
Executor = Callable[[str, dict[str, Any]], str]
#: Checked before the policy; a verdict from a guard is final (e.g. X6's home refusal).
Guard = Callable[[str, dict[str, Any]], Verdict | None]
#: ``sealer(name, args, judged)``: the arguments as the call is recorded, judged and run — the
#: model's, plus what the tool must know of the moment it was judged (an edit: the digest of
#: the file it edits), so a park resumed later acts on exactly what was judged and shown.
Sealer = Callable[[str, dict[str, Any], JudgedArgs], dict[str, Any]]


class PathJudge(Protocol):
    """Resolves path arguments for the gate (injected by the tools layer: core does no I/O)."""

    def resolve(self, tool: str, key: str, raw: object) -> str:
        """The absolute, resolved path ``raw`` names; raises ValueError or OSError (e.g.
        PermissionError) when the tool may not use it."""
        ...

    def glob(self, pattern: str, since: float | None = None) -> str:
        """The absolute glob a rule or grant pattern on a path argument means (``since``: when
        the pattern was made — no link younger than that is followed on its folders)."""
        ...


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
#: A brief title's room for the arguments that are not the target.
BRIEF_REST = 24


def default_title(name: str, args: dict[str, Any], *, brief: bool = False) -> str:
    """``name(<compact JSON args>)`` with what the call acts on first (spec G3).

    The arguments naming the target (path, argv, URL, recipients: TARGET_KEYS) come first and
    are never cut; then the other short arguments, then the long ones (a file's content), in
    their own order. Only those others are cut, past TITLE_ARGS_MAX characters, with ``…``:
    a long first argument can no longer push the path out of the title. ``brief`` (a progress
    line, beside the approval box or the call's result): the others only when they fit in
    BRIEF_REST, else ``…``."""
    pairs = [(key, f"{compact_json(key)}:{compact_json(value)}") for key, value in args.items()]
    target = ",".join(text for key, text in pairs if key in TARGET_KEYS)
    others = [text for key, text in pairs if key not in TARGET_KEYS]
    others.sort(key=lambda text: len(text) > TITLE_SHORT_ARG)  # stable: short ones first
    rest = ",".join(others)
    room = (
        BRIEF_REST
        if brief
        else max(TITLE_ARGS_MAX - len(target) - (1 if target else 0), TITLE_REST_MIN)
    )
    close = "}"
    if len(rest) > room and brief:
        rest = "…"  # shown elsewhere (the box, the result): a piece of it would only repeat it
    elif len(rest) > room:
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
        paths: PathJudge | None = None,
        sealer: Sealer | None = None,
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
        self._paths = paths
        self._sealer = sealer

    def specs(self) -> Sequence[ToolSpec]:
        return list(self._specs.values())

    def judged(self, name: str, args: dict[str, Any]) -> JudgedArgs:
        """The arguments as judged and run: each declared path argument replaced by the
        absolute path it resolves to (ValueError/OSError when it may not be used). Without a
        resolver the arguments stay as they are and are matched as text."""
        spec = self._specs.get(name)
        values = copy.deepcopy(args)
        if spec is None or not spec.path_args or self._paths is None:
            return JudgedArgs(values)
        keys = [key for key in spec.path_args if key in values]
        for key in keys:
            values[key] = self._paths.resolve(name, key, values[key])
        return JudgedArgs(values, keys, self._paths.glob)

    def seal(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments a call is recorded with before it is judged (see :data:`Sealer`);
        ``args`` itself when the tool seals nothing or its paths do not resolve (the call is
        refused then anyway)."""
        if self._sealer is None or name not in self._specs:
            return args
        try:
            judged = self.judged(name, args)
        except (ValueError, OSError):
            return args
        return self._sealer(name, copy.deepcopy(args), judged)

    def classify(self, name: str, args: dict[str, Any]) -> Verdict:
        """Judge the paths, then guard, then policy, then the spec's default, then approve
        (spec G2). Guard and policy see the same judged arguments."""
        try:
            judged = self.judged(name, args)
        except (ValueError, OSError) as exc:
            return refuse(str(exc) or type(exc).__name__)
        if self._guard is not None:
            guarded = self._guard(name, judged.fresh())
            if guarded is not None:
                return guarded
        if self._policy is not None:
            try:
                verdict = coerce_verdict(self._policy(name, judged.fresh()))
            except Exception as exc:  # a broken policy means a person decides
                # Only the exception's type: its text may quote argument values, and this
                # reason reaches the audit log. `butler policy test` shows the whole error.
                return approve(
                    f"policy error: {type(exc).__name__} (see `butler policy test`) — "
                    "asking you first"
                )
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
        """Execute without re-classifying (spec G4), on the paths judged now: the executor gets
        the resolved paths, so it acts on exactly the files the checks saw."""
        if call.name not in self._specs:
            return unknown_tool(call)
        executor = self._executor
        return run_guarded(call, lambda args: executor(call.name, self.judged(call.name, args)))
