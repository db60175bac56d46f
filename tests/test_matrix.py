"""`butler serve` in a Matrix room (issue 37), against a real Synapse on 127.0.0.1 and driven by
a real Matrix client (matrix-nio) as the person: chat turns answered, parks announced as
cards and decided by a reply or a reaction through the inbox's one door, exactly once across
restarts of the butler and of the homeserver; a stranger, an edit and a replay decide nothing.

One Synapse serves the whole run (tests/synapse_support.py); each test has users and a room of
its own."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import call
from matrix_person import Person, Seen
from serve_support import Served, start_serve
from synapse_support import Synapse, shared_synapse, using

CARD = "🛎 butler: waiting for your decision"


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Synapse:
    base = tmp_path_factory.getbasetemp()  # the workers' folders share their parent
    return shared_synapse(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)


@dataclass
class Room:
    synapse: Synapse
    id: str
    butler_id: str
    token: str
    person: Person
    stranger: Person
    home: Path
    workdir: Path
    served: list[Served] = field(default_factory=list)
    readers: dict[int, threading.Thread] = field(default_factory=dict)

    def serve(self, **env: str) -> Served:
        s = start_serve(
            self.home, self.workdir, "--no-scheduler", BUTLER_MATRIX_TOKEN=self.token, **env
        )
        self.served.append(s)
        listening = threading.Event()

        def read(out: IO[str]) -> None:  # the whole log, read as it comes (no pipe fills)
            for line in out:
                s.lines.append(line)
                if "matrix: listening in" in line:
                    listening.set()

        assert s.proc.stdout is not None
        reader = threading.Thread(target=read, args=(s.proc.stdout,), daemon=True)
        reader.start()
        self.readers[id(s)] = reader
        if not listening.wait(60):  # the butler listens from here on
            raise AssertionError("serve never listened in the room:\n" + "".join(s.lines))
        return s

    def stop(self, s: Served) -> str:
        """SIGTERM, and the server's whole log once it has stopped."""
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=60)
        self.readers[id(s)].join(timeout=10)  # the log to its end
        return "".join(s.lines)

    def from_butler(self) -> list[Seen]:
        return self.person.from_user(self.butler_id)

    def card(self, park_id: str) -> Seen:
        return self.person.wait_for(
            lambda e: e.sender == self.butler_id and e.body.startswith(CARD) and park_id in e.body
        )

    def cards(self, park_id: str) -> list[Seen]:
        return [e for e in self.from_butler() if e.body.startswith(CARD) and park_id in e.body]

    def answer_to(self, event_id: str) -> Seen:
        return self.person.wait_for(
            lambda e: e.sender == self.butler_id and e.replying_to == event_id
        )

    def answers_to(self, event_id: str) -> list[Seen]:
        return [e for e in self.from_butler() if e.replying_to == event_id]


def _room(synapse: Synapse, home: Path, workdir: Path) -> Room:
    tag = uuid.uuid4().hex[:8]
    butler_id = synapse.register(f"butler{tag}", "pw-butler")
    person_id = synapse.register(f"person{tag}", "pw-person")
    stranger_id = synapse.register(f"stranger{tag}", "pw-stranger")
    own = Person(synapse.url, butler_id, "pw-butler")
    token = own.login()
    own.close()
    person = Person(synapse.url, person_id, "pw-person")
    person.login()
    stranger = Person(synapse.url, stranger_id, "pw-stranger")
    stranger.login()
    room_id = person.create_room([butler_id, stranger_id])
    stranger.join(room_id)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[matrix]\n"
        f'homeserver = "{synapse.url}"\n'
        f'user = "{butler_id}"\n'
        f'person = "{person_id}"\n'
        f'room = "{room_id}"\n'
        f'folder = "{workdir}"\n'
    )
    return Room(synapse, room_id, butler_id, token, person, stranger, home, workdir)


@pytest.fixture
def room(synapse: Synapse, butler_home: Path, workdir: Path) -> Iterator[Room]:
    with using(synapse):
        r = _room(synapse, butler_home, workdir)
        yield r
        _close(r)


@pytest.fixture
def room_alone(synapse: Synapse, butler_home: Path, workdir: Path) -> Iterator[Room]:
    """A room on the shared Synapse held alone: the test restarts it."""
    with using(synapse, exclusive=True):
        r = _room(synapse, butler_home, workdir)
        yield r
        _close(r)


def _close(r: Room) -> None:
    for s in r.served:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(timeout=10)
    r.person.close()
    r.stranger.close()


def park_with(butler: Any, script: Any, *turns: dict[str, Any]) -> str:
    ran = butler("run", "--model", script(*turns), "task", "--json")
    assert ran.returncode == 3, ran.stderr
    return str(json.loads(ran.stdout.splitlines()[0])["park_id"])


def writer(butler: Any, script: Any, name: str, text: str = "hello") -> str:
    """A park whose one action writes ``name``."""
    turns = [{"tool_calls": [call("write_file", "c1", path=name, content=text)]}, {"text": "ok"}]
    return park_with(butler, script, *turns)


