"""Every call the model sends has its own identity: ids come from the model and are untrusted.

Attacks through the installed `butler` against a real OpenAI-compatible server on 127.0.0.1:
repeated ids, empty ids, a refusal and an allowance under one id, a malformed call sharing an
id with a good one. A refusal must bind to the call it was made for, and nothing may crash.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import json_lines, tool_results
from fake_llm import FakeLLM, Reply, openai_stream, split

KEY = "sk-test-identity-0000"
SPLIT_POLICY = """\
from butler_cli import allow, refuse

def classify(name, args):
    if name == "delete_file":
        return refuse("deleting is not allowed here")
    return allow("writing is fine")
"""


@pytest.fixture
def split_policy(tmp_path: Path) -> list[str]:
    path = tmp_path / "split_policy.py"
    path.write_text(SPLIT_POLICY)
    return ["--policy", f"{path}:classify", "--yes-safe"]


def run_with(butler, fake: FakeLLM, *extra: str):
    args = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    return butler("run", *args, *extra, "tidy up", "--json", env={"OPENAI_API_KEY": KEY})


def audit(home: Path) -> list[dict]:
    return [json.loads(x) for x in (home / "audit.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    "ids",
    [("dup", "dup"), ("", ""), ("same", "same"), ("x y", "x y")],
    ids=["dup", "empty", "same", "space"],
)
@pytest.mark.parametrize("order", ["refused-first", "refused-last"])
def test_a_refusal_binds_to_its_own_call_under_a_shared_id(
    ids, order, fake, butler, workdir, butler_home, split_policy
) -> None:
    (workdir / "keep.txt").write_text("precious")
    delete = (ids[0], "delete_file", split({"path": "keep.txt"}))
    write = (ids[1], "write_file", split({"path": "new.txt", "content": "hi"}))
    calls = [delete, write] if order == "refused-first" else [write, delete]
    fake.replies = [Reply(events=openai_stream("", calls)), Reply(events=openai_stream("ok"))]
    r = run_with(butler, fake, *split_policy)
    assert r.returncode == 0, r.stderr
    assert (workdir / "keep.txt").read_text() == "precious"  # the refused delete never ran
    assert (workdir / "new.txt").read_text() == "hi"  # the allowed write did
    results = tool_results(r.stdout)
    assert len(results) == 2
    call_ids = [
        b["id"]
        for m in json_lines(r.stdout)[0]["messages"]
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    assert len(set(call_ids)) == 2 and all(call_ids)  # each call got its own identity
    by_id = {res["tool_use_id"]: res for res in results}
    assert set(by_id) == set(call_ids)
    deleted_id = call_ids[0] if order == "refused-first" else call_ids[1]
    assert by_id[deleted_id]["is_error"] and "Refused" in by_id[deleted_id]["content"]
    verdicts = {
        line["tool"]: line["verdict"] for line in audit(butler_home) if line["event"] == "verdict"
    }
    assert verdicts == {"delete_file": "refuse", "write_file": "allow"}
    sent = fake.requests[1]["body"]["messages"]  # what the model sees next pairs up one to one
    tool_msgs = [m for m in sent if m["role"] == "tool"]
    assert sorted(m["tool_call_id"] for m in tool_msgs) == sorted(call_ids)


def test_a_benign_call_then_a_governed_one_under_one_id_parks_cleanly(
    fake, butler, workdir, butler_home
) -> None:
    (workdir / "notes.txt").write_text("hello")
    calls = [
        ("dup", "read_file", split({"path": "notes.txt"})),
        ("dup", "delete_file", split({"path": "notes.txt"})),
    ]
    fake.replies = [Reply(events=openai_stream("", calls))]
    r = run_with(butler, fake)
    assert r.returncode == 3, r.stderr  # parked, not a traceback
    assert "Traceback" not in r.stderr
    [park] = json.loads(butler("pending", "--json").stdout)
    assert park["tool"] == "delete_file"
    fake.replies = [Reply(events=openai_stream("done"))]
    r = butler("resume", park["id"], "--deny", "--json", env={"OPENAI_API_KEY": KEY})
    assert r.returncode == 0, r.stderr
    assert (workdir / "notes.txt").read_text() == "hello"
    results = [m for m in fake.requests[-1]["body"]["messages"] if m["role"] == "tool"]
    assert len(results) == 2 and results[0]["content"] == "hello"
    assert "declined" in results[1]["content"]


def test_a_malformed_call_does_not_taint_a_good_one_sharing_its_id(
    fake, butler, workdir, butler_home, split_policy
) -> None:
    calls = [
        ("dup", "write_file", ['{"path": "a.txt", "content": ']),  # cut off: bad JSON
        ("dup", "write_file", split({"path": "b.txt", "content": "fine"})),
    ]
    fake.replies = [Reply(events=openai_stream("", calls)), Reply(events=openai_stream("ok"))]
    r = run_with(butler, fake, *split_policy)
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert results[0]["is_error"] and "malformed" in results[0]["content"]
    assert not results[1]["is_error"]
    assert (workdir / "b.txt").read_text() == "fine" and not (workdir / "a.txt").exists()


def test_a_park_whose_calls_share_an_id_is_refused_when_read() -> None:
    from butler_cli.core.park import ParkState

    call = {"type": "tool_use", "id": "dup", "name": "delete_file", "input": {"path": "x"}}
    state = {
        "id": "abcdefgh",
        "created_at": "2026-01-01T00:00:00Z",
        "context": {"task": "t", "model": "m", "policy": "ask"},
        "messages": [],
        "calls": [call, {**call, "name": "write_file"}],
        "approval": {"call_id": "dup", "tool": "delete_file", "title": "t", "reason": "r"},
        "verdicts": {"dup": {"decision": "allow", "reason": ""}},
    }
    with pytest.raises(ValueError, match="own id"):
        ParkState.model_validate(state)
    state["calls"] = [call]
    assert ParkState.model_validate(state).calls[0].id == "dup"
