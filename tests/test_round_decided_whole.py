"""Issue 22, item 1: a round is decided whole. Two governed calls in one round (two writes)
are both put to the person — by `butler run`'s report, `--json`, stream-json and `butler
resume` (flags and the terminal's question) — and each approved one runs exactly once; a
denied one is answered with the person's note; a refusal by the policy is never laundered."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pexpect
from conftest import butler_exe, call, prompt_speed


def two_writes(script: Any, then: str = "Both done.") -> str:
    return str(
        script(
            {
                "tool_calls": [
                    call("write_file", "w1", path="a.txt", content="alpha\n"),
                    call("write_file", "w2", path="b.txt", content="beta\n"),
                ]
            },
            {"text": then},
        )
    )


def parked_with_b_refused(butler: Any, script: Any, tmp_path: Path) -> str:
    """The two writes under a policy that refuses b.txt and asks about a.txt: the park's id."""
    policy = tmp_path / "pol.py"
    policy.write_text(
        "from butler_cli import approve, refuse\n\ndef classify(name, args):\n"
        "    return refuse('not b') if str(args.get('path')).endswith('b.txt') else approve('ask')\n"
    )
    ran = butler("run", "--model", two_writes(script), "--policy", f"{policy}:classify", "go")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(butler("pending", "--json").stdout)[0]["id"])


def park_two(butler: Any, script: Any) -> tuple[str, dict[str, Any]]:
    ran = butler("run", "--model", two_writes(script), "write both", "--json")
    assert ran.returncode == 3, ran.stderr
    report = json.loads(ran.stdout.splitlines()[0])
    return str(report["park_id"]), report


def results_of(butler: Any, park_id: str) -> list[dict[str, Any]]:
    """The tool results the resumed round answered, from the saved park."""
    shown = json.loads(butler("show", park_id, "--json").stdout)
    return list(shown["results"].values())


def test_run_reports_every_call_that_waits(butler: Any, script: Any) -> None:
    park_id, report = park_two(butler, script)
    assert [a["title"].split(":")[0] for a in report["approvals"]] == ["write_file"] * 2
    assert "a.txt" in report["approvals"][0]["title"]
    assert "b.txt" in report["approvals"][1]["title"]
    text = butler("run", "--model", two_writes(script), "write both")
    assert text.returncode == 3
    assert "(1 of 2)" in text.stdout and "(2 of 2)" in text.stdout, text.stdout
    assert "a.txt" in text.stdout and "b.txt" in text.stdout
    events = butler("run", "--model", two_writes(script), "write both", "--output", "stream-json")
    parked = next(json.loads(x) for x in events.stdout.splitlines() if '"parked"' in x)
    assert len(parked["actions"]) == 2 and "b.txt" in parked["actions"][1]["title"]


def test_resume_approve_runs_both_calls_once(
    butler: Any, script: Any, workdir: Path, butler_home: Path
) -> None:
    park_id, _ = park_two(butler, script)
    assert not (workdir / "a.txt").exists() and not (workdir / "b.txt").exists()
    done = butler("resume", park_id, "--approve")
    assert done.returncode == 0, done.stderr
    assert "Both done." in done.stdout
    assert (workdir / "a.txt").read_text() == "alpha\n"
    assert (workdir / "b.txt").read_text() == "beta\n"
    assert not any("own approval" in r["content"] for r in results_of(butler, park_id))
    again = butler("resume", park_id, "--approve")
    assert again.returncode != 0  # never twice
    audit = [json.loads(x) for x in (butler_home / "audit.jsonl").read_text().splitlines()]
    decisions = [x for x in audit if x["event"] == "decision" and x["park"] == park_id]
    assert [x["decision"] for x in decisions] == ["approve", "approve"]
    ran = [x for x in audit if x["event"] == "resume" and x["park"] == park_id]
    assert [x["outcome"] for x in ran] == ["ran", "ran"]


def test_resume_deny_runs_neither(butler: Any, script: Any, workdir: Path) -> None:
    park_id, _ = park_two(butler, script)
    done = butler("resume", park_id, "--deny", "--note", "not today")
    assert done.returncode == 0, done.stderr
    assert not (workdir / "a.txt").exists() and not (workdir / "b.txt").exists()
    answers = [r["content"] for r in results_of(butler, park_id)]
    assert len(answers) == 2 and all("not today" in a for a in answers), answers


def test_a_refusal_by_the_policy_is_never_laundered(
    butler: Any, script: Any, workdir: Path, tmp_path: Path
) -> None:
    park_id = parked_with_b_refused(butler, script, tmp_path)
    shown = json.loads(butler("show", park_id, "--json").stdout)
    assert len(shown.get("approvals", [shown["approval"]])) == 1  # b.txt is not asked
    assert butler("resume", park_id, "--approve").returncode == 0
    assert (workdir / "a.txt").exists() and not (workdir / "b.txt").exists()


