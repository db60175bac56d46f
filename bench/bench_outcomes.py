"""Where the inbox keeps what became of a decision: its own ``inbox-outcomes.jsonl``
(``app.views.inbox.record_outcome``) beside the ``schedule.db`` run row it used to write
(``ScheduleStore.start_run`` + ``finish_run``), in one run, on the same machine.

Run: python bench/bench_outcomes.py [OUTCOMES]  (default 1000; prints a Markdown table)
Measures keeping one outcome and reading the page's 20 latest out of OUTCOMES.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from butler_cli.app.views.inbox import record_outcome
from butler_cli.schedule.store import ScheduleStore
from butler_cli.serve import data

RUNS = 31


def timed(work: Callable[[], object], runs: int = RUNS) -> list[float]:
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        took.append((time.perf_counter() - start) * 1000)
    return took


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    root = Path(tempfile.mkdtemp())
    old, new = root / "old", root / "new"
    now = datetime.now(UTC)
    task, text = "summarize notes/inbox.md " + "t" * 150, "x" * 100
    store = ScheduleStore(old)

    def keep_old() -> None:
        run = store.start_run(None, "inbox", task, now)
        store.finish_run(run, "done", now, park_id="abcdefgh", text=text)

    def keep_new() -> None:
        record_outcome(new, "abcdefgh", "done", task=task, text=text)

    for _ in range(count - RUNS):
        keep_old()
        keep_new()
    rows = [
        ("keep one outcome", timed(keep_old), timed(keep_new)),
        (
            f"read the page's 20 latest of {count}",
            timed(lambda: ScheduleStore(old).runs(20)),
            timed(lambda: data.outcomes(new)),
        ),
    ]
    print("| measure | `schedule.db` (before) | `inbox-outcomes.jsonl` (now) |")
    print("|---|---|---|")
    for name, before, after in rows:
        print(
            f"| {name} | {statistics.median(before):.2f} ms | {statistics.median(after):.2f} ms |"
        )


if __name__ == "__main__":
    main()
