"""What a person reads can be neither spoofed nor cut (guarantees: "What you see is what runs").

Model-chosen text carries terminal controls, bidi overrides, zero-width characters and very
long arguments into every surface: `run`, `pending`, `show`, `resume` (subprocesses) and the
chat's approval panel and `d` (a real pseudo-terminal at 80 columns). Each surface must show
that something was there — controls as JSON writes them (``\\u001b``, ``\\r``, ``\\b``),
invisible formatting characters as ``<U+XXXX>`` — and never pass the raw character through;
``--json`` keeps the exact values.
"""

from __future__ import annotations

import io
import json
import re

import pexpect
import pytest
from conftest import call, spawn_butler

APPROVE = r"Approve\? \[y/n/l/d/s(/w)?(/a)?\]"
MORE = r"-- more: lines \d+–(\d+) of \d+"

#: name → (what the model sends, what a person must see instead)
PAYLOADS: dict[str, tuple[str, str]] = {
    "csi-erase-line": ("\x1b[2K\r\x1b[1A ls -la", "\\u001b[2K\\r\\u001b[1A ls -la"),
    "osc-title": ("\x1b]0;owned\x07", "\\u001b]0;owned\\u0007"),
    "backspace": ("rm\x08\x08ls", "rm\\b\\bls"),
    "c1-csi-nel": ("\x9b2K\x85x", "\\u009b2K\\u0085x"),
    "del": ("a\x7fb", "a\\u007fb"),
    **{
        f"bidi-{c:04X}": (f"a{chr(c)}b", f"a<U+{c:04X}>b")
        for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    },
    **{
        f"zero-width-{c:04X}": (f"z{chr(c)}w", f"z<U+{c:04X}>w")
        for c in (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)
    },
}
RAW = {ch for raw, _ in PAYLOADS.values() for ch in raw if not ch.isprintable()}
LONG = "echo " + "a" * 3000 + " ; rm -rf important"


def no_raw(text: str) -> None:
    leaked = sorted({f"U+{ord(ch):04X}" for ch in text if ch in RAW})
    assert not leaked, f"raw characters reached the terminal: {leaked}"


def parked_command(butler, script) -> str:
    """A run_command park whose argv carries every payload, then a text answer with them."""
    argv = ["rm", "-rf", "important", *(raw for raw, _ in PAYLOADS.values())]
    answer = "Done " + " ".join(raw for raw, _ in PAYLOADS.values())
    model = script({"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": answer})
    r = butler("run", "--model", model, "clean up")
    assert r.returncode == 3, r.stderr
    for shown in (r.stdout, r.stderr):
        no_raw(shown)
    for name, (_, marker) in PAYLOADS.items():
        assert marker in r.stdout, name
        assert marker in r.stderr, name  # the progress line
    return str(json.loads(butler("pending", "--json").stdout)[0]["id"])


def test_run_pending_show_neutralise_every_control(butler, script) -> None:
    park_id = parked_command(butler, script)
    pending = butler("pending")
    show = butler("show", park_id)
    for r in (pending, show):
        assert r.returncode == 0, r.stderr
        no_raw(r.stdout)
        for name, (_, marker) in PAYLOADS.items():
            assert marker in r.stdout, name
    # the title line still leads with what runs, and the rm is on it
    assert re.search(r"^\w{8} .* run_command: rm -rf important ", pending.stdout, re.M)
    # scripts get the exact values
    [row] = json.loads(butler("pending", "--json").stdout)
    shown = json.loads(butler("show", park_id, "--json").stdout)
    argv = shown["calls"][0]["input"]["argv"]
    assert argv[3:] == [raw for raw, _ in PAYLOADS.values()]
    assert PAYLOADS["csi-erase-line"][0] in row["title"]


def test_resume_neutralises_progress_and_answer(butler, script) -> None:
    park_id = parked_command(butler, script)
    r = butler("resume", park_id, "--deny")
    assert r.returncode == 0, r.stderr
    no_raw(r.stdout)
    no_raw(r.stderr)
    for name, (_, marker) in PAYLOADS.items():
        assert marker in r.stderr, name  # the "not run" line for the call
        assert marker in r.stdout, name  # the model's answer


