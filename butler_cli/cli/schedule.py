"""`butler schedule …`: tasks that run on a cron schedule, unattended (as `butler run`)."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Annotated

import typer

from butler_cli.app.config.completions import quietly, schedule_ids
from butler_cli.app.config.home import home as butler_home
from butler_cli.cli import render
from butler_cli.cli.options import Json, Model, Policy, PolicyFile
from butler_cli.core.errors import STATUS_EXIT, ExitCode
from butler_cli.schedule.cron import utc_now
from butler_cli.schedule.jobs import add_job, park_decisions
from butler_cli.schedule.store import Job, ScheduleStore
from butler_cli.ui.markup import safe
from butler_cli.ui.text import visible

app = typer.Typer(
    name="schedule",
    help="Tasks that run on a schedule (cron), unattended: an approval parks and waits for you. "
    "They run while `butler serve` runs.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

JobId = Annotated[
    str,
    typer.Argument(
        metavar="ID",
        help="Schedule id or a unique prefix.",
        autocompletion=quietly(schedule_ids),
    ),
]


def _store() -> ScheduleStore:
    return ScheduleStore(butler_home())


@app.command("add")
def add(
    cron: Annotated[
        str,
        typer.Argument(
            metavar="WHEN", help="Cron expression ('0 8 * * 1-5') or @hourly/@daily/@weekly/…"
        ),
    ],
    task: Annotated[str, typer.Argument(metavar="TASK", help="What to do, as for `butler run`.")],
    model: Model = None,
    policy: Policy = None,
    policy_file: PolicyFile = None,
    folder: Annotated[
        str | None,
        typer.Option("--folder", help="Folder the task runs in. Default: this one."),
    ] = None,
    on_park: Annotated[
        str | None,
        typer.Option(
            "--on-park",
            help="When a run parks: a command (run without a shell, the event as JSON on its "
            "stdin) or an http(s):// URL the event is POSTed to.",
            show_default=False,
        ),
    ] = None,
    hook_timeout: Annotated[
        float, typer.Option("--hook-timeout", help="Seconds the on-park hook may take.")
    ] = 10.0,
    yes_safe: Annotated[
        bool,
        typer.Option(
            "--yes-safe",
            help="Each run acts on what the policy or an approval you kept allows, as `run "
            "--yes-safe` does. Without it that parks too. Never approves what needs a person.",
        ),
    ] = False,
) -> None:
    """Add a schedule; the model and policy are fixed now (flags, environment, config)."""
    job = add_job(
        cron,
        task,
        model=model,
        policy=policy,
        policy_file=policy_file,
        folder=folder,
        on_park=on_park,
        hook_timeout=hook_timeout,
        yes_safe=yes_safe,
    )
    render.out().out(
        f"schedule {job.id}: {visible(job.cron)} — next run {_local(job.next_due)}",
        highlight=False,
    )


@app.command("list")
def list_(json_out: Json = False) -> None:
    """Every schedule: when it runs next, and what its last run came to (a park it left, and
    whether someone has decided it since). Creates nothing on a fresh home."""
    store = _store()
    jobs, last = store.jobs(), store.last_runs()
    decided = park_decisions([r.park_id for r in last.values() if r.park_id])
    if json_out:
        rows = []
        for j in jobs:
            run = last.get(j.id)
            rows.append(
                {
                    **{k: getattr(j, k) for k in ("id", "cron", "task", "model", "policy")},
                    "folder": j.folder,
                    "paused": j.paused,
                    "yes_safe": j.yes_safe,
                    "next_run": j.next_due,
                    "last_outcome": run.status if run else None,
                    "last_park": run.park_id if run else None,
                    "last_park_decision": decided.get(run.park_id) if run and run.park_id else None,
                }
            )
        render.print_json(rows)
        return
    if not jobs:
        sys.stdout.write('No schedules. Add one: butler schedule add "0 8 * * 1-5" "TASK"\n')
        return
    lines = []
    for j in jobs:
        run = last.get(j.id)
        outcome = "never run"
        if run is not None:
            outcome = (
                f"{run.status}{f' ({run.park_id})' if run.park_id else ''} at {run.started_at}"
            )
            decision = decided.get(run.park_id or "")
            if decision in ("approved", "denied"):
                outcome += f", since {decision}"
        nxt = "paused" if j.paused else f"next {_local(j.next_due)}"
        lines.append(f"{j.id}  {visible(j.cron)}  {nxt}  last: {outcome}")
        lines.append(f"        task: {visible(j.task)}")
        lines.append(f"        model: {visible(j.model)}  policy: {visible(j.policy or '')}")
    sys.stdout.write("\n".join(lines) + "\n")


@app.command("remove")
def remove(job_id: JobId) -> None:
    """Remove a schedule (its past runs stay in the record)."""
    store = _store()
    job = store.get(job_id)
    store.remove(job.id)
    typer.echo(f"schedule {job.id} removed")


@app.command("pause")
def pause(job_id: JobId) -> None:
    """Stop running a schedule until `schedule resume`."""
    job = _set_paused(job_id, True)
    typer.echo(f"schedule {job.id} paused")


@app.command("resume")
def resume(job_id: JobId) -> None:
    """Run a paused schedule again, from its next time after now (no catch-up)."""
    job = _set_paused(job_id, False)
    typer.echo(f"schedule {job.id} resumed — next run {_local(job.next_due)}")


def _set_paused(job_id: str, paused: bool) -> Job:
    """Pause or resume the schedule ``job_id`` names (an id or a prefix); the job as it is now."""
    store = _store()
    job = store.get(job_id)
    store.set_paused(job.id, paused, utc_now())
    return store.get(job.id)


@app.command("run")
def run_now(job_id: JobId, json_out: Json = False) -> None:
    """Run a schedule's task now, once, unattended (its next scheduled time is unchanged)."""
    from butler_cli.schedule.runner import Scheduler  # builds a butler: only `schedule run`

    store = _store()
    done = Scheduler(store).run_now(store.get(job_id))
    if json_out:
        render.print_json_line(
            {
                "schedule": done.job.id,
                "status": done.status,
                "park_id": done.park_id,
                "text": done.text,
                "error": done.error,
                "hook": done.hook_problem,
            }
        )
    else:
        _say(done)

    raise typer.Exit(STATUS_EXIT.get(done.status, ExitCode.FAILED))


def _say(done: object) -> None:
    """One run's outcome, as `butler run` prints it (model text neutralised)."""
    out = render.out()
    status = getattr(done, "status", "")
    text, park_id = getattr(done, "text", ""), getattr(done, "park_id", None)
    if text:
        out.print(safe(text, lines=True))
    if status == "parked":
        out.print(f"⏸ parked {park_id}: decide with butler resume {park_id} (or in butler serve)")
    elif status == "failed":
        render.warn(f"failed: {getattr(done, 'error', '')}")
    problem = getattr(done, "hook_problem", None)
    if problem:
        render.warn(problem)


def _local(stamp: str) -> str:
    return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M %Z")
