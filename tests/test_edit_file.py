"""Issue 35 item 10: ``edit_file``, a search-and-replace change governed exactly like
``write_file`` — judged on the resolved path (links, ``..``, hard links, the gate's files),
parked with the exact edit and the digest of the file it was judged on, shown as a diff, run
once on resume and refused there if the file changed since. An edit that does not apply is an
error result the model sees, never a park. Everything through the installed `butler`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pexpect
from conftest import ALLOW_ALL, call, json_lines, spawn_butler, tool_results

ORIGINAL = "alpha\nold line\nomega\n"


def edit(cid: str = "e1", **args: Any) -> dict[str, Any]:
    return call("edit_file", cid, **{"path": "plan.txt", **args})


def park(butler: Any, script: Any, *calls: dict[str, Any]) -> str:
    model = script({"tool_calls": list(calls)}, {"text": "Done."})
    ran = butler("run", "--model", model, "edit the plan", "--json")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    return str(json_lines(ran.stdout)[0]["park_id"])


def test_an_edit_parks_shows_its_diff_and_runs_exactly_once(butler, script, workdir) -> None:
    (workdir / "plan.txt").write_text(ORIGINAL)
    pid = park(butler, script, edit(old_string="old line", new_string="new line"))
    assert (workdir / "plan.txt").read_text() == ORIGINAL  # nothing before the decision
    shown = butler("show", pid).stdout
    assert "edit_file: " + str(workdir / "plan.txt") in shown, shown
    assert "-old line" in shown and "+new line" in shown, shown
    done = butler("resume", pid, "--approve")
    assert done.returncode == 0, done.stderr
    assert (workdir / "plan.txt").read_text() == "alpha\nnew line\nomega\n"
    again = butler("resume", pid, "--approve")
    assert again.returncode == 5
    assert (workdir / "plan.txt").read_text() == "alpha\nnew line\nomega\n"


def test_a_resume_refuses_an_edit_whose_file_changed_since(butler, script, workdir) -> None:
    """The person was shown the edit applied to the file as it was; another file now (even one
    where the edit still applies) is never changed by that approval."""
    (workdir / "plan.txt").write_text(ORIGINAL)
    pid = park(butler, script, edit(old_string="old line", new_string="new line"))
    changed = "alpha\nold line\nsomeone else's line\nomega\n"
    (workdir / "plan.txt").write_text(changed)
    assert "changed since this edit was asked for" in butler("show", pid).stdout
    done = butler("resume", pid, "--approve", "--json")
    assert done.returncode == 0, done.stderr
    results = tool_results(done.stdout)
    assert results[0]["is_error"] and "changed since" in results[0]["content"], results
    assert (workdir / "plan.txt").read_text() == changed


def test_the_models_own_digest_is_never_the_one_kept(butler, script, workdir) -> None:
    """The digest is the gate's, of the file judged: a model that supplies one (of the file it
    plans to swap in) does not get its edit applied to another file."""
    (workdir / "plan.txt").write_text(ORIGINAL)
    pid = park(butler, script, edit(old_string="old line", new_string="x", file_sha256="0" * 64))
    kept = json.loads(butler("show", pid, "--json").stdout)["calls"][0]["input"]
    assert kept["file_sha256"] != "0" * 64 and len(kept["file_sha256"]) == 64


def test_an_edit_that_does_not_apply_is_the_models_error_not_a_park(
    butler, script, workdir
) -> None:
    (workdir / "plan.txt").write_text("a\nsame\nb\nsame\n")
    model = script(
        {
            "tool_calls": [
                edit("e1", old_string="missing", new_string="x"),
                edit("e2", old_string="same", new_string="x"),
                edit("e3", old_string="", new_string="x"),
                edit("e4", path="nofile.txt", old_string="a", new_string="x"),
            ]
        },
        {"text": "I will read it first."},
    )
    r = butler("run", "--model", model, "edit", "--json")
    assert r.returncode == 0, r.stdout + r.stderr  # never parked: nobody is asked
    res = tool_results(r.stdout)
    assert all(x["is_error"] for x in res), res
    assert "not found" in res[0]["content"]
    assert "occurs 2 times" in res[1]["content"] and "replace_all" in res[1]["content"]
    assert "empty" in res[2]["content"]
    assert "does not exist" in res[3]["content"]
    assert (workdir / "plan.txt").read_text() == "a\nsame\nb\nsame\n"


def test_replace_all_changes_every_occurrence(butler, script, workdir) -> None:
    (workdir / "plan.txt").write_text("a\nsame\nb\nsame\n")
    pid = park(butler, script, edit(old_string="same", new_string="new", replace_all=True))
    assert butler("resume", pid, "--approve").returncode == 0
    assert (workdir / "plan.txt").read_text() == "a\nnew\nb\nnew\n"


def test_models_are_offered_edit_file_with_its_rules(butler, fake) -> None:
    """A real model (a loopback server speaking Chat Completions) is offered the tool, with a
    description that says when to prefer it and how old_string must match."""
    from fake_llm import Reply, openai_stream

    fake.replies = [Reply(events=openai_stream("hi"))]
    r = butler(
        "run", "--model", "openai:gpt-test", "--base-url", fake.url + "/v1", "hi",
        env={"OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    tools = {t["function"]["name"]: t["function"] for t in fake.requests[0]["body"]["tools"]}
    offered = tools["edit_file"]
    assert "write_file" in offered["description"] and "once" in offered["description"]
    assert set(offered["parameters"]["required"]) == {"path", "old_string", "new_string"}
    assert "file_sha256" not in offered["parameters"]["properties"]


# -- the paths: every attack write_file meets ----------------------------------------------
def allow_here(workdir: Path) -> list[str]:
    (workdir / "pol.py").write_text(ALLOW_ALL)
    return ["--policy", "./pol.py:classify", "--yes-safe"]


def test_an_edit_never_goes_through_a_link(butler, script, workdir, tmp_path) -> None:
    me = tmp_path / "me"
    me.mkdir()
    (me / ".bashrc").write_text("original\n")
    (workdir / "out.txt").symlink_to(me / ".bashrc")
    (workdir / "sub").mkdir()
    paths = ["out.txt", "./out.txt", "sub/../out.txt", f"{workdir}/out.txt"]
    model = script(
        {"tool_calls": [edit(f"e{i}", path=p, old_string="original", new_string="pwned")
                        for i, p in enumerate(paths)]},
        {"text": "k"},
    )  # fmt: skip
    r = butler("run", "--model", model, "x", "--json", *allow_here(workdir), env={"HOME": str(me)})
    assert r.returncode == 0, r.stderr
    for res in tool_results(r.stdout):
        assert res["is_error"] and "symbolic link" in res["content"], res
    assert (me / ".bashrc").read_text() == "original\n"


def test_an_edit_never_reaches_the_gates_files_by_any_name(
    butler, script, butler_home, workdir, tmp_path
) -> None:
    """The home's files by `..`, by a link to the home's folder, by a hard link; the config;
    the policy file in use; outside the allowed roots."""
    seed = script({"tool_calls": [call("write_file", "w", path="x", content="y")]})
    assert butler("run", "--model", seed, "seed").returncode == 3
    (butler_home / "config.toml").write_text("max_rounds = 8\n")
    key = butler_home / "park.key"
    parks = sorted((butler_home / "parks").glob("*.json"))
    os.link(key, workdir / "key.link")
    (workdir / "homelink").symlink_to(butler_home)
    outside = tmp_path / "outside.txt"
    outside.write_text("max_rounds\n")
    rel_home = os.path.relpath(butler_home, workdir)
    targets = [
        f"{rel_home}/park.key",
        f"sub/../{rel_home}/config.toml",
        "homelink/config.toml",
        "key.link",
        str(parks[0]),
        "pol.py",
        str(outside),
    ]
    guarded = [key, butler_home / "config.toml", *parks, outside]
    before = {p: p.read_bytes() for p in guarded}
    (workdir / "sub").mkdir()
    flags = allow_here(workdir)
    pol_before = (workdir / "pol.py").read_bytes()
    model = script(
        {"tool_calls": [edit(f"e{i}", path=t, old_string="a", new_string="pwned", replace_all=True)
                        for i, t in enumerate(targets)]},
        {"text": "k"},
    )  # fmt: skip
    r = butler(
        "run", "--model", model, "x", "--json", *flags,
        env={"HOME": str(workdir)},  # the allowed roots: the task's folder only
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert len(results) == len(targets)
    for target, res in zip(targets, results, strict=True):
        assert res["is_error"] and "Unknown tool" not in res["content"], (target, res)
        assert "pwned" not in res["content"]
    assert {p: p.read_bytes() for p in guarded} == before
    assert (workdir / "pol.py").read_bytes() == pol_before
    assert "ab" * 8 not in r.stdout


def test_an_edit_parked_then_swapped_for_a_link_changes_nothing(
    butler, script, workdir, tmp_path
) -> None:
    """Between the park and the approval the file becomes a link to another: the resume
    refuses (judged again on the link) and the other file is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text(ORIGINAL)
    (workdir / "plan.txt").write_text(ORIGINAL)
    pid = park(butler, script, edit(old_string="old line", new_string="pwned"))
    (workdir / "plan.txt").unlink()
    (workdir / "plan.txt").symlink_to(victim)
    done = butler("resume", pid, "--approve", "--json")
    res = tool_results(done.stdout)
    assert res[0]["is_error"] and "symbolic link" in res[0]["content"], res
    assert victim.read_text() == ORIGINAL


