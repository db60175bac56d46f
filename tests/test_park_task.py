"""Issue 22, item 5: the park's task is what the person typed.

A file attached with ``@path`` in the chat is context for the model (it stays in the
conversation), never the park's task: not in `pending`, `show`'s task, the inbox card, or
the ``on_park`` event a hook sends off the machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conftest import call, spawn_butler

CANARY = "attached-canary-5c1e9b"


def test_an_attached_file_never_becomes_the_parks_task(
    butler: Any, butler_home: Path, workdir: Path, script: Any, tmp_path: Path
) -> None:
    (workdir / "notes.txt").write_text(f"secret plans {CANARY}\n" * 50)
    events = tmp_path / "events.txt"
    hook = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')"
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(
        f"[hooks]\non_park = {json.dumps([sys.executable, '-c', hook, str(events)])}\n"
    )
    model = script(
        {"tool_calls": [call("write_file", "w1", path="summary.txt", content="done")]},
        {"text": "written"},
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    child.expect("you ›")
    child.sendline("summarise @notes.txt please")
    child.expect("attached @notes.txt")
    child.expect(r"Approve\?")
    child.sendline("l")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(__import__("pexpect").EOF)
    child.close()

    pending = butler("pending", "--json")
    [park] = json.loads(pending.stdout)
    assert park["task"] == "summarise @notes.txt please"
    assert CANARY not in pending.stdout
    shown = json.loads(butler("show", park["id"], "--json").stdout)
    assert shown["context"]["task"] == "summarise @notes.txt please"
    # The model was sent the file: it lives in the conversation the park continues.
    assert any(CANARY in json.dumps(m) for m in shown["messages"])
    assert events.exists() and CANARY not in events.read_text()
    assert "summarise @notes.txt please" in events.read_text()
