"""Attacks on ``edit_file`` from a model's output (red team, issue 35 item 10): what a model
asks for must never cost the butler more than the file it may make. Through the installed
`butler`, with real files.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

from conftest import butler_exe, call, tool_results

#: The address space the butler is given here: far more than a run needs, far less than the
#: edit below would take if it were made in memory before it was refused.
LIMIT = 1536 * 1024 * 1024


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_an_edit_that_would_make_a_huge_file_is_refused_before_it_is_made(
    butler_home: Path, workdir: Path, script
) -> None:
    """replace_all of a one-letter string found 20,000 times by 200,000 characters is a 4 GB
    text: the guard used to build it (to check the edit applies) when the call was judged —
    before anyone was asked — so a model's one call could exhaust the machine's memory. It is
    the model's error, one line, and the file is untouched."""
    plan = workdir / "plan.txt"
    plan.write_text("x\n" * 20_000)
    model = script(
        {"tool_calls": [call("edit_file", "e1", path="plan.txt", old_string="x",
                             new_string="y" * 200_000, replace_all=True)]},
        {"text": "k"},
    )  # fmt: skip
    ran = subprocess.run(
        [butler_exe(), "run", "--model", model, "grow it", "--json"],
        cwd=workdir,
        env={**os.environ, "BUTLER_HOME": str(butler_home), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_capped,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "Traceback" not in ran.stderr and "MemoryError" not in ran.stdout + ran.stderr
    results = tool_results(ran.stdout)
    assert results[0]["is_error"] and "larger than" in results[0]["content"], results
    assert plan.read_text() == "x\n" * 20_000
