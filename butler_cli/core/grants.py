"""Session grants: approvals a person chose to remember, with a narrow, visible scope.

A grant turns a later ``approve`` into ``allow`` for the rest of one chat session — for the
same tool with the exact same arguments (and the same files they resolved to when granted),
or (only where the policy marked the call as safe to widen) for arguments matching the
patterns shown before the grant was accepted, matched on the resolved paths like the rules
are. A grant never touches a ``refuse``, never outlives its session and is never consulted
by ``run`` or by a resume in another process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from butler_cli.core.patterns import arg_matches


def canonical(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Grant:
    tool: str
    exact: str | None = None  # canonical JSON of the arguments
    patterns: tuple[tuple[str, str], ...] = ()
    #: For an exact grant: canonical JSON of the judged arguments (resolved paths) at grant time.
    judged: str | None = None
    #: For a widened grant: when it was made (seconds since the epoch; a kept one's
    #: ``granted_at``): a link on its patterns' folders made since is not followed.
    since: float | None = None

    def covers(self, tool: str, raw: Mapping[str, Any], judged: Mapping[str, Any]) -> bool:
        """Whether a call (its raw and judged arguments) is covered by this grant."""
        if tool != self.tool:
            return False
        if self.exact is not None:
            same_files = self.judged is None or canonical(dict(judged)) == self.judged
            return canonical(dict(raw)) == self.exact and same_files
        return bool(self.patterns) and all(
            arg_matches(p, key, judged, since=self.since) for key, p in self.patterns
        )

    def same_scope(self, other: Grant) -> bool:
        """Whether ``other`` allows what this grant allows: the same tool, arguments or
        patterns — when each was made (``since``) is not part of what it allows."""
        return replace(self, since=None) == replace(other, since=None)

    def scope_keys(self) -> str:
        """The argument names a widened grant covers, comma-separated (no patterns, no values)."""
        return ",".join(key for key, _ in self.patterns)

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

    def covering(
        self, tool: str, raw: Mapping[str, Any], judged: Mapping[str, Any]
    ) -> tuple[int, Grant] | None:
        for number, grant in enumerate(self._grants, start=1):
            if grant.covers(tool, raw, judged):
                return number, grant
        return None

    def revoke(self, number: int) -> Grant | None:
        if 1 <= number <= len(self._grants):
            return self._grants.pop(number - 1)
        return None

    def all(self) -> list[Grant]:
        return list(self._grants)


@dataclass(frozen=True)
class KeptApproval:
    """An approval a person chose to keep ("always allow this here"): one grant, scoped to
    the folder the task ran in, numbered as in the approvals file (``butler grants``)."""

    number: int
    grant: Grant
    folder: str
    granted_at: str = ""
    #: Kept for a run in the sandbox (``run_command`` with bubblewrap): it answers only while
    #: a sandbox is active — unconfined, the same call asks again.
    sandboxed: bool = False


class KeptApprovals:
    """The kept approvals that apply to tasks in one folder (the task's resolved folder must be
    the one the approval was kept in: never a parent's or a child's); one kept for a sandboxed
    run applies only when ``sandboxed`` (a sandbox is active now)."""

    def __init__(self, kept: list[KeptApproval], folder: str, *, sandboxed: bool) -> None:
        self._here = [k for k in kept if k.folder == folder and (sandboxed or not k.sandboxed)]

    def covering(
        self, tool: str, raw: Mapping[str, Any], judged: Mapping[str, Any]
    ) -> KeptApproval | None:
        for kept in self._here:
            if kept.grant.covers(tool, raw, judged):
                return kept
        return None

    def __bool__(self) -> bool:
        return bool(self._here)
