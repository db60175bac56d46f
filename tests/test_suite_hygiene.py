"""The suite itself: no test can reach a real provider with the key of whoever runs it."""

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
