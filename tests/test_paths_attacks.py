"""Paths are judged as the files they name, and the gate's own files are off limits.

Every attack goes through the installed `butler` with a scripted model. Rules, grants and the
allowed roots must judge the resolved path (``~`` expanded, ``..`` and ``//`` folded, symlinks
followed), never the text the model wrote; a write, delete or move never goes through a link
in its last component; search patterns stay inside their root; and the butler's home, its
config file and the policy in use cannot be read, changed, moved or deleted by any file tool.
HOME is a temp folder in every test here: nothing touches the real one.
"""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import ALLOW_ALL, butler_command, call, spawn_butler, tool_results

NOTES_RULE = """[[rule]]
name = "notes are mine"
tool = "write_file"
tier = "safe"
args = { path = "glob:~/notes/**" }
"""
IMPORTANT_RULE = """[[rule]]
name = "keep important"
tool = "write_file"
tier = "forbidden"
args = { path = "glob:~/important/*" }
"""


@pytest.fixture
def me(tmp_path: Path) -> Path:
    """A stand-in HOME with notes/, important/keep.txt and a .bashrc."""
    home = tmp_path / "me"
    (home / "notes").mkdir(parents=True)
    (home / "important").mkdir()
    (home / "important" / "keep.txt").write_text("keep\n")
    (home / ".bashrc").write_text("original\n")
    return home


def rules_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def check(butler: Any, me: Path, rules: Path, args: dict[str, Any], cwd: Path | None = None) -> int:
    """`butler policy check` on write_file: 0 allow, 3 approve, 4 refuse (nothing runs)."""
    r = butler(
        "policy",
        "check",
        "write_file",
        "--args",
        json.dumps(args),
        "--policy",
        "tiered",
        "--policy-file",
        str(rules),
        env={"HOME": str(me)},
        cwd=cwd,
    )
    assert r.returncode in (0, 3, 4), r.stderr
    return int(r.returncode)


def write_under(
    butler: Any, script: Any, me: Path, rules: Path, path: str, content: str, *extra: str
) -> Any:
    """A run whose model writes ``content`` to ``path`` under the tiered ``rules``, HOME ``me``."""
    model = script(
        {"tool_calls": [call("write_file", "w", path=path, content=content)]}, {"text": "k"}
    )
    return butler(
        "run", "--model", model, "x", "--policy", "tiered", "--policy-file", str(rules),
        "--json", *extra, env={"HOME": str(me)},
    )  # fmt: skip


# -- item 2: rules judge the file, not the text -------------------------------------------------
def test_the_readme_rule_does_not_let_dotdot_out_of_notes(butler, script, tmp_path, me) -> None:
    rules = rules_file(tmp_path, NOTES_RULE)
    r = write_under(butler, script, me, rules, "~/notes/../.bashrc", "pwned", "--yes-safe")
    assert (me / ".bashrc").read_text() == "original\n"
    assert r.returncode == 3, r.stdout  # no rule matches ~/.bashrc: the default asks


def escaping_notes(me: Path) -> list[str]:
    (me / "notes" / "out").symlink_to(me)
    return [
        "~/notes/../.bashrc",
        "~//notes/../.bashrc",
        "~/notes/./../.bashrc",
        "~/notes/a/../../.bashrc",
        "~/notes/../.bashrc/",
        "~/notes/out/.bashrc",  # a link inside notes/ that leads out
        "~/NOTES/../.bashrc",
        " ~/notes/../.bashrc",
        f"~{getpass.getuser()}/notes/../.bashrc",
        "~/notes/" + "x/../" * 400 + "../.bashrc",
        f"{me}/notes/../.bashrc",
    ]


def test_paths_that_leave_a_safe_folder_are_never_safe(butler, tmp_path, me) -> None:
    rules = rules_file(tmp_path, NOTES_RULE)
    for path in escaping_notes(me):
        assert check(butler, me, rules, {"path": path, "content": ""}) != 0, path


