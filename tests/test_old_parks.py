"""Parks written before the loop's messages became dataclasses still load, resume and are
written back byte for byte.

``tests/old_parks/`` was made by the butler at 93cda59 (messages were pydantic models then):
``5qbkd63n`` is a pending park (a `now` round, then `write_file` beside a `now` it deferred;
text with accents, an emoji, quotes and a newline); ``dcdwayz3`` is the same park decided
(approved, with a note) and stopped mid-round: `write_file` started and its result recorded,
`now` started with no result. Both made under ``/tmp/butler-old-park`` with ``script.json``
there, signed with ``park.key``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import shutil
from pathlib import Path

import pytest
from conftest import json_lines, tool_results

from butler_cli.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from butler_cli.core.outcomes import OUTCOME_UNKNOWN
from butler_cli.store.parks import ParkStore, encode_park

OLD = Path(__file__).parent / "old_parks"
MADE_UNDER = b"/tmp/butler-old-park"
HEAD = b'",\n"park": '


def install(home: Path, park_id: str, moved_to: Path | None = None) -> bytes:
    """The old park file under ``home`` with its key; with ``moved_to``, its folder and
    script path are rewritten to there and the body signed again (nothing else changes)."""
    (home / "parks").mkdir(parents=True, mode=0o700)
    shutil.copyfile(OLD / "park.key", home / "park.key")
    os.chmod(home / "park.key", 0o600)
    raw = (OLD / f"{park_id}.json").read_bytes()
    if moved_to is not None:
        head, rest = raw.split(HEAD, 1)
        body = rest[:-3].replace(MADE_UNDER, str(moved_to).encode())
        key = bytes.fromhex((home / "park.key").read_text().strip())
        mac = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
        raw = b'{"mac": "hmac-sha256:' + mac + HEAD + body + rest[-3:]
    (home / "parks" / f"{park_id}.json").write_bytes(raw)
    os.chmod(home / "parks" / f"{park_id}.json", 0o600)
    return raw


@pytest.mark.parametrize("park_id", ["5qbkd63n", "dcdwayz3"])
def test_an_old_park_loads_as_dataclasses_and_is_written_back_byte_for_byte(
    tmp_path: Path, park_id: str
) -> None:
    home = tmp_path / "home"
    raw = install(home, park_id)
    store = ParkStore(home)
    state = store.load(park_id)
    assert [type(b) for b in state.messages[1].content] == [TextBlock, ToolUseBlock]
    assert isinstance(state.messages[2].content[0], ToolResultBlock)
    assert all(isinstance(m, Message) for m in state.messages)
    assert [c.id for c in state.calls] == ["w1", "n1"]
    assert state.calls[0].input == {"path": "note.txt", "content": 'prix: 3.50 € "quoted"\n'}
    assert state.messages[1].text == "Je regarde l'heure — café ☕"
    key = store.key(create=False)
    assert key is not None
    assert encode_park(key, state) == raw  # the same JSON, byte for byte


def test_an_old_pending_park_resumes(butler, butler_home, workdir, tmp_path) -> None:
    install(butler_home, "5qbkd63n", moved_to=tmp_path)
    shutil.copyfile(OLD / "script.json", tmp_path / "script.json")
    r = butler("resume", "5qbkd63n", "--approve", "--json")
    assert r.returncode == 0, r.stderr
    assert (workdir / "note.txt").read_text() == 'prix: 3.50 € "quoted"\n'
    results = tool_results(r.stdout)
    assert [(x["tool_use_id"], x["outcome"]) for x in results] == [
        ("t1", "ran"),
        ("w1", "ran"),
        ("n1", "ran"),
    ]
    assert json_lines(r.stdout)[0]["text"] == "done ✓"


def test_an_old_park_stopped_mid_round_recovers_without_running_again(
    butler, butler_home, workdir, tmp_path
) -> None:
    install(butler_home, "dcdwayz3", moved_to=tmp_path)
    shutil.copyfile(OLD / "script.json", tmp_path / "script.json")
    r = butler("resume", "dcdwayz3", "--json")
    assert r.returncode == 0, r.stderr
    assert not (workdir / "note.txt").exists()  # recorded as done: never run again
    results = tool_results(r.stdout)[1:]
    assert [(x["tool_use_id"], x["outcome"]) for x in results] == [("w1", "ran"), ("n1", "unknown")]
    assert results[0]["content"] == "wrote 27 bytes to note.txt"
    assert results[1]["content"] == OUTCOME_UNKNOWN