def test_the_models_emoji_codes_are_shown_as_written(butler, script) -> None:
    """rich would turn ``:smile:`` into a picture: the model's words (its answer, a park's
    title and reason, an error) are shown as it wrote them, like every other character."""
    words = "ok :smile: :thumbs_up: :red_heart:"
    model = script({"text": words})
    r = butler("run", "--model", model, "say hi")
    assert r.returncode == 0, r.stderr
    assert words in r.stdout
    model = script({"tool_calls": [call("run_command", "c1", argv=["echo", ":smile:"])]})
    r = butler("run", "--model", model, "greet")
    assert r.returncode == 3, r.stderr
    assert "echo :smile:" in r.stdout
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in r.stdout + r.stderr


def test_titles_name_the_target_first_and_whole(butler, script) -> None:
    """A long first argument must not push the path out of the title (it used to be cut)."""
    content = "x" * 5000
    path = "notes/" + "deep/" * 40 + "target\u202etxt.exe"
    model = script(
        {
            "tool_calls": [
                {"id": "w", "name": "write_file", "arguments": {"content": content, "path": path}}
            ]
        }
    )
    assert butler("run", "--model", model, "write").returncode == 3
    pending = butler("pending")
    no_raw(pending.stdout)
    title = pending.stdout.splitlines()[0]
    visible_path = path.replace("\u202e", "<U+202E>")
    assert visible_path in title
    assert title.index(visible_path) < title.index("5000 characters")  # the target first
    assert len(title) < len(visible_path) + 300  # the content is summed up, not dumped


# -- the chat on a real terminal, 80 columns -------------------------------------------------


def strip_terminal(stream: str) -> str:
    """What a person reads, joined: terminal controls, panel borders and all spacing removed
    (a wrapped line then reads as one)."""
    stream = re.sub(
        r"-- more: lines \d+–\d+ of \d+|· Enter for the next page, q to skip --", "", stream
    )
    text = re.sub(
        r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Z0-9]", "", stream
    )
    return re.sub(r"[\s│╭╮╰╯─]", "", text)


def chat(butler_home, workdir, model: str, rows: int = 24) -> pexpect.spawn:
    child = spawn_butler(["chat", "--model", model], butler_home, workdir, dimensions=(rows, 80))
    child.logfile_read = io.StringIO()  # the whole stream, for the checks at the end
    child.expect("you ›")
    return child


def until_question(child: pexpect.spawn) -> tuple[str, int]:
    """Everything shown up to the approval question, pressing Enter at each "more" (once per
    page: prompt-toolkit draws an answered prompt again)."""
    seen, pages = "", set()
    while child.expect([MORE, APPROVE]) == 0:
        seen += child.before
        if child.match.group(1) not in pages:
            pages.add(child.match.group(1))
            child.sendline("")
    return seen + child.before, len(pages)


def leave(child: pexpect.spawn) -> None:
    child.sendline("l")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()


def test_chat_panel_and_details_neither_spoofed_nor_cropped(butler_home, workdir, script) -> None:
    erase = PAYLOADS["csi-erase-line"][0]
    argv = ["sh", "-c", LONG, erase, "x\u202ey"]
    model = script({"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": "ok"})
    child = chat(butler_home, workdir, model)
    child.sendline("go")
    child.expect("approval needed")
    panel, _ = until_question(child)
    child.sendline("d")
    child.expect("approval needed")
    details, _ = until_question(child)
    leave(child)
    for seen in (panel, details):
        assert "\x1b[1A ls -la" not in seen and "\u202e" not in seen
        joined = strip_terminal(seen)
        assert "rm-rfimportant" in joined  # the end of a 3000-character argument
        assert "\\u001b[2K\\r\\u001b[1Als-la" in joined
        assert "x<U+202E>y" in joined
    assert LONG.replace(" ", "") in strip_terminal(details)  # d: every character


