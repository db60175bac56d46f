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


def utc_now() -> datetime:
    """The clock schedules are kept in."""
    return datetime.now(UTC)


#: A time further off than this is no time at all: 8 years covers 29 February (a century
#: year like 2100 skips a leap day) and bounds croniter's search.
NEVER_YEARS = 8


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
    """The first time strictly after ``after`` that ``expr`` names, in UTC. An expression whose
    days never come (``0 0 31 2 *``, February 31st) is a usage error naming it."""
    from croniter import CroniterBadDateError, croniter

    local = after.astimezone()
    try:
        found = croniter(expand(expr), local, max_years_between_matches=NEVER_YEARS)
        nxt: datetime = found.get_next(datetime)
    except CroniterBadDateError as exc:
        raise UsageError(
            f"'{expr}' names a time that never comes (no such date within {NEVER_YEARS} "
            "years, e.g. February 31st): check the day and month fields"
        ) from exc
    return nxt.astimezone(UTC)