def test_the_chat_shows_an_edit_as_a_diff_in_the_approval_box(butler_home, workdir, script) -> None:
    (workdir / "plan.txt").write_text(ORIGINAL)
    model = script(
        {"tool_calls": [edit(old_string="old line", new_string="brand new line")]},
        {"text": "Edited."},
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir, dimensions=(50, 120))
    child.expect("you ›")
    child.sendline("edit it")
    child.expect("approval needed")
    child.expect(r"Approve\? \[")
    box = child.before
    assert "-old line" in box and "+brand new line" in box, box
    child.sendline("y")
    child.expect("Edited.")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    assert (workdir / "plan.txt").read_text() == "alpha\nbrand new line\nomega\n"


def test_always_allow_here_keeps_the_edited_file_as_for_a_write(
    butler, butler_home, workdir, script
) -> None:
    """`a` on an edit keeps the file it changes (its resolved path), as for write_file — not
    the exact edit with its digest, which no later edit could match: the next edit of that
    file runs (with --yes-safe), an edit of another file asks."""
    (workdir / "plan.txt").write_text(ORIGINAL)
    (workdir / "other.txt").write_text(ORIGINAL)
    model = script(
        {"tool_calls": [edit(old_string="old line", new_string="new line")]}, {"text": "Edited."}
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    try:
        child.expect("you ›")
        child.sendline("edit it")
        child.expect(r"Approve\? \[y/n/l/d/s/a\]")
        child.sendline("a")
        child.expect(r"Always allow edit_file with path matching glob:\S*plan\.txt in")
        child.sendline("y")
        child.expect("Edited.")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (workdir / "plan.txt").read_text() == "alpha\nnew line\nomega\n"
    again = script({"tool_calls": [edit(old_string="new line", new_string="third")]}, {"text": "k"})
    r = butler("run", "--model", again, "edit", "--yes-safe")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (workdir / "plan.txt").read_text() == "alpha\nthird\nomega\n"
    other = script(
        {"tool_calls": [edit(path="other.txt", old_string="old line", new_string="x")]},
        {"text": "k"},
    )
    assert butler("run", "--model", other, "edit", "--yes-safe").returncode == 3
    assert (workdir / "other.txt").read_text() == ORIGINAL
