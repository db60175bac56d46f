"""Crash injection for the tests that prove the gate holds (no effect in normal runs).

When ``BUTLER_TEST_CRASH_AT`` names a step, the process kills itself there with SIGKILL — no
cleanup, no flush, as a power cut or an OOM kill would. The variable is read at each step, never
at import, and nothing else reads it.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "BUTLER_TEST_CRASH_AT"

#: Every step a crash can be injected at, in the order a park lives through them.
STEPS = (
    "park-before-rename",  # the new park's temp file is written, not yet renamed into place
    "park-written",  # the park is on disk; nobody has been asked yet
    "decision-written",  # the decision is recorded; nothing has run
    "action-started",  # `started` is recorded for a call; its executor is about to run
    "action-ran",  # the executor returned; its result is not recorded yet
    "round-resolved",  # every result is recorded; the loop is about to continue
    "park-retired",  # the resolved park moved to parks/done; the task's end is not yet told
)


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


#: When set, every read of a park file appends its path to the file this names: a test
#: counts how often one command reads and verifies a park (issue 22: `resume` reads it once).
READS_ENV = "BUTLER_TEST_COUNT_PARK_READS"


def count_read(path: os.PathLike[str] | str) -> None:
    target = os.environ.get(READS_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(f"{os.fspath(path)}\n")