def test_paths_inside_a_safe_folder_are_safe_however_written(butler, tmp_path, me) -> None:
    rules = rules_file(tmp_path, NOTES_RULE)
    (me / "real-notes").mkdir()
    (me / "notes" / "linked").symlink_to(me / "notes")
    for path in [
        "~/notes/a.txt",
        "~//notes/a.txt",
        "~/notes/./a.txt",
        "~/notes/sub/../a.txt",
        "~/notes/deep/er/a.txt",
        "~/notes/linked/a.txt",
        "~/notes/é ü.txt",
        f"{me}/notes/a.txt",
    ]:
        assert check(butler, me, rules, {"path": path, "content": ""}) == 0, path
    assert check(butler, me, rules, {"path": "notes/a.txt", "content": ""}, cwd=me) == 0


def test_a_forbidden_rule_matches_however_the_path_is_written(butler, script, tmp_path, me) -> None:
    rules = rules_file(tmp_path, IMPORTANT_RULE)
    r = write_under(butler, script, me, rules, "~//important/keep.txt", "gone")
    assert r.returncode == 0, r.stdout  # refused outright, not parked for a person to approve
    [res] = tool_results(r.stdout)
    assert res["is_error"] and res["content"].startswith("Refused (not run): forbidden")
    assert (me / "important" / "keep.txt").read_text() == "keep\n"
    (me / "Important").symlink_to(me / "important")
    for path in [
        "~//important/keep.txt",
        "~/./important/keep.txt",
        "~/x/../important/keep.txt",
        "~/important//keep.txt",
        "~/important/keep.txt/",
        "~/Important/keep.txt",  # another case, through a link: the same file
        "~/important/" + "./" * 2000 + "keep.txt",
        f"{me}/important/keep.txt",
    ]:
        assert check(butler, me, rules, {"path": path, "content": ""}) == 4, path
    assert check(butler, me, rules, {"path": "./important/../important/k", "content": ""}, me) == 4
    # `*` stays in one folder: a file deeper down is not what the rule names
    assert check(butler, me, rules, {"path": "~/important/sub/deep.txt", "content": ""}) == 3


# -- item 2: a widened grant covers the files its pattern names, no more -----------------------
def test_a_widened_grant_does_not_cover_other_folders(butler_home, script, tmp_path, workdir):
    rules = rules_file(
        tmp_path,
        '[[rule]]\nname = "drafts"\ntool = "write_file"\ntier = "dangerous"\n'
        'args = { path = "glob:**/*.txt" }\nwiden = { path = "glob:drafts/*.txt" }\n',
    )
    (workdir / "drafts").mkdir()
    w = lambda cid, path: {"tool_calls": [call("write_file", cid, path=path, content=cid)]}  # noqa: E731
    model = script(
        w("a", "drafts/one.txt"),
        {"text": "answer one"},
        w("b", "drafts/../README.txt"),
        {"text": "answer two"},
        w("c", "drafts/a/b/c.txt"),
        {"text": "answer three"},
        w("d", "drafts/./two.txt"),
        {"text": "answer four"},
    )
    args = ["chat", "--model", model, "--policy", "tiered", "--policy-file", str(rules)]
    child = spawn_butler(args, butler_home, workdir)
    child.expect("you ›")
    child.sendline("first")
    child.expect(r"Approve\? \[y/n/l/d/s/w(/a)?\]")
    child.sendline("w")
    child.expect(r"for the rest of this session\? \[y/N\]")
    child.sendline("y")
    child.expect("answer one")
    child.expect("you ›")
    for turn, said in (("second", "answer two"), ("third", "answer three")):
        child.sendline(turn)  # outside drafts/, or deeper: asks again
        child.expect(r"Approve\? \[y/n/l/d/s(/w)?(/a)?\]")
        child.sendline("n")
        child.expect("Note for the model")
        child.sendline("")
        child.expect(said)
        child.expect("you ›")
    # drafts/./two.txt is drafts/two.txt: covered. Each wait names the answer, not a word the
    # typed line holds too: "four" matched the echo of "fourth" at once, so under load the test
    # went on (and sent Ctrl-D, which a turn in flight never reads) before the turn had run.
    child.sendline("fourth")
    child.expect("answer four")
    assert "Approve?" not in child.before
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    assert not (workdir / "README.txt").exists()
    assert not (workdir / "drafts" / "a").exists()
    assert sorted(p.name for p in (workdir / "drafts").iterdir()) == ["one.txt", "two.txt"]


