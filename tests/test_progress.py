"""The progress a person sees on a real terminal (a pty): the "thinking…" spinner while the
model works, one line per tool call, and nothing of the spinner left on the screen."""

from __future__ import annotations

import re

import pexpect
from conftest import spawn_butler
from fake_llm import Reply, openai_stream

KEY = "sk-test-progress-1234567890"
CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen(raw: str) -> list[str]:
    """The lines a terminal shows after ``raw``: carriage return, newline, cursor up, erase
    line; other escapes (colours, cursor visibility) draw nothing."""
    lines, row, col = [""], 0, 0
    i = 0
    while i < len(raw):
        ch = raw[i]
        m = CSI.match(raw, i)
        if m:
            arg, op = m.groups()
            if op == "A":
                row = max(0, row - int(arg or 1))
            elif op == "K":
                lines[row] = "" if arg == "2" else lines[row][:col]
            i = m.end()
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
            if row == len(lines):
                lines.append("")
        elif ch == "\x08":
            col = max(0, col - 1)
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + ch + line[col + 1 :]
            col += 1
        i += 1
    return [line.rstrip() for line in lines if line.strip()]


def test_the_spinner_shows_while_the_model_thinks_and_is_gone_after(
    fake, butler_home, workdir
) -> None:
    """Three slow model calls (two tool rounds, then the answer), on a real terminal: the
    spinner is drawn, every tool line and the answer stand on lines of their own, no trace of
    the spinner remains, and the cursor is shown again at the end."""
    fake.replies = [
        Reply(events=openai_stream("", [("c1", "now", ["{}"])]), delay_s=0.4),
        Reply(events=openai_stream("", [("c2", "now", ["{}"])]), delay_s=0.4),
        Reply(events=openai_stream("It is late."), delay_s=0.4),
    ]
    model = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    child = spawn_butler(
        ["run", *model, "what time is it?"], butler_home, workdir, OPENAI_API_KEY=KEY
    )
    child.expect(pexpect.EOF)
    raw = child.before
    assert "thinking…" in raw  # it was drawn while the model took its time
    shown = screen(raw)
    assert not [line for line in shown if "thinking" in line], shown
    ran = [line for line in shown if re.fullmatch(r"  ✓ now\(\{\}\) — ran \d+ ms", line)]
    assert len(ran) == 2, shown
    assert "It is late." in shown
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l")  # the cursor is back


def test_the_chat_streams_words_over_the_spinner_and_leaves_no_trace(
    fake, butler_home, workdir
) -> None:
    """The chat: words streamed in a tool round, a silent tool round, a streamed answer — each
    after the model took long enough for the spinner to be drawn."""
    import io

    fake.replies = [
        Reply(
            events=openai_stream("Let me check the **clock**.", [("c1", "now", ["{}"])]),
            delay_s=0.3,
        ),
        Reply(events=openai_stream("", [("c2", "now", ["{}"])]), delay_s=0.3),
        Reply(events=openai_stream("It is *late*."), delay_s=0.3),
    ]
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(
        f'model = "openai:gpt-test"\n[providers.openai]\nbase_url = "{fake.url}/v1"\n'
    )
    child = spawn_butler(["chat"], butler_home, workdir, color=True, OPENAI_API_KEY=KEY)
    child.expect("you ›")
    child.logfile_read = log = io.StringIO()
    child.sendline("what time?")
    child.expect("model call")
    child.expect("you ›")
    raw = log.getvalue()
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    raw = raw[raw.find("\x1b[?2004l") :]  # from the moment the line was sent
    assert "thinking…" in raw
    shown = screen(raw)
    ran = r"  ✓ now\(\{\}\) — ran \d+ ms"
    assert shown[0] == "Let me check the clock." and shown[3] == "It is late.", shown
    assert re.fullmatch(ran, shown[1]) and re.fullmatch(ran, shown[2]), shown


def test_a_failed_model_call_takes_the_spinner_away_first(fake, butler_home, workdir) -> None:
    """The model fails after the spinner was drawn: the failure stands on its own line and
    the cursor is shown again (the spinner used to run on, and the cursor stayed hidden)."""
    fake.replies = [Reply(401, body={"error": {"message": "bad key"}}, delay_s=0.4)]
    model = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    child = spawn_butler(["run", *model, "hi"], butler_home, workdir, OPENAI_API_KEY=KEY)
    child.expect(pexpect.EOF)
    raw = child.before
    assert "thinking…" in raw
    shown = screen(raw)
    assert [line for line in shown if "failed" in line] == [
        "✗ failed: openai refused the API key (401); check OPENAI_API_KEY"
    ], shown
    assert not [line for line in shown if "thinking" in line], shown
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l")


def test_a_turn_of_quick_tools_starts_one_ticker_thread_not_one_a_tool(monkeypatch) -> None:
    """The chat's running-tool line had a thread of its own per call: starting it cost more
    than the rest of a quick tool round on a terminal (0.2 of 0.26 ms). One thread serves the
    turn; a quick tool draws nothing, a slow one still shows its line and erases it."""
    import io
    import threading
    import time

    from rich.console import Console

    from butler_cli.core.messages import ToolResultBlock, ToolUseBlock
    from butler_cli.repl import ticker
    from butler_cli.repl.progress import ChatProgress

    started: list[str] = []
    real_start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    monkeypatch.setattr(ticker, "FIRST_DRAW_S", 0.05)
    screen = io.StringIO()
    progress = ChatProgress(Console(file=screen, force_terminal=True, width=80))
    for i in range(40):
        call = ToolUseBlock(id=f"c{i}", name="read_file", input={"path": f"f{i}.txt"})
        progress.tool_started(call)
        if i == 39:  # the last one runs long enough to be drawn
            time.sleep(0.2)
            assert "read_file" in screen.getvalue() and "running" in screen.getvalue()
        result = ToolResultBlock(tool_use_id=call.id, content="ok")
        progress.tool_finished(call, result, 0.0)
    progress.stop()
    assert started.count("butler-tool-ticker") == 1, started
    shown = screen.getvalue()
    assert "\r\x1b[2K" in shown[shown.rindex("running") :]  # the live line was erased
