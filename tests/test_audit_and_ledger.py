"""A decided park never runs again, whatever its file says; the audit log has every verdict
and never an argument's value. Attacks through the installed `butler`."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import call, spawn_butler

SECRET = "Bearer sk-AUDIT-CANARY-42"


def audit(home: Path) -> list[dict]:
    return [json.loads(x) for x in (home / "audit.jsonl").read_text().splitlines()]


def pending_id(butler) -> str:
    [park] = json.loads(butler("pending", "--json").stdout)
    return park["id"]


def test_a_restored_pending_park_never_runs_twice(butler, script, workdir, butler_home) -> None:
    (workdir / "victim.txt").write_text("v1")
    model = script({"tool_calls": [call("delete_file", "d1", path="victim.txt")]}, {"text": "ok"})
    assert butler("run", "--model", model, "tidy").returncode == 3
    park = pending_id(butler)
    park_file = butler_home / "parks" / f"{park}.json"
    saved = park_file.read_bytes()
    r = butler("resume", park, "--approve")
    assert r.returncode == 0, r.stderr
    assert not (workdir / "victim.txt").exists()
    (workdir / "victim.txt").write_text("v2")  # the person makes it again
    park_file.write_bytes(saved)  # ...and an old copy of the park comes back (a backup restore)
    for decision in ("--approve", "--deny"):
        r = butler("resume", park, decision)
        assert r.returncode == 5, (r.stdout, r.stderr)
        assert "already decided" in r.stderr and "Traceback" not in r.stderr
    assert (workdir / "victim.txt").read_text() == "v2"  # it did not run twice
    assert park_file.read_bytes() == saved  # the restored file is left as it is
    ledger = (butler_home / "decided.jsonl").read_text()
    assert ledger.count(park) == 2  # decided, then resolved


def test_a_copy_taken_after_the_decision_does_not_run_again(
    butler, script, workdir, butler_home, tmp_path
) -> None:
    """Even a copy of a park taken while it was `decided` (a crash recovery point) is refused
    once the ledger says the round finished."""
    (workdir / "victim.txt").write_text("v1")
    model = script({"tool_calls": [call("delete_file", "d1", path="victim.txt")]}, {"text": "ok"})
    assert butler("run", "--model", model, "tidy").returncode == 3
    park = pending_id(butler)
    park_file = butler_home / "parks" / f"{park}.json"
    r = butler(
        "resume", park, "--approve", env={"BUTLER_TEST_CRASH_AT": "decision-written"}
    )  # dies after the decision, before the action
    assert r.returncode != 0
    decided = park_file.read_bytes()
    assert b'"decided"' in decided
    assert butler("resume", park).returncode == 0  # recovery runs it under the recorded decision
    assert not (workdir / "victim.txt").exists()
    (workdir / "victim.txt").write_text("v2")
    park_file.write_bytes(decided)
    r = butler("resume", park)
    assert r.returncode == 5 and "already" in r.stderr
    assert (workdir / "victim.txt").read_text() == "v2"


def test_a_torn_ledger_line_does_not_swallow_the_next_decision(
    butler, script, workdir, butler_home
) -> None:
    """A crash or a full disk mid-append leaves the ledger's last line torn (no newline). The
    next decision's line was written straight onto it: one line that is not JSON, so the
    decision was not on record. A crash after the action, and a pending copy of the park put
    back, then ran the action a second time."""
    (workdir / "victim.txt").write_text("v1")
    model = script({"tool_calls": [call("delete_file", "d1", path="victim.txt")]}, {"text": "ok"})
    assert butler("run", "--model", model, "tidy").returncode == 3
    park = pending_id(butler)
    park_file = butler_home / "parks" / f"{park}.json"
    saved = park_file.read_bytes()
    ledger = butler_home / "decided.jsonl"
    ledger.write_bytes(b'{"park":"aaaaaaaa","event":"dec')  # an earlier append cut short
    r = butler("resume", park, "--approve", env={"BUTLER_TEST_CRASH_AT": "action-ran"})
    assert r.returncode != 0  # killed after the delete, before "resolved" is written
    assert not (workdir / "victim.txt").exists()
    (workdir / "victim.txt").write_text("v2")  # the person makes it again
    park_file.write_bytes(saved)  # ...and the pending copy of the park comes back
    r = butler("resume", park, "--approve")
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert "already decided" in r.stderr and "Traceback" not in r.stderr
    assert (workdir / "victim.txt").read_text() == "v2"  # it did not run twice
    lines = ledger.read_bytes().splitlines()
    assert lines[0] == b'{"park":"aaaaaaaa","event":"dec'  # the torn line is left as it was
    assert json.loads(lines[1])["park"] == park


def test_resume_time_verdicts_are_audited(butler, script, workdir, butler_home, tmp_path) -> None:
    policy = tmp_path / "pol.py"
    policy.write_text(
        "from butler_cli import approve\n\ndef classify(name, args):\n    return approve('ask')\n"
    )
    model = script(
        {
            "tool_calls": [
                call("write_file", "w1", path="a.txt", content="one"),
                call("write_file", "w2", path="b.txt", content="two"),
                call("delete_file", "d1", path="c.txt"),
            ]
        },
        {"text": "ok"},
    )
    (workdir / "c.txt").write_text("keep")
    r = butler("run", "--model", model, "--policy", f"{policy}:classify", "go")
    assert r.returncode == 3, r.stderr
    park = pending_id(butler)
    # The policy changes before the resume: deletes are now refused.
    policy.write_text(
        "from butler_cli import approve, refuse\n\ndef classify(name, args):\n"
        "    return refuse('no deletes') if name == 'delete_file' else approve('ask')\n"
    )
    assert butler("resume", park, "--approve").returncode == 0
    lines = [x for x in audit(butler_home) if x["event"] == "resume"]
    # Both writes were asked and approved; the delete, asked too, is refused now (X4).
    assert sorted((x["tool"], x["outcome"]) for x in lines) == [
        ("delete_file", "refused"),
        ("write_file", "ran"),
        ("write_file", "ran"),
    ]
    assert all(x["park"] == park and len(x["args_sha256"]) == 64 for x in lines)
    refused = next(x for x in lines if x["tool"] == "delete_file")
    assert refused["verdict"] == "refuse" and refused["reason"] == "no deletes"
    assert (workdir / "c.txt").read_text() == "keep"


def test_a_policy_error_puts_no_argument_in_the_audit(
    butler, script, workdir, butler_home, tmp_path
) -> None:
    policy = tmp_path / "pol.py"
    policy.write_text("def classify(name, args):\n    raise KeyError(args['content'])\n")
    model = script({"tool_calls": [call("write_file", "w1", path="a.txt", content=SECRET)]})
    r = butler("run", "--model", model, "--policy", f"{policy}:classify", "go")
    assert r.returncode == 3, r.stderr
    text = (butler_home / "audit.jsonl").read_text()
    assert "sk-AUDIT-CANARY" not in text
    [line] = [x for x in audit(butler_home) if x["event"] == "verdict"]
    assert line["verdict"] == "approve" and "KeyError" in line["reason"]


def test_grant_use_is_audited_without_the_arguments(script, workdir, butler_home, tmp_path) -> None:
    model = script(
        {"tool_calls": [call("write_file", "a", path="a.txt", content=SECRET)]},
        {"text": "one"},
        {"tool_calls": [call("write_file", "b", path="a.txt", content=SECRET)]},
        {"text": "two"},
    )
    child = spawn_butler(["chat", "--model", model], butler_home, workdir)
    child.expect("you ›")
    child.sendline("first")
    child.expect(r"Approve\? \[y/n/l/d/s")
    child.sendline("s")
    child.expect("one")
    child.expect("you ›")
    child.sendline("again")
    child.expect("two")
    child.expect("you ›")
    child.sendeof()
    child.expect(__import__("pexpect").EOF)
    text = (butler_home / "audit.jsonl").read_text()
    assert "sk-AUDIT-CANARY" not in text
    lines = audit(butler_home)
    granted = [x for x in lines if x["event"] == "grant"]
    assert len(granted) == 1 and granted[0]["tool"] == "write_file"
    used = [x for x in lines if x["event"] == "verdict" and "session grant 1" in x["reason"]]
    assert len(used) == 1 and used[0]["verdict"] == "allow"
