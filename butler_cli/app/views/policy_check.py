"""Ask the active policy about a call without running anything (`butler policy check/test`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler_cli.app.config.options import RunOptions
from butler_cli.app.views.inventory import not_offered, offline_toolsets
from butler_cli.core.errors import UsageError
from butler_cli.core.gate import default_title
from butler_cli.core.toolsets import Toolbox
from butler_cli.core.verdicts import Verdict
from butler_cli.policy.loader import LoadedPolicy
from butler_cli.store.files import read_text_regular

EXPECT = ("allow", "approve", "refuse")


@dataclass
class Checker:
    policy: LoadedPolicy
    toolbox: Toolbox

    @classmethod
    def build(cls, opts: RunOptions) -> Checker:
        policy, sources = offline_toolsets(opts)
        return cls(policy, Toolbox([toolset for _, toolset in sources]))

    def verdict(self, tool: str, args: dict[str, Any]) -> Verdict | None:
        """The gate's verdict (guard, policy, default), or None for a benign tool."""
        if self.toolbox.owner(tool) is None:
            why = [line for line in not_offered() if line.startswith(f"{tool} ")]
            raise UsageError(why[0] if why else f"no tool named '{tool}'; see `butler tools list`")
        gate = self.toolbox.gate_for(tool)
        if gate is None:
            return None
        verdict = gate.classify(tool, args)
        if verdict.reason.startswith("policy error:"):
            # The gate keeps only the exception's type (its text may quote arguments and the
            # reason is audited); here, for the policy's author, the whole message is shown.
            try:
                self.policy.classify(tool, dict(args))
            except Exception as exc:
                return Verdict(verdict.decision, f"{verdict.reason}: {exc}")
        return verdict


def parse_args_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--args is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise UsageError('--args must be a JSON object, e.g. \'{"path": "notes.txt"}\'')
    return value


def read_cases(path: str) -> list[dict[str, Any]]:
    """A JSON array or JSON lines of {tool, args, expect}; a malformed file is refused whole."""
    try:
        text = read_text_regular(Path(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    try:
        stripped = text.lstrip()
        if stripped.startswith("["):
            cases = json.loads(text)
        else:
            cases = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON or JSON lines: {exc}") from exc
    for i, case in enumerate(cases, start=1):
        if not (
            isinstance(case, dict)
            and isinstance(case.get("tool"), str)
            and isinstance(case.get("args", {}), dict)
            and case.get("expect") in (*EXPECT, "benign")
        ):
            raise UsageError(
                f'{path}: case {i} must be {{"tool": str, "args": {{}}, "expect": '
                '"allow"|"approve"|"refuse"|"benign"}'
            )
    return list(cases)


@dataclass(frozen=True)
class CallVerdict:
    """What the policy says about one call (`butler policy check`): ``benign`` when no
    verdict is asked for, else allow / approve / refuse, and the reason."""

    tool: str
    verdict: str
    reason: str


def check_call(tool: str, args_json: str, opts: RunOptions) -> CallVerdict:
    """The verdict for ``tool`` called with ``args_json`` (a JSON object), nothing run."""
    checker = Checker.build(opts)
    verdict = checker.verdict(tool, parse_args_json(args_json))
    if verdict is None:
        return CallVerdict(tool, "benign", "benign tool: runs without a verdict")
    return CallVerdict(tool, verdict.decision, verdict.reason)


@dataclass(frozen=True)
class Miss:
    """A case whose verdict was not the one expected."""

    number: int  # from 1, in the file's order
    title: str  # the call as an approval would name it
    expected: str
    got: str
    reason: str  # the verdict's reason; "" for a benign tool or none given


@dataclass(frozen=True)
class Replay:
    cases: int
    misses: list[Miss]
    policy: str  # the spec of the policy the cases were replayed against


def replay(cases_file: str, opts: RunOptions) -> Replay:
    """Every case of ``cases_file`` (see :func:`read_cases`) asked of the policy; the ones that
    got another verdict than expected."""
    cases = read_cases(cases_file)
    checker = Checker.build(opts)
    misses = []
    for i, case in enumerate(cases, start=1):
        args = case.get("args", {})
        verdict = checker.verdict(case["tool"], args)
        got = "benign" if verdict is None else verdict.decision
        if got != case["expect"]:
            why = verdict.reason if verdict is not None else ""
            misses.append(Miss(i, default_title(case["tool"], args), case["expect"], got, why))
    return Replay(len(cases), misses, checker.policy.spec)
