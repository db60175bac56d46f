"""`butler resume ID` with no flag on a real pseudo-terminal: it shows the action and asks."""

from __future__ import annotations

import json
import os

import pexpect
from conftest import butler_exe, call, prompt_speed


def spawn(args: list[str], home, cwd) -> pexpect.spawn:
    env = {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1", "TERM": "dumb"}
    child = pexpect.spawn(butler_exe(), args, cwd=str(cwd), env=env, encoding="utf-8", timeout=20)
    return prompt_speed(child)


def park(butler, script) -> str:
    model = script(
        {"tool_calls": [call("write_file", "w1", path="out.txt", content="hi")]},
        {"text": "All done."},
    )
    assert butler("run", "--model", model, "write it").returncode == 3
    return json.loads(butler("pending", "--json").stdout)[0]["id"]


def test_prompt_shows_the_action_enter_repeats_y_approves(
    butler, script, butler_home, workdir
) -> None:
    park_id = park(butler, script)
    child = spawn(["resume", park_id], butler_home, workdir)
    child.expect("write_file")
    child.expect('"content": "hi"')
    child.expect(r"Approve\? \[y/n\]")
    child.sendline("")  # Enter alone never approves
    child.expect(r"Approve\? \[y/n\]")
    assert not (workdir / "out.txt").exists()
    child.sendline("y")
    child.expect("All done.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (workdir / "out.txt").read_text() == "hi"


def test_prompt_deny_asks_for_a_note(butler, script, butler_home, workdir) -> None:
    park_id = park(butler, script)
    child = spawn(["resume", park_id], butler_home, workdir)
    child.expect(r"Approve\? \[y/n\]")
    child.sendline("n")
    child.expect("Note for the model")
    child.sendline("use the other file")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and not (workdir / "out.txt").exists()
    shown = json.loads(butler("show", park_id, "--json").stdout)
    assert shown["decision"] == {"approved": False, "note": "use the other file"}


def test_ctrl_c_at_the_prompt_changes_nothing(butler, script, butler_home, workdir) -> None:
    park_id = park(butler, script)
    before = (butler_home / "parks" / f"{park_id}.json").read_bytes()
    child = spawn(["resume", park_id], butler_home, workdir)
    child.expect(r"Approve\? \[y/n\]")
    child.sendintr()
    child.expect(f"Left parked; decide later with: butler resume {park_id}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 3
    assert (butler_home / "parks" / f"{park_id}.json").read_bytes() == before
    assert not (workdir / "out.txt").exists()