def test_an_exact_grant_covers_the_same_files_not_just_the_same_text(
    butler_home, script, tmp_path, workdir
) -> None:
    rules = rules_file(
        tmp_path, '[[rule]]\nname = "look"\ntool = "write_file"\ntier = "dangerous"\n'
    )
    (workdir / "d").mkdir()
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    w = lambda cid: {"tool_calls": [call("write_file", cid, path="d/x.txt", content="same")]}  # noqa: E731
    model = script(w("a"), {"text": "one"}, w("b"), {"text": "two"})
    args = ["chat", "--model", model, "--policy", "tiered", "--policy-file", str(rules)]
    child = spawn_butler(args, butler_home, workdir)
    child.expect("you ›")
    child.sendline("first")
    child.expect(r"Approve\? \[y/n/l/d/s(/a)?\]")
    child.sendline("s")
    child.expect("one")
    child.expect("you ›")
    (workdir / "d").rename(workdir / "d-before")
    (workdir / "d").symlink_to(elsewhere)  # the same text now names another file
    child.sendline("second")
    child.expect(r"Approve\? \[y/n/l/d/s(/a)?\]")  # asked again
    child.sendline("n")
    child.expect("Note for the model")
    child.sendline("")
    child.expect("two")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    assert (workdir / "d-before" / "x.txt").read_text() == "same"
    assert not (elsewhere / "x.txt").exists()


# -- item 3: a change never goes through a link ------------------------------------------------
def allow_all_here(workdir: Path) -> list[str]:
    (workdir / "pol.py").write_text(ALLOW_ALL)
    return ["--policy", "./pol.py:classify", "--yes-safe"]


def test_a_write_never_follows_a_link_to_another_file(butler, script, workdir, me) -> None:
    (workdir / "out.txt").symlink_to(me / ".bashrc")
    (workdir / "dangling").symlink_to(me / ".profile")
    (workdir / "sub").mkdir()
    paths = ["out.txt", "./out.txt", "sub/../out.txt", "out.txt/", "dangling", f"{workdir}/out.txt"]
    model = script(
        {"tool_calls": [call("write_file", path=p, content="pwned") for p in paths]},
        {"text": "k"},
    )
    r = butler(
        "run", "--model", model, "x", "--json", *allow_all_here(workdir), env={"HOME": str(me)}
    )
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert len(results) == len(paths)
    for path, res in zip(paths, results, strict=True):
        assert res["is_error"] and "symbolic link" in res["content"], (path, res)
    assert (me / ".bashrc").read_text() == "original\n"
    assert not (me / ".profile").exists()
    assert (workdir / "out.txt").is_symlink()


def test_delete_and_move_never_act_on_a_links_target(butler, script, workdir, me) -> None:
    (workdir / "target.txt").write_text("stay")
    (workdir / "stale-link").symlink_to(workdir / "target.txt")
    model = script(
        {
            "tool_calls": [
                call("delete_file", path="stale-link"),
                call("delete_file", path="./stale-link/"),
                call("move_path", src="stale-link", dst="moved.txt"),
                call("move_path", src="target.txt", dst="stale-link"),
            ]
        },
        {"text": "k"},
    )
    r = butler(
        "run", "--model", model, "x", "--json", *allow_all_here(workdir), env={"HOME": str(me)}
    )
    assert r.returncode == 0, r.stderr
    for res in tool_results(r.stdout):
        assert res["is_error"] and "symbolic link" in res["content"], res
    assert (workdir / "target.txt").read_text() == "stay"
    assert (workdir / "stale-link").is_symlink()
    assert not (workdir / "moved.txt").exists()


def test_search_patterns_stay_inside_their_root(butler, script, tmp_path, workdir, me) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (workdir / "mine.txt").write_text("m")
    (workdir / "sub").mkdir()
    (workdir / "out-link").symlink_to(outside)
    assert butler("config", "set", "allowed_roots", str(workdir)).returncode == 0
    patterns = ["../outside/**", "../outside/*", "sub/../../outside/*", "/etc/host*", "~/*"]
    model = script(
        {
            "tool_calls": [
                *(call("search_files", pattern=p) for p in patterns),
                call("search_files", pattern="out-link/*"),
                call("search_files", pattern="**/*.txt"),
            ]
        },
        {"text": "k"},
    )
    r = butler("run", "--model", model, "x", "--json", env={"HOME": str(me)})
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    for res in results[: len(patterns)]:
        assert res["is_error"] and "stays inside its root" in res["content"], res
    assert results[-2]["content"] == "No matching files."
    assert results[-1]["content"] == "mine.txt"


