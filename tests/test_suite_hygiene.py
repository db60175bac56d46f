"""The suite itself: no test can reach a real provider with the key of whoever runs it, and a
clean machine that resolves the newest releases runs it as CI does."""

from __future__ import annotations

import os
import re
from typing import Any

from conftest import provider_variables


def test_no_test_inherits_a_provider_key(butler: Any) -> None:
    """Run as `OPENAI_API_KEY=sk-… python -m pytest`: the key is gone for the tests and for
    every butler they start (the fork server and exec'd ones alike)."""
    assert provider_variables(os.environ) == []
    shown = butler("doctor", "--json")
    assert "sk-the-real-one" not in shown.stdout + shown.stderr


def test_a_terminal_size_in_the_environment_does_not_reach_the_test_terminal(
    butler_home: Any, workdir: Any, monkeypatch: Any, script: Any
) -> None:
    """`COLUMNS=200 LINES=50 python -m pytest` (pytest-xdist exports both to its workers): a
    pseudo-terminal a test makes 80 columns wide is 80 columns wide for the butler in it, so
    the approval panel fits in 80 columns."""
    import pexpect
    from conftest import call, spawn_butler

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("LINES", "50")
    model = script({"tool_calls": [call("write_file", "w", path="a.txt", content="x" * 150)]})
    child = spawn_butler(["chat", "--model", model], butler_home, workdir, dimensions=(24, 80))
    child.expect("you ›")
    child.sendline("write")
    child.expect(r"Approve\? \[")
    panel = [
        line
        for line in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before).splitlines()
        if line.startswith(("╭", "│", "╰"))
    ]
    child.sendline("l")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    assert panel and max(len(line) for line in panel) <= 80, panel


def test_every_upper_bound_names_the_release_that_broke_the_butler() -> None:
    """A fresh clone resolves the newest releases (`.ci/run`, a user's `pip install`): a
    dependency capped below one must say, on its line, which release broke the butler and how,
    so the cap is lifted once that is fixed instead of ageing into a stale pin."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    project = tomllib.loads(text)["project"]
    pinned = [
        spec
        for spec in [
            *project["dependencies"],
            *(s for extra in project["optional-dependencies"].values() for s in extra),
        ]
        if re.search(r"<|==|~=", spec.partition(";")[0])  # the version, not a marker's ==
    ]
    for spec in pinned:
        line = next(line for line in text.splitlines() if f'"{spec}"' in line)
        reason = line.partition("#")[2]
        assert re.search(r"\d+\.\d+", reason) and len(reason.split()) >= 4, (
            f"{spec}: an upper bound with no release and reason beside it"
        )
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    assert "venv --clear" in ci
    pips = [line for line in ci.splitlines() if re.search(r"\bpip\b.* install", line)]
    assert pips and not [p for p in pips if re.search(r"(--constraint|\s-c)\s", p)], pips