def test_details_page_a_long_argument(butler_home, workdir, script) -> None:
    content = "\n".join(f"line {i}" for i in range(300)) + "\nthe end: rm -rf important"
    model = script(
        {"tool_calls": [call("write_file", "w", path="notes.txt", content=content)]},
        {"text": "ok"},
    )
    child = chat(butler_home, workdir, model)
    child.sendline("go")
    child.expect("approval needed")
    until_question(child)
    child.sendline("d")
    child.expect("approval needed")
    seen, pages = until_question(child)
    leave(child)
    assert pages >= 2  # longer than the screen: a page at a time
    joined = strip_terminal(seen)
    assert "line299\\nthe end:rm-rfimportant".replace(" ", "") in joined
    assert all(f"\\nline{i}\\n" in joined for i in range(1, 299))


def test_chat_answer_grants_and_tool_lines_are_neutralised(
    butler_home, workdir, butler, script
) -> None:
    butler("memory", "add", "likes \x1b]0;owned\x07 jazz")
    path = "report\u202etxt.exe"
    model = script(
        {"tool_calls": [call("write_file", "w", path=path, content="x")]},
        {"text": "Wrote it \x1b[2J\x1b]0;owned\x07 and \u2066hid\u2069 **bold**"},
    )
    child = chat(butler_home, workdir, model, rows=40)
    child.sendline("go")
    child.expect(APPROVE)
    child.sendline("s")
    child.expect("Wrote it")
    child.expect("you ›")
    child.sendline("/grants")
    child.expect("you ›")
    child.sendline("/memory")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    seen = child.logfile_read.getvalue()
    assert "\u202e" not in seen and "\u2066" not in seen and "\x1b]0;owned" not in seen
    joined = strip_terminal(seen)
    assert "report<U+202E>txt.exe" in joined  # tool line, grant line, /grants
    assert "\\u001b]0;owned\\u0007" in joined  # the answer and /memory
    assert "<U+2066>hid<U+2069>" in joined


@pytest.mark.parametrize("name", ["csi-erase-line", "bidi-202E"])
def test_resume_prompt_is_neutralised(butler, script, butler_home, workdir, name) -> None:
    raw, marker = PAYLOADS[name]
    model = script({"tool_calls": [call("run_command", "c", argv=["rm", "-rf", raw])]})
    assert butler("run", "--model", model, "w").returncode == 3
    park_id = json.loads(butler("pending", "--json").stdout)[0]["id"]
    child = spawn_butler(["resume", park_id], butler_home, workdir, dimensions=(24, 80))
    child.expect(r"Approve\? \[y/n\]")
    seen = child.before
    # What is shown is the subject here; Ctrl-C at this prompt is test_cli_interactive's
    # (exit 3, park unchanged). One fresh-clone CI run this session saw the child echo ^C and
    # not end within 20 s here (not reproduced in 40 runs), never there: the closing note says so.
    child.close(force=True)
    assert raw.replace("\r", "") not in seen  # (rich drops a bare CR by itself, not ESC)
    assert marker.replace(" ", "") in strip_terminal(seen)


# -- the neutraliser itself (a pure function: every surface above goes through it) -----------


def test_neutraliser_leaves_nothing_that_acts_and_keeps_plain_text() -> None:
    """Property: whatever the model sends, no control or invisible formatting character
    survives (line breaks and tabs only where lines are kept), and plain text is untouched."""
    import unicodedata

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from butler_cli.ui.text import FILLERS, visible

    acting = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(codec=None, exclude_categories=())), st.booleans())
    def check(text: str, lines: bool) -> None:
        shown = visible(text, lines=lines)
        kept = "\n\t" if lines else ""
        assert all(unicodedata.category(ch) not in acting or ch in kept for ch in shown)
        if text.isprintable() and not set(text) & set(FILLERS):
            assert shown == text

    check()
    assert visible("a\x1b[2K\u202eb\u200b") == "a\\u001b[2K<U+202E>b<U+200B>"


def test_memory_list_and_block_are_neutralised(butler) -> None:
    """What the model remembered (the remember tool) is model-chosen text too."""
    butler("memory", "add", "likes \x1b]0;owned\x07 jazz \u202eevil")
    for r in (butler("memory", "list"), butler("memory", "show-block")):
        assert r.returncode == 0, r.stderr
        no_raw(r.stdout)
        assert "likes \\u001b]0;owned\\u0007 jazz <U+202E>evil" in r.stdout


