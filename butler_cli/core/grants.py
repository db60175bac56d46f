"""Session grants: approvals a person chose to remember, with a narrow, visible scope.

A grant turns a later ``approve`` into ``allow`` for the rest of one chat session — for the
same tool with the exact same arguments, or (only where the policy marked the call as safe to
widen) for arguments matching the patterns shown before the grant was accepted. A grant never
touches a ``refuse``, never outlives its session and is never consulted by ``run`` or by a
resume in another process.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from butler_cli.core.messages import ToolUseBlock
from butler_cli.core.patterns import compile_pattern, matches


def canonical(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Grant:
    tool: str
    exact: str | None = None  # canonical JSON of the arguments
    patterns: tuple[tuple[str, str], ...] = ()

    def covers(self, call: ToolUseBlock) -> bool:
        if call.name != self.tool:
            return False
        if self.exact is not None:
            return canonical(call.input) == self.exact
        return bool(self.patterns) and all(
            key in call.input
            and matches(compile_pattern(p), call.input[key], anchored=not p.startswith("re:"))
            for key, p in self.patterns
        )

    def describe(self) -> str:
        if self.exact is not None:
            return f"{self.tool} with exactly {self.exact}"
        scope = ", ".join(f"{k} matching {p}" for k, p in self.patterns)
        return f"{self.tool} with {scope}"


class GrantBook:
    """The grants of one chat session, numbered from 1 as shown by ``/grants``."""

    def __init__(self) -> None:
        self._grants: list[Grant] = []

    def add(self, grant: Grant) -> int:
        self._grants.append(grant)
        return len(self._grants)

    def covering(self, call: ToolUseBlock) -> tuple[int, Grant] | None:
        for number, grant in enumerate(self._grants, start=1):
            if grant.covers(call):
                return number, grant
        return None

    def revoke(self, number: int) -> Grant | None:
        if 1 <= number <= len(self._grants):
            return self._grants.pop(number - 1)
        return None

    def all(self) -> list[Grant]:
        return list(self._grants)
