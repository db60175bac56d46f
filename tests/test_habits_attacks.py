"""Attacks on the chat's habits (red team, issue 35 item 10) from files in the task's folder:
a cloned repository's `.butler/commands` or `.claude/commands` is someone else's words, read
as read_file reads — inside the task's folder, never through a link out of it. Through a real
`butler chat` on a pty against a loopback OpenAI-compatible server.
"""

from __future__ import annotations

import json
from pathlib import Path

from fake_llm import Reply, openai_stream
from test_chat_habits import leave, openai_chat


def test_a_projects_commands_folder_that_links_out_is_no_command(
    butler_home: Path, workdir: Path, fake, tmp_path: Path
) -> None:
    """`.claude/commands` a link to a folder outside the task's folder (and so outside the
    allowed roots read_file keeps to), `.butler` a link to another: their NAME.md files were
    listed in /help and sent to the model whole when the person typed /NAME — the folder was
    resolved first and its target taken as the root. Neither is a command now."""
    outside = tmp_path / "outside"
    (outside / "commands").mkdir(parents=True)
    (outside / "commands" / "leak.md").write_text("canary-outside-41 in a private note\n")
    (outside / "leak2.md").write_text("canary-outside-42 in a private note\n")
    (workdir / ".butler").symlink_to(outside)
    (workdir / ".claude").mkdir()
    (workdir / ".claude" / "commands").symlink_to(outside)
    fake.replies = [Reply(events=openai_stream("Said.")) for _ in range(3)]
    child = openai_chat(fake, butler_home, workdir)
    child.sendline("/help")
    child.expect("/exit")
    child.expect("you ›")
    shown = child.before
    assert "/leak" not in shown and "canary-outside" not in shown, shown
    for name in ("/leak", "/leak2"):
        child.sendline(name)
        child.expect(f"Unknown command {name}")
        child.expect("you ›")
    child.sendline("hello")
    child.expect("Said.")
    child.expect("you ›")
    leave(child)
    sent = json.dumps([r["body"] for r in fake.requests])
    assert "canary-outside" not in sent
