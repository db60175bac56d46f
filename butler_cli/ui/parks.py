"""What became of each call of a parked round, as `butler show` and the inbox list it.

Plain text, not yet neutralised: each surface escapes it its own way (rich markup, HTML).
"""

from __future__ import annotations

from dataclasses import dataclass

from butler_cli.app.run.masking import secrets_by_name_hidden as redact
from butler_cli.core.gate import default_title
from butler_cli.core.park import ParkState


@dataclass(frozen=True, slots=True)
class CallRow:
    """One call of a parked round: its verdict, its title (secrets masked) and its result."""

    verdict: str
    title: str
    outcome: str


def call_rows(state: ParkState, result_chars: int) -> list[CallRow]:
    """A row per call, in order; a result is cut to ``result_chars`` (`show --json` and the
    park's audit trail keep it whole)."""
    rows = []
    for call in state.calls:
        saved = state.verdicts.get(call.id)
        result = state.results.get(call.id)
        outcome = ""
        if result is not None:
            outcome = " → " + ("error: " if result.is_error else "") + result.content[:result_chars]
        rows.append(
            CallRow(
                saved.decision if saved is not None else "benign",
                default_title(call.name, redact(dict(call.input))),
                outcome,
            )
        )
    return rows
