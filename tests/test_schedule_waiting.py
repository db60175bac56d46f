"""Issue 33's schedule stories: a schedule whose last run still waits for a person does not
park the same thing again (under a real `butler serve`, fired three times), and schedules
honour kept approvals under the unattended contract (`schedule add --yes-safe`)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from conftest import call
from serve_support import eventually, start_serve


def _due_now(home: Path, job_id: str) -> None:
    """Make the schedule due at once (what the clock would do in a minute, an hour, a day)."""
    db = sqlite3.connect(home / "schedule.db")
    with db:
        db.execute("UPDATE jobs SET next_due = '2000-01-01T00:00:00+00:00' WHERE id = ?", (job_id,))
    db.close()


def _runs(home: Path, job_id: str) -> list[tuple[str, str | None, str]]:
    db = sqlite3.connect(home / "schedule.db")
    rows = db.execute(
        "SELECT status, park_id, text FROM runs WHERE job_id = ? ORDER BY id", (job_id,)
    ).fetchall()
    db.close()
    return [(str(s), p, str(t)) for s, p, t in rows]


def _add(butler: Any, script: Any, workdir: Path, *extra: str) -> str:
    model = script(
        {"tool_calls": [call("write_file", "w1", path="plan.txt", content="plan")]},
        {"text": "planned"},
    )
    added = butler(
        "schedule", "add", "@daily", "write the plan", "--model", model,
        "--folder", str(workdir), *extra,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    return str(added.stdout.split()[1].rstrip(":"))


def test_a_schedule_waiting_for_a_person_skips_and_says_why(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    job = _add(butler, script, workdir)
    served = start_serve(butler_home, workdir)
    said = ""
    try:
        _due_now(butler_home, job)
        eventually(lambda: [r[0] for r in _runs(butler_home, job)] == ["parked"])
        park = _runs(butler_home, job)[0][1]
        assert park is not None
        for fired in (2, 3):  # fires again while the park waits: skipped, said why
            _due_now(butler_home, job)
            eventually(lambda n=fired: len(_runs(butler_home, job)) == n)  # type: ignore[misc]
            eventually(lambda: _runs(butler_home, job)[-1][0] != "running")
        pending = json.loads(butler("pending", "--json").stdout)
        assert [p["id"] for p in pending] == [park]  # one park, not three
        runs = _runs(butler_home, job)
        assert [r[0] for r in runs] == ["parked", "skipped", "skipped"]
        assert all(park in r[2] and "waits for a person" in r[2] for r in runs[1:])
    finally:
        said = served.stop()
    assert f"schedule {job}: skipped (park {park})" in said and "waits for a person" in said
    # once the person decides, the next run goes ahead
    assert butler("resume", park, "--deny").returncode == 0


def test_yes_safe_schedules_act_on_kept_approvals_and_others_say_why_they_park(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    """A kept approval covers the schedule's write: with `--yes-safe` the run writes; without
    it the run parks, and its reason names the kept approval — not "the policy allows",
    which the policy (it asks) never said."""
    butler_home.mkdir(parents=True, exist_ok=True)
    target = os.path.realpath(workdir / "plan.txt")
    (butler_home / "approvals.toml").write_text(
        '[[approval]]\ntool = "write_file"\n'
        f'folder = "{os.path.realpath(workdir)}"\npatterns = {{ path = "glob:{target}" }}\n'
    )
    careful = _add(butler, script, workdir)
    ran = butler("schedule", "run", careful, "--json")
    assert ran.returncode == 3, ran.stderr
    park = json.loads(ran.stdout)["park_id"]
    shown = json.loads(butler("show", park, "--json").stdout)
    reason = json.dumps(shown)
    assert "kept approval 1 allows 'write_file'" in reason and "the policy allows" not in reason
    assert not (workdir / "plan.txt").exists()

    trusting = _add(butler, script, workdir, "--yes-safe")
    listed = {j["id"]: j for j in json.loads(butler("schedule", "list", "--json").stdout)}
    assert listed[trusting]["yes_safe"] is True and listed[careful]["yes_safe"] is False
    ran = butler("schedule", "run", trusting, "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (workdir / "plan.txt").read_text() == "plan"
