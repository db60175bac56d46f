"""Issue 22, item 4: a parked change is shown as a change, in `butler show`.

An overwrite is a unified diff against the file as it is now (plain ``-``/``+`` lines); a new
file is its content with line numbers; a delete names what is lost. Neutralised as before;
``--json`` keeps the exact arguments.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import call


def _park(butler: Any, script: Any, *calls: dict[str, Any]) -> str:
    ran = butler("run", "--model", script({"tool_calls": list(calls)}), "edit", "--json")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def test_show_of_an_overwrite_shows_old_and_new_lines(
    butler: Any, script: Any, workdir: Path
) -> None:
    (workdir / "plan.txt").write_text("alpha\nold line\nomega\n")
    new = "alpha\nnew line \x1b[31mred\nomega\n"
    pid = _park(butler, script, call("write_file", "w1", path="plan.txt", content=new))
    shown = butler("show", pid)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert re.search(r"^\s*-old line$", out, re.M), out
    assert re.search(r"^\s*\+new line \\x1b\[31mred$", out, re.M) or "+new line " in out, out
    assert "\x1b[31m" not in out  # neutralised
    assert re.search(r"^\s* alpha$", out, re.M), out
    as_json = json.loads(butler("show", pid, "--json").stdout)
    assert as_json["calls"][0]["input"]["content"] == new  # the exact arguments


def test_show_of_a_new_file_numbers_its_lines_and_a_delete_names_the_loss(
    butler: Any, script: Any, workdir: Path
) -> None:
    pid = _park(butler, script, call("write_file", "w1", path="fresh.txt", content="one\ntwo\n"))
    out = butler("show", pid).stdout
    assert "new file" in out and re.search(r"^\s*1 \| one$", out, re.M), out
    assert re.search(r"^\s*2 \| two$", out, re.M), out
    (workdir / "gone.txt").write_text("a\nb\nc\n")
    pid = _park(butler, script, call("delete_file", "d1", path="gone.txt"))
    out = butler("show", pid).stdout
    assert "deletes" in out and "3 lines" in out, out
