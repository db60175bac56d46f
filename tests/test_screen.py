"""Issue 35 items 2–5: one clean screen per action, every line wrapped between words, one
prompt grammar — through the installed butler on a real pseudo-terminal.

- A governed call is shown once: its title (what it acts on), the reason, what the title and
  the change do not show, and the change; the raw arguments only on ``d``. The progress line
  does not repeat them.
- Every line butler writes fits the terminal and breaks between words (banner, progress
  lines, the box, the legend, ``/tools``, ``/pending``, ``/context``), at 40 and 80 columns.
- Every approval question has a legend, takes ``?`` for help and explains any other answer;
  the chat names its own commands (``/resume ID``); ``@`` lines never contradict each other.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import call, spawn_butler

APPROVE = r"Approve\? \[y/n/l/d/s(/w)?(/a)?\]"
MARKER = "UNIQUE-CONTENT-MARKER"


def screen_lines(raw: str) -> list[str]:
    """What a terminal shows, line by line: escapes dropped, carriage returns as line starts."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\x1b\][^\x07]*\x07", "", raw)
    return [line.split("\r")[-1].rstrip() for line in plain.replace("\r\n", "\n").split("\n")]


def flat(lines: list[str]) -> str:
    """The lines joined as prose: a word cut across two lines shows as two words."""
    inner = [re.sub(r"^[│ ]+|[│ ]+$", "", line.replace("\u00a0", " ")) for line in lines]
    return " ".join(part for part in inner if part)


def chat(home: Path, cwd: Path, model: str, columns: int = 80, rows: int = 40) -> Any:
    child = spawn_butler(["chat", "--model", model], home, cwd, dimensions=(rows, columns))
    child.logfile_read = io.StringIO()
    child.expect("you ›")
    return child


def words(text: str) -> str:
    """A pattern for ``text`` however its lines wrap (a break wherever it has a space)."""
    return r"\s+".join(re.escape(word) for word in text.split())


def dialogue(child: Any, *steps: tuple[str, str]) -> None:
    """Each (answer, what is said next): the answer sent, then the words expected."""
    for answer, said in steps:
        child.sendline(answer)
        child.expect(words(said))


def leave(child: Any) -> None:
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()


def test_a_file_write_is_shown_once_and_its_raw_arguments_on_d(
    butler_home: Path, workdir: Path, script: Any
) -> None:
    """The content of a new file appears once (its numbered lines), not again as a
    ``\\n``-escaped JSON string in the box nor in the progress line; the title counts in
    words ("2 lines", one space between its parts). ``d`` shows the arguments exactly."""
    content = f"first {MARKER}\nsecond line\n"
    model = script(
        {"tool_calls": [call("write_file", "w", path="notes.txt", content=content)]},
        {"text": "ok"},
    )
    child = chat(butler_home, workdir, model)
    child.sendline("go")
    child.expect(APPROVE)
    box = child.before
    child.sendline("d")
    child.expect("exactly as given")
    child.expect(APPROVE)
    details = child.before
    child.sendline("l")
    child.expect("you ›")
    leave(child)
    assert box.count(MARKER) == 1, box  # the diff's line, and nowhere else
    assert "1 | first " + MARKER in box and "2 | second line" in box
    assert '"content"' not in box and "\\n" not in box
    # the title wraps inside the box wherever the temp folder's length puts the break
    flat = " ".join(line.strip("│ ") for line in screen_lines(box))
    assert "(2 lines)" in flat and "line(s)" not in flat and "(1 lines)" not in flat, flat
    title = next(line for line in screen_lines(box) if "write_file: " in line)
    assert "  (" not in title.strip("│ ")
    assert "⏸" not in box  # the box says the call is parked: no progress line repeats it
    assert '"content": "first ' + MARKER + '\\nsecond line\\n"' in details  # d: exactly


