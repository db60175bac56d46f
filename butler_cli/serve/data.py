"""What the inbox shows beside ``app.views.inbox``: the schedules and their runs, which the
scheduler keeps in ``schedule.db`` (``schedule.store``). Recent outcomes are the decisions
made in the inbox (their own store, read through ``app``) and the scheduler's runs, newest
first — including the outcomes an older inbox kept in ``schedule.db`` as runs of its own.
"""

from __future__ import annotations

from pathlib import Path

from butler_cli.app.views import inbox
from butler_cli.core.errors import ButlerError
from butler_cli.schedule.store import DB_FILE, Job, Run, ScheduleStore

#: The scheduler's files whose change may change the page.
SCHEDULE_FILES = (DB_FILE, f"{DB_FILE}-wal")


def signature(home: Path) -> str:
    """The page's version (``app.views.inbox.signature``), the schedules' files included."""
    return inbox.signature(home, SCHEDULE_FILES)


def outcome_of(run: Run) -> inbox.Outcome:
    return inbox.Outcome(
        key=str(run.id),
        source=run.source,
        task=run.task,
        started_at=run.started_at,
        finished_at=run.finished_at,
        status=run.status,
        park_id=run.park_id,
        text=run.text,
        error=run.error,
        hook=run.hook,
    )


def outcomes(home: Path, limit: int = 20) -> tuple[list[inbox.Outcome], list[str]]:
    """The latest outcomes, newest first, and what is wrong with their stores (one line
    each; the page shows what it can)."""
    decided, problem = inbox.inbox_outcomes(home, limit)
    problems = [problem] if problem else []
    try:
        runs = [outcome_of(r) for r in ScheduleStore(home).runs(limit)]
    except ButlerError as exc:
        runs, problems = [], [*problems, exc.message]
    return inbox.latest_first(decided, runs, limit=limit), problems


def schedules(home: Path) -> tuple[list[tuple[Job, Run | None]], str | None]:
    """Every schedule with its last run, or the one line that says why they cannot be read."""
    store = ScheduleStore(home)
    try:
        last = store.last_runs()
        return [(job, last.get(job.id)) for job in store.jobs()], None
    except ButlerError as exc:
        return [], exc.message