def test_resume_prompt_pages_a_long_argument(butler, script, butler_home, workdir) -> None:
    """`butler resume ID` on a terminal asks only after every argument was shown, whole, a
    screenful at a time (nothing scrolls past unseen)."""
    content = "\n".join(f"line {i}" for i in range(300)) + "\nthe end: rm -rf important"
    model = script({"tool_calls": [call("write_file", "w", path="n.txt", content=content)]})
    assert butler("run", "--model", model, "w").returncode == 3
    park_id = json.loads(butler("pending", "--json").stdout)[0]["id"]
    child = spawn_butler(["resume", park_id], butler_home, workdir, dimensions=(24, 80))
    seen, pages = "", set()
    while child.expect([MORE, r"Approve\? \[y/n\]"]) == 0:
        seen += child.before
        if child.match.group(1) not in pages:
            pages.add(child.match.group(1))
            child.sendline("")
    seen += child.before
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 3 and not (workdir / "n.txt").exists()
    assert len(pages) >= 2
    joined = strip_terminal(seen)
    assert "line299\\ntheend:rm-rfimportant" in joined
    assert all(f"\\nline{i}\\n" in joined for i in range(1, 299))


def test_error_lines_are_neutralised(butler) -> None:
    """An error quotes what it was given (an id, a file name, a server's words): one line, shown
    neutralised like everything else."""
    for r in (
        butler("show", "ab\x1b]0;owned\x07"),
        butler("run", "--model", "scripted:/nope\x1b[2J\u202e", "x"),
    ):
        assert r.returncode != 0
        assert "\x1b" not in r.stderr and "\u202e" not in r.stderr, r.stderr
        assert "\\u001b" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def _screen_lines(raw: str) -> list[str]:
    """What a terminal shows, line by line: escapes dropped, carriage returns as line starts."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]", "", raw)
    return [line.split("\r")[-1] for line in plain.replace("\r\n", "\n").split("\n")]


def test_the_chat_wraps_between_words_at_80_columns(butler_home, workdir, fake) -> None:
    """The model's words and the approval legend broke mid-word at the terminal's edge ("no
    que/stions"): every line now fits in 80 columns and every word is whole; turns are set
    apart by a blank line."""
    from fake_llm import Reply, openai_stream

    child = spawn_butler(["demo"], butler_home, workdir, dimensions=(40, 80))
    child.expect("you ›")
    child.sendline("hello")
    child.expect(APPROVE)
    seen = child.before
    child.sendline("l")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    # The progress lines (a call's title and its outcome) are left to the terminal: a title is
    # never cut, and may be longer than any screen.
    lines = [line for line in _screen_lines(seen) if not line.startswith(("  ✓", "  ⏸"))]
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    flat = " ".join(line.strip() for line in lines)
    assert "no questions" in flat and "approve for this session" in flat
    words = "Every sentence here is long enough to reach the edge of an eighty column screen"
    answer = " ".join([words] * 4)
    fake.replies = [Reply(events=openai_stream(answer)), Reply(events=openai_stream("second"))]
    args = ["chat", "--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    child = spawn_butler(args, butler_home, workdir, dimensions=(40, 80), OPENAI_API_KEY="sk-t-1")
    child.expect("you ›")
    child.sendline("talk")
    child.expect(r"1 model call\(s\)")  # not the prompt: it is drawn again as the line is sent
    first_turn = child.before + child.after
    child.expect("you ›")
    first_turn += child.before
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    shown = [line.rstrip() for line in _screen_lines(first_turn)]
    body = [line for line in shown if line and not line.startswith(("you ›", "1 model call"))]
    assert all(len(line) <= 80 for line in body)
    assert " ".join(body).count(words) >= 3  # no word cut across lines
    tail = shown[shown.index(next(s for s in shown if s.startswith("1 model call"))) :]
    assert tail[1] == ""  # the turn is set apart from the next prompt
