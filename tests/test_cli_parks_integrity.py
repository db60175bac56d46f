"""Tampered, corrupt, foreign and racing parks: refused with exit 5, bytes kept, nothing run."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import butler_command, call, tool_results

from butler_cli.core.messages import ToolResultBlock
from butler_cli.store.parks import ParkStore

WRITE = call("write_file", "w1", path="out.txt", content="hello")


@pytest.fixture
def parked(butler, script, butler_home) -> Callable[[], Path]:
    def make() -> Path:
        r = butler("run", "--model", script({"tool_calls": [WRITE]}, {"text": "done"}), "write")
        assert r.returncode == 3, r.stderr
        return sorted((butler_home / "parks").glob("*.json"))[-1]

    return make


def body_of(raw: bytes) -> tuple[bytes, bytes, bytes]:
    head, rest = raw.split(b'",\n"park": ', 1)
    return head + b'",\n"park": ', rest[:-3], rest[-3:]


def resign(home: Path, raw: bytes, edit: Callable[[dict], None]) -> bytes:
    """Edit the body and sign it with the right key: a well-formed file the key vouches for."""
    _, body, tail = body_of(raw)
    data = json.loads(body)
    edit(data)
    new_body = json.dumps(data, indent=2).encode()
    key = bytes.fromhex((home / "park.key").read_text().strip())
    mac = hmac.new(key, new_body, hashlib.sha256).hexdigest().encode()
    return b'{"mac": "hmac-sha256:' + mac + b'",\n"park": ' + new_body + tail


def edit_body(raw: bytes, old: bytes, new: bytes) -> bytes:
    assert old in raw
    return raw.replace(old, new, 1)


TAMPERS: dict[str, Callable[[bytes], bytes]] = {
    "changed arguments": lambda b: edit_body(b, b'"content": "hello"', b'"content": "pwned"'),
    "changed tool name": lambda b: b.replace(b'"name": "write_file"', b'"name": "delete_file"', 1),
    "swapped approved id": lambda b: edit_body(b, b'"call_id": "w1"', b'"call_id": "zz"'),
    "verdict approve to allow": lambda b: edit_body(
        b, b'"decision": "approve"', b'"decision": "allow"'
    ),
    "decision planted": lambda b: edit_body(
        b, b'"decision": null', b'"decision": {"approved": true}'
    ),
    "truncated json": lambda b: b[: len(b) // 2],
    "byte flip in mac": lambda b: b[:25] + bytes([b[25] ^ 1]) + b[26:],
    "byte flip at end": lambda b: b[:-5] + bytes([b[-5] ^ 0x20]) + b[-4:],
    "empty file": lambda b: b"",
    "not json": lambda b: b"hello there\n",
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_tampered_park_is_refused_and_kept(name, parked, butler, workdir) -> None:
    park = parked()
    bad = TAMPERS[name](park.read_bytes())
    park.write_bytes(bad)
    r = butler("resume", park.stem, "--approve")
    assert r.returncode == 5, (name, r.stderr)
    assert str(park) in r.stderr and "Traceback" not in r.stderr
    assert park.read_bytes() == bad
    assert not (workdir / "out.txt").exists()
    # pending names it and still succeeds
    p = butler("pending", "--json")
    assert p.returncode == 0 and json.loads(p.stdout) == []
    assert park.name in p.stderr


def test_unknown_version_is_refused_even_with_a_valid_mac(
    parked, butler, butler_home, workdir
) -> None:
    park = parked()
    bad = resign(butler_home, park.read_bytes(), lambda d: d.update(v=99))
    park.write_bytes(bad)
    r = butler("resume", park.stem, "--approve")
    assert r.returncode == 5 and "version 99" in r.stderr
    assert park.read_bytes() == bad and not (workdir / "out.txt").exists()


def test_a_resigned_edit_still_cannot_mix_parks(parked, butler, butler_home) -> None:
    park = parked()
    park.write_bytes(resign(butler_home, park.read_bytes(), lambda d: d.update(id="aaaaaaaa")))
    r = butler("resume", park.stem, "--approve")
    assert r.returncode == 5 and "holds park" in r.stderr


def test_symlink_in_place_of_a_park_is_refused(parked, butler, tmp_path, workdir) -> None:
    park = parked()
    real = tmp_path / "elsewhere.json"
    real.write_bytes(park.read_bytes())
    park.unlink()
    park.symlink_to(real)
    r = butler("resume", park.stem, "--approve")
    assert r.returncode == 5 and "symlink" in r.stderr
    assert park.is_symlink() and not (workdir / "out.txt").exists()


def test_park_from_another_home_is_refused(
    parked, butler, butler_home, tmp_path, script, workdir
) -> None:
    other_home = tmp_path / "other"
    r = butler(
        "run", "--model", script({"tool_calls": [WRITE]}), "x", env={"BUTLER_HOME": str(other_home)}
    )
    assert r.returncode == 3
    foreign = next((other_home / "parks").glob("*.json"))
    parked()  # make sure this home has its own key
    target = butler_home / "parks" / foreign.name
    target.write_bytes(foreign.read_bytes())
    r = butler("resume", foreign.stem, "--approve")
    assert r.returncode == 5 and "authenticity" in r.stderr
    assert not (workdir / "out.txt").exists()


def test_malformed_key_is_reported_and_left_alone(parked, butler, butler_home) -> None:
    park = parked()
    key = butler_home / "park.key"
    key.write_text("garbage\n")
    r = butler("resume", park.stem, "--approve")
    assert r.returncode == 2 and "park key" in r.stderr
    assert key.read_text() == "garbage\n"


def test_concurrent_resumes_run_the_action_at_most_once(parked, butler_home, workdir) -> None:
    park = parked()
    env = {"BUTLER_HOME": str(butler_home), "PATH": "/usr/bin:/bin"}
    flags = ["--approve", "--deny"] * 4
    procs = [
        subprocess.Popen(
            [*butler_command(), "resume", park.stem, flag, "--json"],
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for flag in flags
    ]
    codes = [p.wait(timeout=60) for p in procs]
    winners = [f for f, c in zip(flags, codes, strict=True) if c == 0]
    assert len(winners) == 1, codes
    assert sorted(codes) == [0] + [5] * 7
    decisions = [
        json.loads(x)
        for x in (butler_home / "audit.jsonl").read_text().splitlines()
        if '"decision"' in x and '"event":"decision"' in x
    ]
    assert len(decisions) == 1
    assert (workdir / "out.txt").exists() == (winners[0] == "--approve")


def test_recovery_after_a_crash_mid_action(parked, butler, butler_home, workdir) -> None:
    """Decided, the action started, no result: the next resume says "outcome unknown"."""
    park = parked()
    store = ParkStore(butler_home)
    state = store.load(park.stem)
    state.status = "decided"
    from butler_cli.core.park import Decision

    state.decision = Decision(approved=True)
    state.started.append("w1")
    store.save(state)
    r = butler("resume", park.stem, "--deny")
    assert r.returncode == 5 and "already approved" in r.stderr
    r = butler("resume", park.stem, "--json")
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert results[-1]["is_error"] and "Outcome unknown" in results[-1]["content"]
    assert not (workdir / "out.txt").exists()
    assert store.load(park.stem).status == "resolved"


def test_recovery_reuses_a_recorded_result(parked, butler, butler_home, workdir) -> None:
    park = parked()
    store = ParkStore(butler_home)
    state = store.load(park.stem)
    from butler_cli.core.park import Decision

    state.status, state.decision = "decided", Decision(approved=True)
    state.started.append("w1")
    state.results["w1"] = ToolResultBlock(tool_use_id="w1", content="wrote 5 bytes (recorded)")
    store.save(state)
    r = butler("resume", park.stem, "--approve", "--json")
    assert r.returncode == 0
    assert "wrote 5 bytes (recorded)" in r.stdout
    assert not (workdir / "out.txt").exists()


#: Signed with the right key, so only the reading of the park's messages, calls and results
#: stands between these and a resume: each is refused as corrupt (the loop's blocks are plain
#: dataclasses, read back from a park field by field).
MALFORMED: dict[str, Callable[[dict], None]] = {
    "call arguments not an object": lambda d: d["calls"][0].update(input=["x"]),
    "call id not text": lambda d: d["calls"][0].update(id=5),
    "call of another type": lambda d: d["calls"][0].update(type="text"),
    "unknown block type": lambda d: d["messages"][0]["content"][0].update(type="image"),
    "text block without text": lambda d: d["messages"][0]["content"][0].pop("text"),
    "unknown role": lambda d: d["messages"][0].update(role="system"),
    "content not a list": lambda d: d["messages"][1].update(content="hi"),
    "message not an object": lambda d: d["messages"].append("hi"),
    "result outcome unknown": lambda d: d["results"].update(
        w1={"tool_use_id": "w1", "content": "x", "outcome": "maybe"}
    ),
    "result is_error not true or false": lambda d: d["results"].update(
        w1={"tool_use_id": "w1", "content": "x", "is_error": "yes"}
    ),
    "result content not text": lambda d: d["results"].update(
        w1={"tool_use_id": "w1", "content": ["x"]}
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_signed_park_with_malformed_blocks_is_refused_as_corrupt(
    name, parked, butler, butler_home, workdir
) -> None:
    park = parked()
    bad = resign(butler_home, park.read_bytes(), MALFORMED[name])
    park.write_bytes(bad)
    r = butler("resume", park.stem, "--approve")
    assert r.returncode == 5, (name, r.stderr)
    assert "is corrupt" in r.stderr and "Traceback" not in r.stderr
    assert park.read_bytes() == bad and not (workdir / "out.txt").exists()
