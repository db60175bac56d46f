"""`@path` completes in the chat (issue 35 item 8), on a real pty through the installed
`butler`: Tab finishes a file's name from the chat's folder and the line attaches it; the
butler's own state is never offered, whichever name or symlink leads there, and neither is a
name holding a terminal escape or a space."""

from __future__ import annotations

import pexpect
from conftest import spawn_butler


def chat(butler_home, workdir, script):  # type: ignore[no-untyped-def]
    model = script(*[{"text": f"answer {n}"} for n in range(8)])
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    child.expect("you ›")
    return child


def complete_and_send(child, typed: str, offered: str) -> None:  # type: ignore[no-untyped-def]
    """Type ``typed``, wait for the menu to show ``offered``, take the first name offered (Tab)
    and send the line."""
    child.send(typed)
    child.expect_exact(offered)
    child.send("\t")
    child.send("\r")


def test_tab_completes_an_at_path_from_the_chat_folder(butler_home, workdir, script) -> None:
    (workdir / "notes.md").write_text("- oat milk\n")
    (workdir / "docs").mkdir()
    (workdir / "docs" / "plan-for-may.txt").write_text("plan\n")
    child = chat(butler_home, workdir, script)
    complete_and_send(child, "read @not", "notes.md")
    child.expect("attached @notes.md")
    child.expect("answer 0")
    child.expect("you ›")
    complete_and_send(child, "and @docs/pla", "plan-for-may.txt")
    child.expect("attached @docs/plan-for-may.txt")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)


def test_the_butlers_state_and_odd_names_are_never_offered(butler_home, workdir, script) -> None:
    """Each name that must not be offered sorts before a plain one: had it been offered,
    Tab would have taken it."""
    child = chat(butler_home, workdir, script)  # the home exists once the chat is up
    (workdir / "aa-state").symlink_to(butler_home)  # another name for the home
    (workdir / "aa-zz.txt").write_text("mine\n")
    (workdir / "ab\x1b[2J.txt").write_text("x")
    (workdir / "ab-ok.txt").write_text("x")
    (workdir / "ac two.txt").write_text("x")
    (workdir / "ac-ok.txt").write_text("x")
    (workdir / ".ad-hidden").write_text("x")
    (workdir / "ad-ok.txt").write_text("x")
    for typed, plain in (("aa", "aa-zz.txt"), ("ab", "ab-ok.txt"), ("ac", "ac-ok.txt")):
        complete_and_send(child, f"@{typed}", plain)
        child.expect(f"attached @{plain}")
        child.expect("you ›")
    above = butler_home.parent  # holds the home, this test's scripts and its folder
    assert butler_home.name < "script1.json"
    complete_and_send(child, f"@{above}/", "script1.json")
    child.expect_exact(f"@{above}/script1.json not attached")  # outside the allowed folders
    child.expect("you ›")
    complete_and_send(child, "@.ad", ".ad-hidden")  # a dot typed: dot names too
    child.expect("attached @.ad-hidden")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