def spawn(args: list[str], home: Path, cwd: Path) -> pexpect.spawn:
    env = {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1", "TERM": "dumb"}
    child = pexpect.spawn(butler_exe(), args, cwd=str(cwd), env=env, encoding="utf-8", timeout=20)
    return prompt_speed(child)


def test_the_terminal_shows_both_and_approves_all_shown(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    park_id, _ = park_two(butler, script)
    child = spawn(["resume", park_id], butler_home, workdir)
    child.expect("action 1 of 2")
    child.expect("a.txt")
    child.expect("action 2 of 2")
    child.expect("b.txt")
    child.expect(r"Approve all 2 actions shown\? \[y/n/e")
    child.sendline("y")
    child.expect("Both done.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (workdir / "a.txt").exists() and (workdir / "b.txt").exists()


def test_the_terminal_asks_each_in_turn(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    park_id, _ = park_two(butler, script)
    child = spawn(["resume", park_id], butler_home, workdir)
    child.expect(r"Approve all 2 actions shown\? \[y/n/e")
    child.sendline("e")
    child.expect(r"Approve \(action 1 of 2\)\? \[y/n\]")
    child.sendline("y")
    child.expect(r"Approve \(action 2 of 2\)\? \[y/n\]")
    child.sendline("n")
    child.expect("Note for the model")
    child.sendline("only a")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (workdir / "a.txt").read_text() == "alpha\n"
    assert not (workdir / "b.txt").exists()
    answers = [r["content"] for r in results_of(butler, park_id)]
    assert any("only a" in a for a in answers), answers
    shown = json.loads(butler("show", park_id, "--json").stdout)
    decided = shown["decisions"]
    assert sorted(d["approved"] for d in decided.values()) == [False, True]


def chat_with_two_writes(script: Any, butler_home: Path, workdir: Path) -> pexpect.spawn:
    from conftest import spawn_butler

    child = spawn_butler(["chat", "--model", two_writes(script)], butler_home, workdir)
    child.expect("you ›")
    child.sendline("write both")
    return child


def test_the_chat_asks_both_calls_and_approving_all_shown_runs_both_once(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    child = chat_with_two_writes(script, butler_home, workdir)
    child.expect("action 1 of 2")
    child.expect("a.txt")
    child.expect("action 2 of 2")
    child.expect("b.txt")
    child.expect(r"Approve all 2 actions shown\? \[y/n/e/l\]")
    assert not (workdir / "a.txt").exists() and not (workdir / "b.txt").exists()
    child.sendline("y")
    child.expect("Both done.")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert (workdir / "a.txt").read_text() == "alpha\n"
    assert (workdir / "b.txt").read_text() == "beta\n"
    audit = [json.loads(x) for x in (butler_home / "audit.jsonl").read_text().splitlines()]
    assert [x["outcome"] for x in audit if x["event"] == "resume"] == ["ran", "ran"]


def test_the_chat_asks_each_in_turn_and_runs_only_the_approved_one(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    child = chat_with_two_writes(script, butler_home, workdir)
    child.expect(r"Approve all 2 actions shown\? \[y/n/e/l\]")
    child.sendline("e")
    child.expect("action 1 of 2")
    child.expect(r"Approve\? \[y/n/l/d/s")
    child.sendline("n")
    child.expect("Note for the model")
    child.sendline("not a")
    child.expect("action 2 of 2")
    child.expect(r"Approve\? \[y/n/l/d/s")
    child.sendline("y")
    child.expect("Both done.")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert not (workdir / "a.txt").exists()
    assert (workdir / "b.txt").read_text() == "beta\n"


def test_the_inbox_card_shows_both_calls_and_approving_runs_both_once(
    butler: Any, script: Any, butler_home: Path, workdir: Path
) -> None:
    from serve_support import eventually, start_serve

    park_id, _ = park_two(butler, script)
    served = start_serve(butler_home, workdir)
    try:
        page = served.request("/")[1]
        assert "2 actions" in page and "a.txt" in page and "b.txt" in page, page
        assert "alpha" in page and "beta" in page  # both calls' arguments are on the card
        status, answer = served.decide(park_id, "approve")
        assert status == 200 and answer["ok"], answer
        eventually(lambda: (workdir / "b.txt").exists() and (workdir / "a.txt").exists())
        eventually(lambda: "outcome done" in served.request("/")[1])
    finally:
        served.stop()
    assert (workdir / "a.txt").read_text() == "alpha\n"
    assert (workdir / "b.txt").read_text() == "beta\n"


def test_an_on_park_hook_names_every_action_the_round_waits_on(
    butler: Any, script: Any, butler_home: Path, tmp_path: Path
) -> None:
    out = tmp_path / "events.jsonl"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ncat >> {out}\necho >> {out}\n")
    hook.chmod(0o755)
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(f'[hooks]\non_park = ["{hook}"]\n')
    park_id, _ = park_two(butler, script)
    [event] = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    assert event["park_id"] == park_id
    titles = [a["title"] for a in event["actions"]]
    assert len(titles) == 2 and "a.txt" in titles[0] and "b.txt" in titles[1]
    assert "alpha" not in json.dumps(event)  # never an argument value beyond the title


def test_a_forged_per_call_mark_decides_nothing(
    butler: Any, script: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """A page's "decide as marked" names calls by id: a mark for a call the round does not
    ask about (a sibling the policy refused, an id made up, one with `..` and escapes) is
    refused whole — nothing is decided, nothing runs, the park stays pending."""
    from serve_support import start_serve

    park_id = parked_with_b_refused(butler, script, tmp_path)
    asked = json.loads(butler("show", park_id, "--json").stdout)["approval"]["call_id"]
    served = start_serve(butler_home, workdir)
    try:
        for forged in ("w2", "../w1\x1b[2J", asked + "x"):
            status, body = served.request(
                f"/park/{park_id}/decide",
                data={"decision": "each", f"call:{asked}": "deny", f"call:{forged}": "approve"},
                headers={"X-CSRF-Token": served.csrf()},
            )
            answer = json.loads(body)
            assert status == 409 and not answer["ok"], answer
            assert "does not ask about" in answer["message"], answer
    finally:
        served.stop()
    assert json.loads(butler("show", park_id, "--json").stdout)["status"] == "pending"
    assert not (workdir / "a.txt").exists() and not (workdir / "b.txt").exists()
