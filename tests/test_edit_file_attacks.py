"""Attacks on ``edit_file`` from a model's output (red team, issue 35 item 10): what a model
asks for must never cost the butler more than the file it may make. Through the installed
`butler`, with real files.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
from pathlib import Path
from typing import Any

from conftest import ALLOW_ALL, butler_exe, call, tool_results

#: The address space the butler is given here: far more than a run needs, far less than the
#: edit below would take if it were made in memory before it was refused.
LIMIT = 1536 * 1024 * 1024


def capped_butler(
    home: Path, cwd: Path, kind: int, limit: int, *args: str
) -> subprocess.CompletedProcess[str]:
    """The installed `butler` (exec'd, not forked: the limit is its own) with ``kind`` of
    resource limited to ``limit``."""
    return subprocess.run(
        [butler_exe(), *args],
        cwd=cwd,
        env={**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(kind, (limit, limit)),
    )


def parked_and_shown(butler: Any, model: str, task: str) -> str:
    """``task`` parked by ``model``, then `butler show` of its park (within a minute: the
    diff of a long file must not take longer)."""
    ran = butler("run", "--model", model, task, "--json")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    pid = json.loads(ran.stdout.splitlines()[0])["park_id"]
    shown = butler("show", pid, timeout=60)
    assert shown.returncode == 0, shown.stderr
    return str(shown.stdout)


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
    ran = capped_butler(
        butler_home, workdir, resource.RLIMIT_AS, LIMIT, "run", "--model", model, "grow", "--json"
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "Traceback" not in ran.stderr and "MemoryError" not in ran.stdout + ran.stderr
    results = tool_results(ran.stdout)
    assert results[0]["is_error"] and "larger than" in results[0]["content"], results
    assert plan.read_text() == "x\n" * 20_000


def test_a_fifo_put_where_a_parked_change_points_never_hangs_its_showing(
    butler, script, workdir: Path
) -> None:
    """After the park, the file an edit (or a delete) names becomes a FIFO — a sandboxed
    `mkfifo` can do that in the task's folder. `butler show` read it to draw the change and
    waited for a writer for ever (and so did `resume` and the inbox page); now the change says
    the file cannot be read, and nothing is changed."""
    (workdir / "plan.txt").write_text("alpha\nold\n")
    (workdir / "gone.txt").write_text("bye\n")
    model = script(
        {"tool_calls": [call("edit_file", "e1", path="plan.txt", old_string="old",
                             new_string="new"),
                        call("delete_file", "d1", path="gone.txt")]},
        {"text": "k"},
    )  # fmt: skip
    ran = butler("run", "--model", model, "edit", "--json")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    pid = json.loads(ran.stdout.splitlines()[0])["park_id"]
    for name in ("plan.txt", "gone.txt"):
        (workdir / name).unlink()
        os.mkfifo(workdir / name)
    shown = butler("show", pid, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "cannot be read now" in shown.stdout, shown.stdout
    done = butler("resume", pid, "--deny", timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(stat.S_ISFIFO(os.lstat(workdir / n).st_mode) for n in ("plan.txt", "gone.txt"))


RULES = """
[[rule]]
name = "keep is never written"
tool = "write_file"
tier = "forbidden"
args = { path = "glob:keep/**" }

[[rule]]
name = "notes are mine"
tool = "write_*"
tier = "safe"
args = { path = "glob:notes/**" }
"""


def test_a_rule_about_writing_a_file_governs_editing_it(butler, script, workdir: Path) -> None:
    """The person's `tiered` rules were written for write_file before edit_file existed: a
    `forbidden` write rule let the model's edit of the same file through to an approval (a
    "never" became "ask"). An edit writes part of a file: a rule naming write_file names it
    too — forbidden refuses the edit, safe lets it run."""
    (workdir / "rules.toml").write_text(RULES)
    for folder in ("keep", "notes"):
        (workdir / folder).mkdir()
        (workdir / folder / "x.txt").write_text("old\n")
    model = script(
        {"tool_calls": [call("edit_file", "e1", path="keep/x.txt", old_string="old",
                             new_string="pwned"),
                        call("edit_file", "e2", path="notes/x.txt", old_string="old",
                             new_string="new")]},
        {"text": "k"},
    )  # fmt: skip
    ran = butler(
        "run", "--model", model, "edit", "--json", "--policy", "tiered",
        "--policy-file", "rules.toml", "--yes-safe",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr  # nothing parked
    kept, notes = tool_results(ran.stdout)
    assert kept["is_error"] and "keep is never written" in kept["content"], kept
    assert not notes["is_error"], notes
    assert (workdir / "keep" / "x.txt").read_text() == "old\n"
    assert (workdir / "notes" / "x.txt").read_text() == "new\n"


def test_an_edit_that_cannot_be_written_whole_leaves_the_file_as_it_was(
    butler_home: Path, workdir: Path, script
) -> None:
    """The edit is made in place, through the descriptor that was checked. It truncated the
    file and then wrote: when the disk could not take the longer text (here a file-size limit,
    as a full disk), the person's file was left cut short — its old text lost. Now the room
    is taken first, and a failure there changes nothing."""
    plan = workdir / "plan.txt"
    original = "MARK\n" + "a line of the person's work\n" * 37_000  # ~1 MB
    plan.write_text(original)
    (workdir / "pol.py").write_text(ALLOW_ALL)
    model = script(
        {"tool_calls": [call("edit_file", "e1", path="plan.txt", old_string="MARK\n",
                             new_string="x" * 200_000 + "\n")]},
        {"text": "k"},
    )  # fmt: skip
    limit = len(original) + 100_000

    ran = capped_butler(
        butler_home, workdir, resource.RLIMIT_FSIZE, limit,
        "run", "--model", model, "grow it", "--json", "--policy", "./pol.py:classify", "--yes-safe",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    results = tool_results(ran.stdout)
    assert results[0]["is_error"], results
    assert plan.read_text() == original


def test_an_edit_of_a_long_file_is_shown_as_its_diff_without_waiting(
    butler, script, workdir: Path
) -> None:
    """An ordinary edit of a 100,000-line CSV — replace_all touching every seventh row — was
    diffed by difflib over the whole file: minutes before `show` (and the chat's approval box,
    the inbox page) drew it. The diff is made from where the edit's text occurs."""
    rows = "".join(f"row {i}, value {i % 7}\n" for i in range(100_000))
    (workdir / "data.csv").write_text(rows)
    model = script(
        {"tool_calls": [call("edit_file", "e1", path="data.csv", old_string="value 3\n",
                             new_string="value three\n", replace_all=True)]},
        {"text": "k"},
    )  # fmt: skip
    out = parked_and_shown(butler, model, "rename")
    assert "14286 places" in out, out[:2000]
    assert "-row 3, value 3" in out and "+row 3, value three" in out
    assert "-row 99998, value 3" in out and "+row 99998, value three" in out
    assert "@@ -1,100000 +1,100000 @@" in out and " row 6, value 6" in out  # gaps of 6: one hunk