def test_a_command_is_one_shell_line(butler_home: Path, workdir: Path, script: Any) -> None:
    """`run_command ls -la` is three lines in its box (title, reason, nothing else), the argv
    one shell-quoted line, not six lines of pretty-printed JSON; an argument the title does
    not show (a timeout) still is, on a line of its own."""
    model = script(
        {"tool_calls": [call("run_command", "c", argv=["ls", "-la", "my file"], timeout_s=5)]},
        {"text": "ok"},
    )
    child = chat(butler_home, workdir, model, columns=200)
    child.sendline("go")
    child.expect(APPROVE)
    box = screen_lines(child.before)
    child.sendline("l")
    child.expect("you ›")
    leave(child)
    top = next(i for i, line in enumerate(box) if line.startswith("╭"))
    bottom = next(i for i, line in enumerate(box) if line.startswith("╰"))
    inside = [line.strip("│ ") for line in box[top + 1 : bottom]]
    assert inside[0] == f"run_command: ls -la 'my file' (in {workdir})", inside
    assert inside[1].startswith("why: ")
    assert inside[2:] == ["timeout_s: 5"], inside


def test_every_line_wraps_between_words_at_40_and_80_columns(
    butler_home: Path, workdir: Path, butler: Any, script: Any
) -> None:
    """The banner, the progress lines, the box, the legend, `/tools`, `/pending` and
    `/context` each fit the terminal, and no word is cut across two lines."""
    long_name = "a-rather-long-file-name-for-the-notes-of-the-day.txt"
    model = script(
        {"tool_calls": [call("read_file", "r", path="missing notes of the week.txt")]},
        {"tool_calls": [call("write_file", "w", path=long_name, content="one two three\n")]},
        {"text": "ok"},
    )
    parked = script({"tool_calls": [call("delete_file", "d", path="some-file-to-delete.txt")]})
    assert butler("run", "--model", parked, "tidy the folder of notes please").returncode == 3
    for columns in (40, 80):
        child = chat(butler_home, workdir, model, columns=columns)
        child.sendline("go")
        child.expect(APPROVE)
        child.sendline("l")
        child.expect("you ›")
        for command in ("/tools", "/pending", "/context"):
            child.sendline(command)
            child.expect("you ›")
        leave(child)
        lines = screen_lines(child.logfile_read.getvalue())
        too_wide = [line for line in lines if len(line) > columns]
        assert not too_wide, (columns, too_wide)
        prose = flat(lines)
        for words in (
            "/help for commands, Ctrl-D to leave",
            'read_file({"path":"missing notes of the week.txt"}) —',
            "changes files on your machine — asking you first",
            "[d] details",
            "always allow this here",
            "Create or overwrite a text file.",
            "awaiting a decision",
            "tidy the folder of notes please",
            "each request: about",
        ):
            assert words in prose, (columns, words)
        # a word longer than 40 columns is folded there, not at 80 — unless the title's whole
        # path (one word, its length the temp folder's) is itself too long for 80
        if columns == 80 and len(f"write_file: {workdir / long_name}") < columns - 4:
            assert long_name in prose
    child = spawn_butler(["pending"], butler_home, workdir, dimensions=(40, 40))
    child.expect(pexpect.EOF)
    child.close()
    lines = screen_lines(child.before)
    assert all(len(line) <= 40 for line in lines), lines
    assert "task: tidy the folder of notes please" in flat(lines)
    assert "awaiting a decision — butler resume ID --approve | --deny" in flat(lines)


def test_one_prompt_grammar_for_one_action_and_several(
    butler_home: Path, workdir: Path, script: Any
) -> None:
    """Both questions show a legend, answer `?` with a line per key, and explain an unknown
    answer and Enter alone instead of asking again in silence; "later" names `/resume ID`."""
    model = script(
        {
            "tool_calls": [
                call("write_file", "w1", path="a.txt", content="a\n"),
                call("write_file", "w2", path="b.txt", content="b\n"),
            ]
        },
        {"text": "ok"},
    )
    child = chat(butler_home, workdir, model)
    child.sendline("go")
    child.expect(words("[e] decide each in turn  [l] later  [?] what each does"))
    child.expect(r"Approve all 2 actions shown\? \[y/n/e/l\]")
    dialogue(
        child,
        ("?", "e  decide each in turn: shows each action again"),
        ("x", "'x' is not a choice here — [y] approve all of them"),
        ("", "Enter alone decides nothing — [y] approve all of them"),
        ("e", "[?] what each does"),
    )
    child.expect(APPROVE)
    dialogue(
        child,
        ("?", "d  details: shows every argument exactly as given"),
        ("l", "Left parked. Decide it later with /resume"),
    )
    child.expect("you ›")
    leave(child)


