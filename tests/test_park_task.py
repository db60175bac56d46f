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


def test_the_chats_resume_of_a_run_park_sends_the_parks_own_memory_block(
    butler: Any, butler_home: Path, workdir: Path, fake: Any
) -> None:
    """Issue 22 item 5: `/resume` in a chat of a park `butler run` made sends the memory block
    the park was sent (as `butler resume` does), not the chat's, even when model, policy and
    folder match."""
    import pexpect
    from fake_llm import Reply, openai_stream

    key = {"OPENAI_API_KEY": "sk-test-DO-NOT-LEAK-1234567890"}
    args = json.dumps({"path": "out.txt", "content": "x"})
    fake.replies = [
        Reply(events=openai_stream(calls=[("w1", "write_file", [args])])),
        Reply(events=openai_stream("written")),
    ]
    model = ["--model", "openai:gpt-4o", "--base-url", fake.url + "/v1"]
    ran = butler("run", *model, "write it", "--json", env=key)
    assert ran.returncode == 3, ran.stderr
    pid = json.loads(ran.stdout.splitlines()[0])["park_id"]
    assert butler("memory", "add", "the person's cat is called fact-canary-7").returncode == 0
    child = spawn_butler(["chat", *model], butler_home, workdir, **key)
    child.expect("you ›")
    child.sendline(f"/resume {pid}")
    child.expect(r"Approve\?")
    child.sendline("y")
    child.expect("written")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    systems = [
        json.dumps([m for m in r["body"]["messages"] if m["role"] == "system"])
        for r in fake.requests
    ]
    assert len(systems) == 2
    assert "fact-canary-7" not in systems[1]
    assert systems[1] == systems[0]
