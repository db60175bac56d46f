"""What a chat room channel (`butler serve`'s Matrix room) remembers across restarts, in
``$BUTLER_HOME/matrix/state.json``.

- ``since``: the last sync token fully processed — a restart reads the room from there, so a
  decision sent while the butler was down is read once when it comes back.
- ``announced``: each park's card, as the event ids it was sent as and the content digest it
  showed — a restart does not announce it again, and an answer to any of those events is bound
  to that park and that content.
- ``taken``: the ids of the events already acted on (the last few thousand) — an event the
  homeserver delivers again is not acted on twice (the decided-park ledger refuses a second
  decision anyway).
- ``conversation``: the chat's conversation id, carried on after a restart.

Written whole and atomically (0600) after every change. A file that is not this state is
reported in one line and left as it is: the channel does not start on a half-read state.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from butler_cli.core.errors import UsageError
from butler_cli.store.audit import AuditLog
from butler_cli.store.files import read_no_follow, write_atomic

STATE_FILE = "matrix/state.json"
#: How many acted-on event ids are remembered.
KEEP_TAKEN = 5000


@dataclass
class Announced:
    """One park's card: the events it was sent as (the first is answered), its digest, and
    whether the room was told it is no longer waiting."""

    events: list[str]
    digest: str
    closed: bool = False


@dataclass
class ChannelState:
    since: str | None = None
    announced: dict[str, Announced] = field(default_factory=dict)
    taken: list[str] = field(default_factory=list)
    conversation: str | None = None

    def park_of(self, event_id: str) -> tuple[str, Announced] | None:
        """The park whose card ``event_id`` is."""
        for park_id, card in self.announced.items():
            if event_id in card.events:
                return park_id, card
        return None

    def take(self, event_id: str) -> bool:
        """Mark an event as acted on; False when it already was."""
        if event_id in self.taken:
            return False
        self.taken.append(event_id)
        del self.taken[:-KEEP_TAKEN]
        return True


def state_path(home: Path) -> Path:
    return home / STATE_FILE


def load_state(home: Path) -> ChannelState:
    """The channel's state (empty the first time); a usage error naming a file that is not."""
    path = state_path(home)
    try:
        raw = json.loads(read_no_follow(path).decode("utf-8"))
    except FileNotFoundError:
        return ChannelState()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _unreadable(path, str(exc)) from exc
    try:
        since = raw["since"]
        cards = {
            str(pid): Announced(
                [str(e) for e in card["events"]], str(card["digest"]), bool(card["closed"])
            )
            for pid, card in raw["announced"].items()
        }
        taken = [str(e) for e in raw["taken"]]
        conversation = raw.get("conversation")
        if not (since is None or isinstance(since, str)):
            raise TypeError("since")
        if not (conversation is None or isinstance(conversation, str)):
            raise TypeError("conversation")
    except (KeyError, TypeError, AttributeError) as exc:
        raise _unreadable(path, f"missing or wrong field {exc}") from exc
    return ChannelState(since, cards, taken, conversation)


def dump_state(state: ChannelState) -> bytes:
    """The state as the file holds it (taken at once: the loop may change it meanwhile)."""
    return json.dumps(asdict(state), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write_state(home: Path, data: bytes) -> None:
    write_atomic(state_path(home), data)


def _unreadable(path: Path, why: str) -> UsageError:
    return UsageError(
        f"{path} is not the Matrix channel's state ({why}); it is left as it is — move it "
        "away to start the channel afresh (pending parks are then announced again)"
    )


def record_ignored(home: Path, channel: str, text: str) -> None:
    """One audit line for a message the room's channel ignored (someone else's, an edit):
    who and what, never its words."""
    AuditLog(home).record(channel, park=None, tool="", args={}, outcome="ignored", text=text)
