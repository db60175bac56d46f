"""Issue 34: the chat draws a streamed answer at a bounded frame rate, only what changed
(``ui/stream.py``) — and what a person is left with on the screen is the answer rendered whole.

The chat runs on a real pty against a real loopback server; what it wrote is played into pyte,
a terminal emulator (24 rows, scrolling into its history as a terminal does), and compared
with rich's rendering of the whole answer at once, line for line."""

from __future__ import annotations

import io
import time
from typing import Any

import pyte
import pytest
from conftest import spawn_butler
from fake_llm import Reply, _chunk
from test_chat_comforts import leave

KEY = "sk-test-stream-screen-12345"
ROWS, COLUMNS = 24, 80


def answer_pieces() -> list[str]:
    """A long answer in Markdown, about a word a piece: headings, paragraphs, lists right
    after a paragraph (a cut there used to add a blank line), a short code block, a quote."""
    out: list[str] = []
    for part in range(1, 9):
        out += [f"## Part {part}\n\n"]
        words = f"the **butler** reads your notes for part {part} and drafts a plan " * 3
        out += [w + " " for w in words.split()] + ["\n\n"]
        out += [f"- item {i}: *tea* at {i} o'clock\n" for i in range(4)] + ["\n"]
        out += ["```python\n", f"def plan_{part}(week):\n", "    return sorted(week)\n", "```\n\n"]
        out += ["> a quote that ", "ends here\n\n"]
    out += ["The end."]
    return out


def frames(pieces: list[str]) -> list[str]:
    out = [_chunk({"role": "assistant", "content": ""})]
    out += [_chunk({"content": p}) for p in pieces]
    return [*out, _chunk({}, "stop"), "data: [DONE]\n\n"]


def terminal(raw: str) -> list[str]:
    """Every line a 24-row terminal showed after ``raw``, scrolled-off ones first (the pty
    turns each line feed into a carriage return and a line feed)."""
    screen = pyte.HistoryScreen(COLUMNS, ROWS, history=100_000)
    stream = pyte.ByteStream(screen)
    stream.feed(raw.replace("\r\n", "\n").replace("\n", "\r\n").encode())
    gone = ["".join(line[x].data for x in range(COLUMNS)) for line in screen.history.top]
    lines = [line.rstrip() for line in [*gone, *screen.display]]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def rendered_whole(text: str) -> list[str]:
    """rich's rendering of the whole answer at once, at 80 columns, on the same terminal."""
    from rich.console import Console

    from butler_cli.ui.markup import markdown
    from butler_cli.ui.stream import Wrapped

    out = io.StringIO()
    console = Console(file=out, width=COLUMNS, height=ROWS, force_terminal=True, no_color=True)
    console.print(Wrapped(markdown(text)))
    return terminal(out.getvalue())


def chat(fake: Any, butler_home: Any, workdir: Any) -> Any:
    args = ["chat", "--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    child = spawn_butler(args, butler_home, workdir, dimensions=(ROWS, COLUMNS), OPENAI_API_KEY=KEY)
    child.expect("you ›")
    child.logfile_read = io.StringIO()
    return child


def after_the_line(child: Any) -> str:
    raw: str = child.logfile_read.getvalue()
    return raw[raw.find("\x1b[?2004l") :]  # from the moment the line was sent


def trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[0]:
        lines = lines[1:]
    while lines and not lines[-1]:
        lines = lines[:-1]
    return lines


def test_a_long_streamed_answer_ends_on_the_screen_as_if_rendered_whole(
    fake, butler_home, workdir
) -> None:
    pieces = answer_pieces()
    fake.replies = [Reply(events=frames(pieces))]
    child = chat(fake, butler_home, workdir)
    child.sendline("plan my week")
    child.expect(r"1 model call")
    child.expect("you ›")
    raw = after_the_line(child)
    assert leave(child) == 0
    shown = terminal(raw)
    end = next(i for i, line in enumerate(shown) if line.startswith("1 model call"))
    expected = trimmed(rendered_whole("".join(pieces)))
    assert len(expected) > 3 * ROWS  # it scrolled: far taller than the screen
    assert trimmed(shown[:end]) == expected
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l")  # the cursor is back


def test_ctrl_c_mid_stream_leaves_what_was_shown(fake, butler_home, workdir) -> None:
    """The stream stops half-way (the server holds it); Ctrl-C: the part that came stays on
    the screen, rendered (no Markdown marks), the turn says it was cancelled, the cursor is
    shown, and the chat goes on."""
    pieces = answer_pieces()
    held = 60
    fake.replies = [Reply(events=frames(pieces), hold_after=held)]
    child = chat(fake, butler_home, workdir)
    try:
        child.sendline("plan my week")
        # the last piece before the hold: drawn by the frame timer while the stream waits
        child.expect(r"for\s+part\s+2\s+and", timeout=10)
        child.sendintr()
        child.expect("cancelled")
        child.expect("you ›")
    finally:
        fake.release.set()
    raw = after_the_line(child)
    assert leave(child) == 0
    shown = terminal(raw)
    came = "".join(pieces[: held - 1])  # the first frame is the role; then one piece a frame
    end = next(i for i, line in enumerate(shown) if "cancelled" in line)
    assert trimmed(shown[:end]) == trimmed(rendered_whole(came))
    assert "**" not in "\n".join(shown)
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l")


@pytest.mark.parametrize("every", [1, 2, 3, 7, 1_000])
def test_the_screen_is_the_same_however_the_pieces_fall_into_frames(every: int) -> None:
    """How many pieces one frame takes depends on the machine's load: whatever it is, the
    screen ends as the answer rendered whole. A quote or a list printed after a block (not
    in one frame with it) opened with an empty line of its own, so a loaded suite saw one
    line too many after each code block (seen failing with a frame every 1–3 pieces)."""
    from rich.console import Console

    from butler_cli.ui.stream import MarkdownStream

    pieces = answer_pieces()
    out = io.StringIO()
    console = Console(file=out, width=COLUMNS, height=ROWS, force_terminal=True, no_color=True)
    stream = MarkdownStream(console, fps=1e9)  # a frame whenever one may be drawn
    for i, piece in enumerate(pieces):
        # a frame is due at every ``every``-th piece; between, the last one was just drawn
        stream._last = 0.0 if i % every == 0 else time.monotonic() + 3600  # noqa: SLF001
        stream.feed(piece)
    stream.close()
    assert trimmed(terminal(out.getvalue())) == trimmed(rendered_whole("".join(pieces)))