def test_resume_on_a_terminal_speaks_the_same_grammar(
    butler_home: Path, workdir: Path, butler: Any, script: Any
) -> None:
    """`butler resume ID` asked silently again on any other answer: now the legend, `?` and
    an unknown answer are said as in the chat."""
    model = script({"tool_calls": [call("delete_file", "d", path="x.txt")]}, {"text": "ok"})
    assert butler("run", "--model", model, "delete x").returncode == 3
    park_id = json.loads(butler("pending", "--json").stdout)[0]["id"]
    child = spawn_butler(["resume", park_id], butler_home, workdir, dimensions=(40, 80))
    child.expect(words("[y] approve once  [n] deny  [?] what each does"))
    child.expect(r"Approve\? \[y/n\]")
    dialogue(
        child,
        ("maybe", "'maybe' is not a choice here"),
        ("?", "n  deny: runs nothing"),
        ("n", "Note for the model"),
    )
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()


@pytest.mark.parametrize("binary", [False, True])
def test_at_lines_never_contradict_each_other(
    butler_home: Path, workdir: Path, script: Any, binary: bool
) -> None:
    """A line with an `@word` that is no file and an `@file` that cannot be attached sends
    nothing: it used to say "@ana … sent as written", then "nothing was sent"; a binary file
    was "not attached: … an attachment is sent as text — nothing was sent"."""
    (workdir / "folder").mkdir()
    (workdir / "data.bin").write_bytes(b"\x00\x01\x02\xff" * 10)
    model = script({"text": "never"})
    child = chat(butler_home, workdir, model)
    child.sendline("ping @ana about @data.bin" if binary else "ping @ana about @folder")
    child.expect("nothing was sent")
    said = flat(screen_lines(child.before + child.after))
    child.expect("you ›")
    leave(child)
    assert "sent as written" not in said, said
    assert "is sent as text" not in said, said


def test_run_on_a_terminal_shows_events_in_order_rendered_and_once(
    butler_home: Path, workdir: Path, butler: Any, script: Any
) -> None:
    """`butler run` on a terminal: each round's words before the calls they announce (the
    first round's were never shown, the parked round's came after its actions), the parked
    action once (it was twice), the answer rendered as the chat renders it (no `**`, no
    fences). Piped, the same run stays plain: the answer's Markdown as written on stdout."""
    parks = script(
        {"text": "Let me look at the clock first.", "tool_calls": [call("now", "t")]},
        {
            "text": "I'll update the **notes** now.",
            "tool_calls": [call("write_file", "w", path="notes.md", content="# Notes\n")],
        },
    )
    child = spawn_butler(["run", "--model", parks, "update notes"], butler_home, workdir)
    child.expect(pexpect.EOF)
    child.close()
    seen = flat(screen_lines(child.before))
    assert child.exitstatus == 3, seen
    order = [
        seen.find("Let me look at the clock first."),
        seen.find("✓ now("),
        seen.find("I'll update the notes now."),
        seen.find("write_file: "),
        seen.find("decide: butler resume"),
    ]
    assert -1 not in order and order == sorted(order), (order, seen)
    assert seen.count("notes.md") == 1 and "**" not in seen, seen

    answer = "Here is **the plan**:\n\n- one\n- two\n\n```sh\nls -la\n```\n"
    plan = script({"text": "Thinking.", "tool_calls": [call("now", "t")]}, {"text": answer})
    child = spawn_butler(["run", "--model", plan, "plan"], butler_home, workdir)
    child.expect(pexpect.EOF)
    child.close()
    seen = flat(screen_lines(child.before))
    assert child.exitstatus == 0, seen
    assert seen.find("Thinking.") < seen.find("✓ now(") < seen.find("Here is the plan:"), seen
    assert "**" not in seen and "```" not in seen and "ls -la" in seen, seen
    piped = butler("run", "--model", plan, "plan")
    assert piped.returncode == 0 and piped.stdout.startswith(answer), piped.stdout
