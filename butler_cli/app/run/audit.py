"""The audit observer: one audit line per governed verdict and per resume-time judgement."""

from __future__ import annotations

from collections.abc import Sequence

from butler_cli.core.loop import LoopObserver
from butler_cli.core.messages import ToolUseBlock
from butler_cli.core.verdicts import Verdict
from butler_cli.store.audit import AuditLog


class AuditObserver(LoopObserver):
    """Writes one audit line per governed verdict, with the park id when the round parked, and
    one per governed call judged again when a park is resumed (``resumed``: that park's id)."""

    def __init__(self, audit: AuditLog, resumed: str | None = None) -> None:
        self.audit = audit
        self.resumed = resumed

    def call_judged(self, call: ToolUseBlock, verdict: Verdict | None, outcome: str) -> None:
        self.audit.record_judged(
            park=self.resumed,
            tool=call.name,
            args=call.input,
            verdict=verdict.decision if verdict is not None else None,
            reason=verdict.reason if verdict is not None else None,
            outcome=outcome,
        )

    def round_classified(
        self, calls: Sequence[ToolUseBlock], verdicts: dict[str, Verdict], park_id: str | None
    ) -> None:
        for call in calls:
            verdict = verdicts.get(call.id)
            if verdict is not None:
                self.audit.record(
                    "verdict",
                    park=park_id,
                    tool=call.name,
                    args=call.input,
                    outcome=verdict.decision,
                    text=verdict.reason,
                )