def test_a_parked_change_to_a_huge_file_is_shown_without_reading_it_whole(
    butler_home: Path, workdir: Path, script
) -> None:
    """A write (or an edit, a delete) parked on a 4 GB file — sparse here, a disk image or a
    log in life: drawing its change read the whole file into memory to diff it (a MemoryError
    traceback from `show` under a 1.5 GB limit; without one, the machine's memory). A file
    past the edit cap is named with its size and not compared."""
    big = workdir / "disk.img"
    with big.open("wb") as fh:
        fh.truncate(4 << 30)
    model = script(
        {"tool_calls": [call("write_file", "w1", path="disk.img", content="small\n")]},
        {"text": "k"},
    )
    ran = capped_butler(
        butler_home, workdir, resource.RLIMIT_AS, LIMIT, "run", "--model", model, "w", "--json"
    )
    assert ran.returncode == 3, ran.stdout + ran.stderr
    pid = json.loads(ran.stdout.splitlines()[0])["park_id"]
    shown = capped_butler(butler_home, workdir, resource.RLIMIT_AS, LIMIT, "show", pid)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Traceback" not in shown.stderr
    assert "too large to compare" in shown.stdout, shown.stdout
    assert big.stat().st_size == 4 << 30


def test_a_write_over_a_long_file_is_shown_as_its_diff_without_waiting(
    butler, script, workdir: Path
) -> None:
    """The model rewrites a 50,000-line CSV with every seventh row changed: difflib over the
    two whole files took about two minutes before `show` (the approval box, the inbox page) drew the
    change. Past a few thousand lines the diff is the lines both share at either end as
    context and every line between, removed then added — nothing that changes is left out."""
    rows = [f"row {i}, value {i % 7}" for i in range(50_000)]
    (workdir / "data.csv").write_text("\n".join(rows) + "\n")
    changed = [r.replace("value 3", "value three") for r in rows]
    model = script(
        {"tool_calls": [call("write_file", "w1", path="data.csv",
                             content="\n".join(changed) + "\n")]},
        {"text": "k"},
    )  # fmt: skip
    out = parked_and_shown(butler, model, "rewrite")
    assert "-row 3, value 3" in out and "+row 3, value three" in out
    assert "-row 49997, value 3" in out and "+row 49997, value three" in out
    assert "@@ -1,50000 +1,50000 @@" in out and " row 49999, value 5" in out
