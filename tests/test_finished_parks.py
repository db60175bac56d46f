"""Finished parks leave the active folder: `pending` reads only what may still wait, while
`show` and `resume` still find every park."""

from __future__ import annotations

import json

from conftest import call


def test_a_finished_park_moves_to_done_and_stays_readable(butler, script, workdir, butler_home):
    model = script(
        {"tool_calls": [call("write_file", "w", path="a.txt", content="x")]}, {"text": "k"}
    )
    assert butler("run", "--model", model, "write").returncode == 3
    [park] = json.loads(butler("pending", "--json").stdout)
    assert butler("resume", park["id"], "--approve").returncode == 0
    parks = butler_home / "parks"
    assert not (parks / f"{park['id']}.json").exists()
    assert not (parks / f"{park['id']}.lock").exists()  # no lock left per park ever decided
    assert (parks / "done" / f"{park['id']}.json").exists()
    shown = json.loads(butler("show", park["id"][:5], "--json").stdout)  # a prefix finds it
    assert shown["status"] == "resolved" and shown["decision"]["approved"] is True
    r = butler("resume", park["id"], "--approve")
    assert r.returncode == 5 and "never runs twice" in r.stderr


def test_pending_does_not_read_the_history(butler, script, workdir, butler_home):
    model = script({"tool_calls": [call("write_file", "w", path="a.txt", content="x")]})
    assert butler("run", "--model", model, "write").returncode == 3
    done = butler_home / "parks" / "done"
    done.mkdir()
    (done / "zzzzzzzz.json").write_text("not a park")  # would be named if pending read it
    r = butler("pending", "--json")
    assert r.returncode == 0 and len(json.loads(r.stdout)) == 1
    assert "zzzzzzzz" not in r.stderr
    r = butler("show", "zzzzzzzz")
    assert r.returncode == 5 and "corrupt" in r.stderr


def test_a_second_decision_on_a_finished_park_says_it_finished(
    butler, script, workdir, butler_home
):
    model = script(
        {"tool_calls": [call("write_file", "w", path="a.txt", content="x")]}, {"text": "k"}
    )
    assert butler("run", "--model", model, "write").returncode == 3
    [park] = json.loads(butler("pending", "--json").stdout)
    assert butler("resume", park["id"], "--approve").returncode == 0
    r = butler("resume", park["id"], "--deny")
    assert r.returncode == 5
    assert "was already approved and finished" in r.stderr and "restored" not in r.stderr