# -- issue 12: the gate's own files, wherever they live ----------------------------------------
def run_without_butler_home(
    args: list[str], me: Path, cwd: Path, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`butler` with BUTLER_HOME unset: data in ~/.local/share/butler, config in ~/.config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUTLER_", "XDG_"))}
    env.update({"HOME": str(me), "NO_COLOR": "1", **extra})
    return subprocess.run(
        [*butler_command(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def gate_file_attacks(target: str, elsewhere: str) -> list[dict[str, Any]]:
    parent, name = os.path.split(target.rstrip("/"))
    return [
        call("write_file", path=target, content="pwned"),
        call("delete_file", path=target),
        call("move_path", src=target, dst=elsewhere),
        call("move_path", src="~/decoy", dst=target),
        call("read_file", path=target),
        call("list_dir", path=target),
        call("search_files", root=parent, pattern=name),
        call("search_files", root=parent, pattern="**"),
    ]


#: Names of the gate's files: no listing or search result may show one.
GATE_NAMES = {"config.toml", "park.key", "parks"}


@pytest.mark.parametrize(
    "target",
    [
        "~/.config/butler/config.toml",
        "~/.config/butler",
        "~/.local/share/butler/park.key",
        "~/.local",  # an ancestor of the data dir
        "~/.config",  # an ancestor of the config file
        "{work}/pol.py",  # the --policy file in use
        "{work}/__pycache__/mypol.cpython-311.pyc",  # its bytecode, which Python would load
        "{work}/mypol.py",  # the module policy in use
        "{work}/./mypol.py",
        "~/.config/" + "x/../" * 300 + "butler//./config.toml",  # long, `..`, `//`, `.`
    ],
)
def test_no_file_tool_reaches_the_gates_own_files(target, script, tmp_path, workdir, me) -> None:
    (me / "decoy").write_text("decoy")
    (workdir / "pol.py").write_text(ALLOW_ALL)
    (workdir / "mypol.py").write_text(ALLOW_ALL)
    seed = script({"tool_calls": [call("write_file", path="x", content="y")]})
    assert run_without_butler_home(["run", "--model", seed, "seed"], me, workdir).returncode == 3
    assert (
        run_without_butler_home(["config", "set", "max_rounds", "9"], me, workdir).returncode == 0
    )
    config = me / ".config" / "butler" / "config.toml"
    data = me / ".local" / "share" / "butler"
    guarded = [config, data / "park.key", workdir / "pol.py", workdir / "mypol.py", me / "decoy"]
    guarded += sorted((data / "parks").glob("*.json"))
    before = {p: p.read_bytes() for p in guarded}
    target = target.format(work=workdir)
    module = "mypol" if "mypol" in target else "pol"
    policy = ["--policy", "mypol:classify" if module == "mypol" else "./pol.py:classify"]
    names = GATE_NAMES | {f"{module}.py", f"{module}.cpython-311.pyc"}
    model = script(
        {"tool_calls": gate_file_attacks(target, "~/moved")},
        {"tool_calls": [call("read_file", path="~/moved/share/butler/park.key")]},
        {"text": "k"},
    )
    r = run_without_butler_home(
        ["run", "--model", model, "attack", "--json", "--yes-safe", *policy],
        me,
        workdir,
        PYTHONPATH=os.pathsep.join(filter(None, [str(workdir), os.environ.get("PYTHONPATH")])),
    )
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert len(results) == 9
    for res in results[:5]:  # every change is refused, and so is reading
        assert res["is_error"], res
    for res in results[5:8]:  # a listing or a search shows none of them
        shown = {os.path.basename(line.rstrip("/")) for line in res["content"].splitlines()}
        assert res["is_error"] or not shown & names, res
    assert results[8]["is_error"]
    assert not (me / "moved").exists()
    assert {p: p.read_bytes() for p in guarded} == before


def test_a_plugin_tool_that_takes_paths_is_judged_the_same_way(tmp_path, workdir, me) -> None:
    """In process: a plug-in names its path arguments and takes the context's resolver; its
    policy sees, and its executor gets, the resolved path; its links and the gate's files are
    refused like the built-ins'."""
    from butler_cli.api import ToolContext
    from butler_cli.core.gate import Gate
    from butler_cli.core.toolsets import ToolSpec

    seen: list[tuple[str, str]] = []
    context = ToolContext(workdir, tmp_path / "bhome", None, [tmp_path / "pol.py"], [workdir])
    gate = Gate(
        [ToolSpec("archive", "Archive a file.", {"type": "object"}, None, ("file",))],
        lambda name, args: seen.append(("ran", args["file"])) or "ok",
        policy=lambda name, args: seen.append(("policy", args["file"])),
        paths=context.path_rules(),
    )
    (workdir / "a").mkdir()
    (workdir / "link").symlink_to(tmp_path / "pol.py")
    assert gate.classify("archive", {"file": "a/../b.txt"}).decision == "approve"
    assert gate.run(call_block("archive", file="a/../b.txt")).content == "ok"
    assert seen == [("policy", str(workdir / "b.txt")), ("ran", str(workdir / "b.txt"))]
    for bad in ("link", "../pol.py", "../bhome/x", "../elsewhere"):
        assert gate.classify("archive", {"file": bad}).decision == "refuse", bad
    assert len(seen) == 2


def call_block(name: str, **args: Any) -> Any:
    from butler_cli.core.messages import ToolUseBlock

    return ToolUseBlock(id="c1", name=name, input=args)


def test_read_file_of_a_fifo_or_a_folder_is_an_error_not_a_hang(butler, script, workdir) -> None:
    os.mkfifo(workdir / "pipe")
    (workdir / "folder").mkdir()
    model = script(
        {"tool_calls": [call("read_file", path="pipe"), call("read_file", path="folder")]},
        {"text": "k"},
    )
    r = butler("run", "--model", model, "x", "--json", timeout=30)
    assert r.returncode == 0, r.stderr
    fifo, folder = tool_results(r.stdout)
    assert fifo["is_error"] and "not a regular file" in fifo["content"]
    assert folder["is_error"] and "is a directory" in folder["content"]


def test_a_rule_names_the_folder_it_was_written_for_never_a_link_put_there(
    butler, script, tmp_path, me
) -> None:
    """Issue 31, case 6: after `rm -rf ~/notes && ln -s ~/.ssh ~/notes` (any allowed command
    could run it), the README's `glob:~/notes/**` safe rule let a write to
    `~/.ssh/authorized_keys` run under --yes-safe. A rule names its folders as they were when
    its file was written: a link made since is not followed, and `policy check` says why. A
    link the person made before writing the rule is still theirs to use."""
    rules = rules_file(tmp_path, NOTES_RULE)
    written = time.time() - 60  # the person wrote the rule a minute ago
    os.utime(rules, (written, written))
    (me / ".ssh").mkdir()
    (me / "notes").rmdir()
    (me / "notes").symlink_to(me / ".ssh")  # the attack, after the rule
    r = write_under(butler, script, me, rules, "~/notes/authorized_keys", "evil", "--yes-safe")
    assert r.returncode == 3, r.stdout + r.stderr  # no rule matches: the default asks
    assert not (me / ".ssh" / "authorized_keys").exists()
    said = butler(
        "policy", "check", "write_file", "--args", '{"path": "~/notes/authorized_keys"}',
        "--policy", "tiered", "--policy-file", str(rules), env={"HOME": str(me)},
    )  # fmt: skip
    assert said.returncode == 3, said.stdout
    assert f"{me / 'notes'} became a link (to {me / '.ssh'})" in said.stderr, said.stderr
    # a link the person made before the rule was written is followed as before
    (me / "Dropbox" / "journal").mkdir(parents=True)
    (me / "journal").symlink_to(me / "Dropbox" / "journal")
    theirs = rules_file(tmp_path, NOTES_RULE.replace("notes", "journal"))
    assert check(butler, me, theirs, {"path": "~/journal/day.txt"}) == 0
