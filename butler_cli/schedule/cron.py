"""When a schedule is due: cron expressions (through croniter) and ``@daily``-style shorthands.

Times are computed in the machine's local time zone (as cron does) and stored in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime

from butler_cli.core.errors import UsageError

SHORTHANDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def expand(expr: str) -> str:
    """The five-field form of ``expr``; a bad expression is a usage error naming it."""
    from croniter import croniter  # type: ignore[import-untyped]

    text = " ".join(expr.split())
    text = SHORTHANDS.get(text.lower(), text)
    if len(text.split()) != 5 or not croniter.is_valid(text):
        raise UsageError(
            f"'{expr}' is not a cron expression: five fields (minute hour day month weekday), "
            f"e.g. '0 8 * * 1-5', or one of {', '.join(SHORTHANDS)}"
        )
    return text


def next_after(expr: str, after: datetime) -> datetime:
    """The first time strictly after ``after`` that ``expr`` names, in UTC."""
    from croniter import croniter

    local = after.astimezone()
    nxt: datetime = croniter(expand(expr), local).get_next(datetime)
    return nxt.astimezone(UTC)
