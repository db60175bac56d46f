"""Kept approvals ("always allow this here") through the installed butler: each covers one
tool in one folder, exactly what the person saw (or the patterns they were shown), never a
refusal, never a call the policy asks about every time, never another folder or another file
behind the same text; every use is audited, and `butler grants` lists and revokes them."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import call, json_lines
from test_inbox_browser import park, served  # noqa: F401 - the inbox's fixtures
from test_sandbox import needs_bwrap, no_bwrap  # noqa: F401 - bubblewrap there or not


def canonical(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def keep_exact(home: Path, folder: Path, tool: str, args: dict[str, Any], files: dict[str, Any]):
    """What the prompt writes when a person keeps an approval (the home is theirs)."""
    home.mkdir(parents=True, exist_ok=True)
    entry = (
        "[[approval]]\n"
        f"tool = {json.dumps(tool)}\n"
        f"folder = {json.dumps(os.path.realpath(folder))}\n"
        f"arguments = {json.dumps(canonical(args))}\n"
        f"files = {json.dumps(canonical(files))}\n"
        'granted_at = "2026-12-04T04:00:00+00:00"\n\n'
    )
    with (home / "approvals.toml").open("a") as f:
        f.write(entry)


def keep_write(home: Path, folder: Path, name: str) -> None:
    """A kept approval of write_file(name, "x") in ``folder``, as the prompt writes it."""
    target = os.path.realpath(folder / name)
    keep_exact(
        home, folder, "write_file", {"path": name, "content": "x"}, {"path": target, "content": "x"}
    )


def keep_patterns(home: Path, folder: Path, tool: str, patterns: dict[str, str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in patterns.items())
    with (home / "approvals.toml").open("a") as f:
        f.write(
            f"[[approval]]\ntool = {json.dumps(tool)}\n"
            f"folder = {json.dumps(os.path.realpath(folder))}\npatterns = {{ {table} }}\n\n"
        )


def write(butler: Any, script: Any, cwd: Path, path: str, *extra: str) -> Any:
    model = script(
        {"tool_calls": [call("write_file", "w1", path=path, content="x")]}, {"text": "ok"}
    )
    return butler("run", "--model", model, "write it", "--json", *extra, cwd=cwd)


def audit(home: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (home / "audit.jsonl").read_text().splitlines()]


@pytest.fixture
def folder_a(tmp_path: Path) -> Path:
    a = tmp_path / "a"
    a.mkdir()
    return a


def test_a_kept_approval_runs_the_same_call_in_its_folder_and_is_audited(
    butler: Any, script: Any, butler_home: Path, folder_a: Path
) -> None:
    keep_write(butler_home, folder_a, "notes.txt")
    r = write(butler, script, folder_a, "notes.txt", "--yes-safe")
    assert r.returncode == 0, r.stderr
    assert (folder_a / "notes.txt").read_text() == "x"
    verdicts = [e for e in audit(butler_home) if e.get("event") == "verdict"]
    assert verdicts and "kept approval 1" in verdicts[-1]["reason"]
    # an unattended run still acts on an allow only with --yes-safe (X5)
    (folder_a / "notes.txt").unlink()
    r = write(butler, script, folder_a, "notes.txt")
    assert r.returncode == 3 and not (folder_a / "notes.txt").exists()


def test_it_never_covers_another_folder_a_parent_or_a_child(
    butler: Any, script: Any, butler_home: Path, folder_a: Path, tmp_path: Path
) -> None:
    keep_write(butler_home, folder_a, "notes.txt")
    b, child = tmp_path / "b", folder_a / "sub"
    b.mkdir()
    child.mkdir()
    for cwd, path in ((b, "notes.txt"), (child, "../notes.txt"), (tmp_path, "a/notes.txt")):
        r = write(butler, script, cwd, path, "--yes-safe")
        assert r.returncode in (0, 3), (cwd, r.stderr)  # parked (asked) or refused (outside)
    assert not (folder_a / "notes.txt").exists() and not (b / "notes.txt").exists()
    # patterns that match anywhere still cover only the folder they were kept in
    keep_patterns(butler_home, folder_a, "write_file", {"path": "glob:/**"})
    for cwd in (b, child, tmp_path):
        r = write(butler, script, cwd, "other.txt", "--yes-safe")
        assert r.returncode == 3 and not (cwd / "other.txt").exists(), (cwd, r.stderr)
    assert not any("kept approval" in e.get("reason", "") for e in audit(butler_home))


def test_the_same_text_naming_other_files_asks_again(
    butler: Any, script: Any, butler_home: Path, folder_a: Path, tmp_path: Path
) -> None:
    """Kept for `docs/notes.txt` while docs/ was a folder; docs/ is now a symlink to a folder
    elsewhere (inside the allowed roots): the same text, other files — asked again."""
    (folder_a / "docs").mkdir()
    target = os.path.realpath(folder_a / "docs" / "notes.txt")
    keep_exact(
        butler_home, folder_a, "write_file",
        {"path": "docs/notes.txt", "content": "x"}, {"path": target, "content": "x"},
    )  # fmt: skip
    (folder_a / "docs").rmdir()
    elsewhere = folder_a / "elsewhere"
    elsewhere.mkdir()
    (folder_a / "docs").symlink_to(elsewhere)
    r = write(butler, script, folder_a, "docs/notes.txt", "--yes-safe")
    assert r.returncode == 3, r.stderr
    assert not (elsewhere / "notes.txt").exists()


def test_kept_patterns_cover_only_what_they_match_on_the_resolved_path(
    butler: Any, script: Any, butler_home: Path, folder_a: Path
) -> None:
    drafts = folder_a / "drafts"
    drafts.mkdir()
    keep_patterns(
        butler_home, folder_a, "write_file", {"path": f"glob:{os.path.realpath(drafts)}/*.txt"}
    )
    assert write(butler, script, folder_a, "drafts/x.txt", "--yes-safe").returncode == 0
    assert (drafts / "x.txt").exists()
    for path in ("drafts/../secret.txt", "drafts/sub/../../secret.txt", "drafts/x.md"):
        assert write(butler, script, folder_a, path, "--yes-safe").returncode == 3, path
    assert not (folder_a / "secret.txt").exists() and not (drafts / "x.md").exists()


def test_never_over_a_refusal_nor_a_call_asked_every_time(
    butler: Any, script: Any, butler_home: Path, folder_a: Path
) -> None:
    """A delete is asked every time (the tool's default says so), and the tiered policy's
    `forbidden` stays a refusal whatever was kept."""
    (folder_a / "old.txt").write_text("keep me")
    keep_patterns(butler_home, folder_a, "delete_file", {"path": "glob:**"})
    model = script({"tool_calls": [call("delete_file", "d1", path="old.txt")]}, {"text": "ok"})
    r = butler("run", "--model", model, "tidy", "--json", "--yes-safe", cwd=folder_a)
    assert r.returncode == 3 and (folder_a / "old.txt").exists()

    rules = folder_a / "rules.toml"
    rules.write_text(
        '[[rule]]\nname = "no"\ntool = "write_file"\ntier = "forbidden"\n'
        'args = { path = "glob:**/locked.txt" }\n'
        '[[rule]]\nname = "writes"\ntool = "write_file"\ntier = "dangerous"\n'
    )
    keep_patterns(butler_home, folder_a, "write_file", {"path": "glob:**"})
    tiered = ("--policy", "tiered", "--policy-file", str(rules), "--yes-safe")
    r = write(butler, script, folder_a, "locked.txt", *tiered)
    assert r.returncode == 0 and not (folder_a / "locked.txt").exists()
    assert "Refused (not run)" in r.stdout
    r = write(butler, script, folder_a, "free.txt", *tiered)  # dangerous: asked every time
    assert r.returncode == 3 and not (folder_a / "free.txt").exists()


def test_grants_lists_and_revokes_and_the_next_call_asks_again(
    butler: Any, script: Any, butler_home: Path, folder_a: Path
) -> None:
    keep_write(butler_home, folder_a, "n.txt")
    listed = butler("grants", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert entry["number"] == 1 and entry["tool"] == "write_file"
    assert entry["folder"] == os.path.realpath(folder_a)
    assert "n.txt" in butler("grants", "list").stdout
    gone = butler("grants", "revoke", "1")
    assert gone.returncode == 0 and "Revoked 1" in gone.stdout
    assert json.loads(butler("grants", "list", "--json").stdout) == []
    assert write(butler, script, folder_a, "n.txt", "--yes-safe").returncode == 3
    missing = butler("grants", "revoke", "7")
    assert missing.returncode == 2 and "no kept approval 7" in missing.stderr


def test_a_malformed_file_keeps_nothing_says_so_and_is_left_as_it_is(
    butler: Any, script: Any, butler_home: Path, folder_a: Path
) -> None:
    butler_home.mkdir(parents=True, exist_ok=True)
    bad = '[[approval]]\ntool = "write_file"\nfolder = "/"\npatterns = { path = "glob:**" \n'
    (butler_home / "approvals.toml").write_text(bad)
    listed = butler("grants", "list")
    assert listed.returncode == 2 and "approvals.toml" in listed.stderr
    assert "Traceback" not in listed.stderr
    r = write(butler, script, folder_a, "n.txt", "--yes-safe")
    assert r.returncode == 3  # fail closed: asked
    assert "no kept approval applies" in r.stderr
    assert (butler_home / "approvals.toml").read_text() == bad
    # an exact approval without the files it resolved to is refused, not trusted by its text
    (butler_home / "approvals.toml").write_text(
        f'[[approval]]\ntool = "write_file"\nfolder = "{os.path.realpath(folder_a)}"\n'
        'arguments = \'{"content":"x","path":"n.txt"}\'\n'
    )
    assert butler("grants", "list").returncode == 2
    assert write(butler, script, folder_a, "n.txt", "--yes-safe").returncode == 3


def test_no_tool_reaches_the_approvals_file(
    butler: Any, script: Any, butler_home: Path, folder_a: Path, allow_all: list[str]
) -> None:
    keep_patterns(butler_home, folder_a, "write_file", {"path": "glob:**"})
    before = (butler_home / "approvals.toml").read_text()
    target = str(butler_home / "approvals.toml")
    model = script(
        {
            "tool_calls": [
                call("read_file", "r1", path=target),
                call("write_file", "w1", path=target, content="[[approval]]\n"),
            ]
        },
        {"text": "ok"},
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all, cwd=folder_a)
    assert r.returncode == 0, r.stderr
    assert (butler_home / "approvals.toml").read_text() == before
    assert "glob:**" not in r.stdout


def test_the_chat_keeps_an_approval_only_where_asked_and_only_what_it_showed(
    butler: Any, script: Any, butler_home: Path, folder_a: Path
) -> None:
    """`a` at the chat's prompt keeps the file write shown for that file (whatever it will
    hold), for this folder; a later run there acts on it (with --yes-safe), another file is
    asked; a delete is never offered `a`."""
    import pexpect
    from conftest import spawn_butler

    (folder_a / "old.txt").write_text("old")
    model = script(
        {"tool_calls": [call("write_file", "w1", path="notes.txt", content="x")]},
        {"text": "written"},
        {"tool_calls": [call("delete_file", "d1", path="old.txt")]},
        {"text": "asked"},
    )
    child = spawn_butler(["chat", "--model", model], butler_home, folder_a)
    try:
        child.expect("you ›")
        child.sendline("write the note")
        child.expect(r"\[a\]\s+always allow this here")  # a no-break space binds key and word
        child.expect(r"Approve\? \[y/n/l/d/s/a\]")
        child.sendline("a")
        child.expect(r"Always allow write_file with path matching glob:.*notes.txt in .*\? \[y/N\]")
        child.sendline("y")
        child.expect("kept approval 1")
        child.expect(r"/revoke\s+kept\s+1")  # the chat names its own command (issue 35 item 5)
        child.expect("written")
        child.expect("you ›")
        child.sendline("now delete")
        child.expect(r"Approve\? \[y/n/l/d/s\]")  # asked every time: no [a]
        child.sendline("a")
        child.expect("'a' is not a choice")
        child.sendline("l")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (folder_a / "notes.txt").read_text() == "x" and (folder_a / "old.txt").exists()
    [kept] = json.loads(butler("grants", "list", "--json").stdout)
    assert kept["tool"] == "write_file" and kept["folder"] == os.path.realpath(folder_a)
    assert kept["patterns"] == {"path": "glob:" + os.path.realpath(folder_a / "notes.txt")}
    assert kept["arguments"] is None
    assert any(e["event"] == "kept" and e["kept"] == 1 for e in audit(butler_home))
    (folder_a / "notes.txt").unlink()
    r = write(butler, script, folder_a, "notes.txt", "--yes-safe")
    assert r.returncode == 0 and (folder_a / "notes.txt").read_text() == "x"
    r = write(butler, script, folder_a, "other.txt", "--yes-safe")  # not what was shown
    assert r.returncode == 3


def test_the_inbox_keeps_exactly_the_call_shown_and_never_a_delete(
    browser: Any,
    served: Any,  # noqa: F811
    butler: Any,
    script: Any,
    butler_home: Path,
    workdir: Path,
) -> None:
    """Real Chromium: "Always allow here" approves and keeps the card's file write for that
    file in its folder; a delete's card offers no such button, and a hand-made `keep` for it
    approves once only."""
    from serve_support import eventually

    write_park = park(butler, script, "kept.txt", "k")
    (workdir / "old.txt").write_text("old")
    model = script({"tool_calls": [call("delete_file", "d1", path="old.txt")]}, {"text": "ok"})
    ran = butler("run", "--model", model, "tidy", "--json")
    delete_park = json.loads(ran.stdout)["park_id"]
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(served.url)
    assert page.locator(f"#park-{delete_park} button.keep").count() == 0
    page.locator(f"#park-{write_park} button.keep").click()
    page.locator(f"#park-{write_park} button.keep-yes").click()  # it asks first
    page.locator("#flash .ok", has_text=f"park {write_park} approved").wait_for()
    eventually(lambda: (workdir / "kept.txt").exists())
    eventually(lambda: bool(json.loads(butler("grants", "list", "--json").stdout)))
    [kept] = json.loads(butler("grants", "list", "--json").stdout)
    assert kept["patterns"] == {"path": "glob:" + os.path.realpath(workdir / "kept.txt")}
    assert kept["folder"] == os.path.realpath(workdir)
    status, answer = served.request(
        f"/park/{delete_park}/decide",
        data={"decision": "keep", "note": ""},
        headers={"X-CSRF-Token": served.csrf()},
    )
    assert status == 200, answer
    eventually(lambda: not (workdir / "old.txt").exists())  # approved, once
    assert len(json.loads(butler("grants", "list", "--json").stdout)) == 1  # not kept
    context.close()


@needs_bwrap
def test_a_command_kept_in_the_sandbox_asks_again_without_one(
    butler: Any,
    script: Any,
    butler_home: Path,
    folder_a: Path,
    no_bwrap: dict[str, str],  # noqa: F811
) -> None:
    """Issue 31, case 5: a `run_command` kept with `a` while sandboxed ran unasked, with the
    person's full rights, once bubblewrap was unavailable. Now the approval records it was kept
    for a sandboxed run, and an unconfined command always asks (never offered `a` either)."""
    import pexpect
    from conftest import spawn_butler

    argv = ["sh", "-c", "echo ran > made.txt"]
    model = script({"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": "done"})
    child = spawn_butler(["chat", "--model", model], butler_home, folder_a)
    try:
        child.expect("you ›")
        child.sendline("make the file")
        child.expect(r"Approve\? \[y/n/l/d/s/a\]")
        child.sendline("a")
        child.expect(r"Always allow run_command with exactly .* in .*\? \[y/N\]")
        child.sendline("y")
        child.expect("kept approval 1")
        child.expect("done")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (folder_a / "made.txt").read_text() == "ran\n"
    [kept] = json.loads(butler("grants", "list", "--json").stdout)
    assert kept["tool"] == "run_command" and kept["sandboxed"] is True
    (folder_a / "made.txt").unlink()

    def again(env: dict[str, str] | None = None) -> Any:
        model = script({"tool_calls": [call("run_command", "c1", argv=argv)]}, {"text": "k"})
        return butler("run", "--model", model, "go", "--json", "--yes-safe", cwd=folder_a, env=env)

    r = again(no_bwrap)  # bubblewrap gone: the kept approval does not answer for it
    assert r.returncode == 3, r.stdout + r.stderr
    assert not (folder_a / "made.txt").exists()
    reason = json_lines(r.stdout)[0]["approval"]["reason"]
    assert reason.startswith("not sandboxed") and "kept approval" not in reason
    r = again()  # the sandbox is back: it answers again
    assert r.returncode == 0, r.stderr
    assert (folder_a / "made.txt").read_text() == "ran\n"


def test_kept_patterns_name_the_folder_they_were_kept_for_never_a_link_put_there(
    butler: Any, script: Any, butler_home: Path, folder_a: Path, tmp_path: Path
) -> None:
    """Issue 31, case 6: a kept `drafts/*.txt` wrote into `~/.config/autostart/` once
    `drafts` was swapped for a link to it. The patterns name the folders as they were when
    the approval was kept; a link made since is not followed."""
    kept_at = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "approvals.toml").write_text(
        f'[[approval]]\ntool = "write_file"\nfolder = {json.dumps(os.path.realpath(folder_a))}\n'
        f'patterns = {{ path = "glob:drafts/*.txt" }}\ngranted_at = "{kept_at}"\n'
    )
    (folder_a / "drafts").mkdir()
    home = {"HOME": str(tmp_path)}  # the person's home holds the task folder and ~/.config

    def draft(name: str) -> Any:
        model = script(
            {"tool_calls": [call("write_file", "w1", path=name, content="x")]}, {"text": "ok"}
        )
        return butler(
            "run", "--model", model, "write it", "--json", "--yes-safe", cwd=folder_a, env=home
        )

    r = draft("drafts/one.txt")
    assert r.returncode == 0 and (folder_a / "drafts" / "one.txt").exists()  # as kept
    autostart = tmp_path / ".config" / "autostart"
    autostart.mkdir(parents=True)
    (folder_a / "drafts" / "one.txt").unlink()
    (folder_a / "drafts").rmdir()
    (folder_a / "drafts").symlink_to(autostart)  # the swap, after the approval was kept
    r = draft("drafts/evil.txt")
    assert r.returncode == 3, r.stdout + r.stderr
    assert not (autostart / "evil.txt").exists()
    assert "became a link" in r.stderr