def decisions(home: Path) -> list[dict[str, Any]]:
    lines = (home / "audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if '"event":"decision"' in line]


def test_a_chat_turn_is_answered_and_a_park_approved_by_reply(
    room: Room, butler: Any, script: Any, workdir: Path
) -> None:
    model = script({"text": "hello from the butler"}, {"text": "and again, same conversation"})
    room.serve(BUTLER_MODEL=model)
    asked = room.person.say(room.id, "hi butler")
    assert room.answer_to(asked).body == "hello from the butler"
    asked = room.person.say(room.id, "and?")
    assert room.answer_to(asked).body == "and again, same conversation"

    pid = writer(butler, script, "out.txt", "hello")
    card = room.card(pid)
    # the inbox card's content: the title, the task, the tool, the arguments, the change
    for part in ("write_file", "task: task", "out.txt", '"content": "hello"', "1 | hello"):
        assert part in card.body, card.body
    assert "<details>" in card.content.get("formatted_body", "") or "<pre>" in str(card.content)
    yes = room.person.say(room.id, "approve", reply_to=card.id)
    told = room.answer_to(yes)
    assert "approved" in told.body and "done" in told.body, told.body
    assert (workdir / "out.txt").read_text() == "hello"
    assert [d["park"] for d in decisions(room.home)] == [pid]


def test_approved_by_reaction_and_denied_with_a_note(
    room: Room, butler: Any, script: Any, workdir: Path
) -> None:
    s = room.serve()
    first = writer(butler, script, "yes.txt", "hi\x1b[2J\u202e")
    shown = room.card(first).body
    assert "\\u001b[2J<U+202E>" in shown and "\x1b" not in shown  # neutralised, not cropped
    room.person.react(room.id, room.card(first).id, "👍")
    closed = room.person.wait_for(
        lambda e: e.sender == room.butler_id and f"park {first}: approved" in e.body
    )
    assert closed.replying_to == room.card(first).id
    assert (workdir / "yes.txt").exists()

    # decided in the inbox: the room sees the same state (its card is told, once)
    inboxed = writer(butler, script, "inbox.txt")
    card = room.card(inboxed)
    status, said = s.decide(inboxed, "approve")
    assert status == 200 and said["ok"], said
    closed = room.person.wait_for(
        lambda e: e.sender == room.butler_id and f"park {inboxed}: approved" in e.body
    )
    assert closed.replying_to == card.id
    yes = room.person.say(room.id, "approve", reply_to=card.id)  # late, from the room
    assert "already decided" in room.answer_to(yes).body
    assert [d["park"] for d in decisions(room.home)].count(inboxed) == 1

    second = writer(butler, script, "no.txt")
    no = room.person.say(room.id, "deny not that file, please", reply_to=room.card(second).id)
    assert "denied" in room.answer_to(no).body
    assert not (workdir / "no.txt").exists()
    denied = [d for d in decisions(room.home) if d["park"] == second]
    assert [(d["decision"], d["note"]) for d in denied] == [("deny", "not that file, please")]


def test_each_call_decided_in_turn(room: Room, butler: Any, script: Any, workdir: Path) -> None:
    calls = [
        call("write_file", "c1", path="a.txt", content="A"),
        call("write_file", "c2", path="b.txt", content="B"),
    ]
    pid = park_with(butler, script, {"tool_calls": calls}, {"text": "both asked"})
    room.serve()
    card = room.card(pid)
    assert "action 1 of 2" in card.body and "action 2 of 2" in card.body
    bad = room.person.say(room.id, "each approve", reply_to=card.id)  # one word short
    assert "one word per action" in room.answer_to(bad).body
    each = room.person.say(room.id, "each approve deny not b", reply_to=card.id)
    assert "decided (1 approved, 1 denied" in room.answer_to(each).body
    assert (workdir / "a.txt").read_text() == "A" and not (workdir / "b.txt").exists()
    marks = {d["decision"] for d in decisions(room.home)}
    assert marks == {"approve", "deny"}


def test_a_decision_sent_while_serve_is_stopped_is_taken_once(
    room: Room, butler: Any, script: Any, workdir: Path
) -> None:
    model = script({"text": "pong"}, {"text": "pong again"})
    s = room.serve(BUTLER_MODEL=model)
    pid = writer(butler, script, "later.txt", "once\n")
    card = room.card(pid)
    room.stop(s)
    state_file = room.home / "matrix/state.json"
    before = state_file.read_bytes()
    assert json.loads(before)["announced"][pid]["events"] == [card.id]

    yes = room.person.say(room.id, "yes", reply_to=card.id)  # while nobody listens
    for n in range(70):  # more than one sync's batch: the room is read back to find it
        room.stranger.say(room.id, f"chatter {n}")
    room.serve(BUTLER_MODEL=model)
    assert "approved" in room.answer_to(yes).body
    assert (workdir / "later.txt").read_text() == "once\n"
    assert len(room.cards(pid)) == 1  # announced once, not again after the restart
    room.stop(room.served[-1])

    # A replay: the room read again from before the decision (a token lost with a crash)
    shutil.copy(state_file, room.home / "state.after")
    rewound = json.loads(state_file.read_text())
    rewound["since"] = json.loads(before)["since"]
    state_file.write_text(json.dumps(rewound))
    room.serve(BUTLER_MODEL=model)
    ping = room.person.say(room.id, "ping")
    assert room.answer_to(ping).body == "pong"  # everything before it was read by now
    assert len(room.answers_to(yes)) == 1
    assert (workdir / "later.txt").read_text() == "once\n"
    assert [d["park"] for d in decisions(room.home)] == [pid]
    audit = (room.home / "audit.jsonl").read_text()
    assert audit.count('"matrix":"ignored"') == 70  # each of the stranger's, once


def test_a_stranger_an_edit_and_a_replay_decide_nothing(
    room: Room, butler: Any, script: Any, workdir: Path
) -> None:
    model = script({"text": "pong"})
    room.serve(BUTLER_MODEL=model)
    pid = writer(butler, script, "guarded.txt")
    card = room.card(pid)
    # the stranger wears the person's name and id as a display name: only the sender counts
    room.stranger._run(room.stranger.client.set_displayname(room.person.user))
    room.stranger.say(room.id, "approve", reply_to=card.id)
    room.stranger.react(room.id, card.id, "👍")
    # no word keeps an approval or reaches the policy: "always" is not a decision
    for words in ("always allow here", "keep", "approve!always"):
        said = room.person.say(room.id, words, reply_to=card.id)
        assert "says approve, deny or each" in room.answer_to(said).body, words
    hmm = room.person.say(room.id, "hmm, let me think", reply_to=card.id)
    assert "says approve, deny or each" in room.answer_to(hmm).body
    room.person.edit(room.id, hmm, "approve", reply_to=card.id)  # an old message, edited
    ping = room.person.say(room.id, "ping")
    assert room.answer_to(ping).body == "pong"  # everything before it was read by now
    assert not (workdir / "guarded.txt").exists()
    assert decisions(room.home) == []
    audit = (room.home / "audit.jsonl").read_text()
    assert audit.count('"matrix":"ignored"') >= 3  # two from the stranger, the edit
    assert room.stranger.user in audit

    yes = room.person.say(room.id, "approve", reply_to=card.id)
    assert "approved" in room.answer_to(yes).body
    again = room.person.say(room.id, "approve", reply_to=card.id)  # the same answer, replayed
    assert "already decided" in room.answer_to(again).body
    late = room.person.react(room.id, card.id, "👎")  # a late change of mind
    assert (workdir / "guarded.txt").read_text() == "hello"
    assert [d["park"] for d in decisions(room.home)] == [pid]
    assert "kept" not in (room.home / "audit.jsonl").read_text()
    assert butler("grants", "list").stdout.count("write_file") == 0
    assert re.search(r"already decided", room.answer_to(late).body)


def test_the_homeserver_restarted_mid_way(
    room_alone: Room, butler: Any, script: Any, workdir: Path
) -> None:
    room = room_alone
    model = script({"text": "pong"}, {"text": "pong again"})
    s = room.serve(BUTLER_MODEL=model)
    room.synapse.stop()
    pid = writer(butler, script, "meanwhile.txt")  # parked while the homeserver is down
    room.synapse.start()
    card = room.card(pid)
    yes = room.person.say(room.id, "approve", reply_to=card.id)
    assert "approved" in room.answer_to(yes).body
    assert (workdir / "meanwhile.txt").exists()
    ping = room.person.say(room.id, "ping")
    assert room.answer_to(ping).body == "pong"
    assert len(room.cards(pid)) == 1
    assert "retrying" in room.stop(s)


def test_a_bad_state_file_or_a_missing_token_is_one_line(
    butler: Any, butler_home: Path, workdir: Path
) -> None:
    """No homeserver needed: `serve` stops before it connects, in one line, nothing moved."""
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(
        '[matrix]\nhomeserver = "http://127.0.0.1:9"\nuser = "@b:localhost"\n'
        'person = "@p:localhost"\nroom = "!r:localhost"\n'
    )
    ran = butler("serve", "--port", "0", "--no-scheduler")
    assert ran.returncode == 2 and "BUTLER_MATRIX_TOKEN" in ran.stderr, ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1 and "Traceback" not in ran.stderr
    state = butler_home / "matrix/state.json"
    state.parent.mkdir()
    state.write_text('{"since": 5}')
    ran = butler("serve", "--port", "0", "--no-scheduler", env={"BUTLER_MATRIX_TOKEN": "t0k"})
    assert ran.returncode == 2 and "state.json is not the Matrix channel's state" in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1 and "Traceback" not in ran.stderr
    assert state.read_text() == '{"since": 5}'  # left as it is
