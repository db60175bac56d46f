"""Park files: durable, authenticated, exactly-once (X1–X3; lifecycle: docs/architecture.md).

A park file is readable JSON whose first line carries an HMAC over the exact bytes of the
``park`` body that follows, so verifying never needs to re-serialise anything::

    {"mac": "hmac-sha256:<64 hex>",
    "park": { ...the ParkState... }
    }

Every transition rewrites the whole file atomically. A corrupt, tampered or unknown-version
file is reported and left exactly as it is.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler_cli.core.errors import (
    DECIDED,
    TAMPERED,
    ParkError,
    ParkNotFound,
    StorageError,
    UsageError,
)
from butler_cli.core.park_format import PARK_VERSION
from butler_cli.store.faults import count_read, crash_point
from butler_cli.store.files import ensure_private_dir, read_no_follow, write_atomic
from butler_cli.store.ids import random_string
from butler_cli.store.key import load_key, sign, verify

if TYPE_CHECKING:  # the models load only when a park is read whole: `pending` stays fast
    from butler_cli.core.park import ParkState

PARKS_DIR = "parks"
#: Finished parks move here (``parks/done``): `pending` reads only what may still wait.
DONE_DIR = "done"
#: No 0/o, 1/l/i: ids are read aloud and typed by people.
ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
ID_LENGTH = 8
_ID_RE = re.compile(rf"^[{ID_ALPHABET}]{{{ID_LENGTH}}}$")
_TEMP_RE = re.compile(rf"^\.[{ID_ALPHABET}]{{{ID_LENGTH}}}\.json\.\d+\.tmp$")
_HEAD = b'{"mac": "hmac-sha256:'
_MID = b'",\n"park": '
_TAIL = b"\n}\n"
_MAC_LEN = 64


@dataclass(frozen=True, slots=True)
class ParkSummary:
    """The few fields ``pending`` lists, read without building the whole state."""

    id: str
    created_at: str
    status: str
    task: str
    tool: str
    title: str
    reason: str
    #: Every call of the round that needs a person, (tool, title, reason), in the model's
    #: order (the first is ``tool``/``title``/``reason``).
    actions: tuple[tuple[str, str, str], ...] = ()
    #: Where the task came from (``chat``, ``run``, ``schedule ID``…; "" in older parks).
    origin: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.created_at,
            "task": self.task,
            "tool": self.tool,
            "title": self.title,
            "reason": self.reason,
            "actions": [{"tool": t, "title": ti, "reason": r} for t, ti, r in self.actions],
            "origin": self.origin,
        }


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A park file that could not be verified or read; ``problem`` says why."""

    path: Path
    problem: str


def encode_park(key: bytes, state: ParkState) -> bytes:
    body = state.model_dump_json(indent=2).encode("utf-8")
    return _HEAD + sign(key, body).encode("ascii") + _MID + body + _TAIL


class ParkStore:
    """Park files under ``<home>/parks``; the key lives at ``<home>/park.key``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.dir = home / PARKS_DIR
        self.done_dir = self.dir / DONE_DIR
        self._key: bytes | None = None

    # -- ids and paths -------------------------------------------------------------------
    def new_id(self) -> str:
        while True:
            pid = random_string(ID_ALPHABET, ID_LENGTH)
            if not self.active_path(pid).exists() and not self.done_path(pid).exists():
                return pid

    def active_path(self, park_id: str) -> Path:
        """Where a park lives while it is pending or being resumed."""
        return self.dir / f"{park_id}.json"

    def done_path(self, park_id: str) -> Path:
        """Where a park lives once its round is resolved."""
        return self.done_dir / f"{park_id}.json"

    def path_for(self, park_id: str) -> Path:
        """The park's file: the active one if there is one (a copy put back there is read,
        and refused by the ledger), else the finished one."""
        active = self.active_path(park_id)
        if os.path.lexists(active):
            return active
        done = self.done_path(park_id)
        return done if os.path.lexists(done) else active

    def resolve_id(self, given: str) -> str:
        """A full id or a unique prefix → the id. Unknown or ambiguous → usage error."""
        given = given.strip().lower()
        if given.startswith("c-"):  # Claude Code's --resume: a conversation, not a park
            raise ParkNotFound(
                f"'{given}' is a conversation id, not a park id: `butler chat --conversation "
                f"{given}` carries it on; `butler resume` decides a parked action"
            )
        if not given or not all(c in ID_ALPHABET for c in given):
            raise ParkNotFound(f"'{given}' is not a park id (ids look like 'k3m9xq2a')")
        if len(given) == ID_LENGTH and os.path.lexists(self.path_for(given)):
            return given
        names = {p.stem for p in self._files()} | {p.stem for p in self._files(self.done_dir)}
        matches = sorted(name for name in names if name.startswith(given))
        if not matches:
            raise ParkNotFound(f"no park with id '{given}' (see `butler pending`)")
        if len(matches) > 1:
            raise UsageError(f"'{given}' matches several parks: {', '.join(matches)}")
        return matches[0]

    def _files(self, where: Path | None = None) -> list[Path]:
        """Park files in ``where`` (default: the active folder), by name. Temp files and
        anything not named like a park are ignored."""
        folder = where or self.dir
        if not folder.is_dir():
            return []
        with os.scandir(folder) as it:
            names = sorted(
                e.name for e in it if e.name.endswith(".json") and _ID_RE.match(e.name[:-5])
            )
        return [folder / name for name in names]

    # -- key -------------------------------------------------------------------------------
    def key(self, *, create: bool) -> bytes | None:
        if self._key is None:
            self._key = load_key(self.home, create=create)
        return self._key

    # -- reading ---------------------------------------------------------------------------
    def read_raw(self, park_id: str) -> dict[str, Any]:
        """The verified park body as a dict; ParkError naming the file if it is not sound."""
        path = self.path_for(park_id)
        count_read(path)
        try:
            data = read_no_follow(path)
        except FileNotFoundError as exc:
            raise ParkNotFound(f"no park with id '{park_id}'") from exc
        except OSError as exc:
            problem = "is a symlink" if exc.errno == 40 else (exc.strerror or str(exc))
            raise ParkError(f"park file {path} cannot be read: {problem}") from exc
        key = self.key(create=False)
        if key is None:
            raise ParkError(f"park file {path} cannot be verified: no park key in {self.home}")
        body = _verified_body(data, key, path)
        from pydantic_core import from_json  # loaded when a park is read, not on every run

        try:
            raw = from_json(body)  # pydantic-core's parser: a third faster than json.loads
        except ValueError as exc:
            raise ParkError(f"park file {path} is corrupt (not JSON)") from exc
        if not isinstance(raw, dict):
            raise ParkError(f"park file {path} is corrupt (not a park)")
        if raw.get("v") != PARK_VERSION:
            raise ParkError(
                f"park file {path} has version {raw.get('v')!r}; this butler reads version "
                f"{PARK_VERSION} (upgrade the butler to resume it)"
            )
        if raw.get("id") != park_id:
            raise ParkError(f"park file {path} holds park {raw.get('id')!r}, not {park_id!r}")
        return raw

    def load(self, park_id: str) -> ParkState:
        return self.state_of(park_id, self.read_raw(park_id))

    def state_of(self, park_id: str, raw: dict[str, Any]) -> ParkState:
        """The park ``raw`` (as :meth:`read_raw` gave it) holds, validated whole."""
        from pydantic import ValidationError

        from butler_cli.core.park import ParkState

        try:
            return ParkState.model_validate(raw)
        except ValidationError as exc:
            raise ParkError(
                f"park file {self.path_for(park_id)} is corrupt: {exc.errors()[0]['msg']}"
            ) from exc

    def scan(self) -> tuple[list[ParkSummary], list[Unreadable]]:
        """Every active park file (pending, or decided and not yet finished): summaries oldest
        first, and the files that could not be read. Finished parks are in ``done/`` and are
        not read: the cost follows what may still wait, not the history."""
        summaries: list[ParkSummary] = []
        problems: list[Unreadable] = []
        for path in self._files():
            try:
                raw = self.read_raw(path.stem)
                approval = raw["approval"]
                asked = raw.get("approvals") or [approval]
                summaries.append(
                    ParkSummary(
                        id=raw["id"],
                        created_at=raw["created_at"],
                        status=raw["status"],
                        task=raw["context"]["task"],
                        tool=approval["tool"],
                        title=approval["title"],
                        reason=approval["reason"],
                        actions=tuple((a["tool"], a["title"], a["reason"]) for a in asked),
                        origin=str(raw["context"].get("origin", "")),
                    )
                )
            except (ParkError, ParkNotFound) as exc:
                problems.append(Unreadable(path, exc.message))
            except (KeyError, TypeError) as exc:
                problems.append(Unreadable(path, f"park file {path} is corrupt (missing {exc})"))
        for leftover in self._leftovers():
            problems.append(
                Unreadable(
                    leftover,
                    f"{leftover} is an unfinished write left by a process that stopped; "
                    "the park file beside it (if any) holds the last complete state",
                )
            )
        summaries.sort(key=lambda s: (s.created_at, s.id))
        return summaries, problems

    def _leftovers(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        with os.scandir(self.dir) as it:
            return sorted(self.dir / e.name for e in it if _TEMP_RE.match(e.name))

    # -- writing ---------------------------------------------------------------------------
    def save(self, state: ParkState, *, durable: bool = True) -> None:
        """Write the whole state atomically, MAC included (one transition); ``durable``:
        fsynced before this returns (a decided round's later writes are not: ``store/boot.py``)."""
        key = self.key(create=True)
        assert key is not None
        ensure_private_dir(self.dir)
        path = self.active_path(state.id)
        fresh = not path.exists()
        hook = (lambda: crash_point("park-before-rename")) if fresh else None
        write_atomic(path, encode_park(key, state), before_rename=hook, durable=durable)

    def retire(self, park_id: str) -> None:
        """Move a resolved park out of the active folder: one rename, not fsynced.

        A crash before the rename — or a power cut that loses it — leaves a resolved park in
        the active folder, where it stays (`pending` skips it by its status; a resume refuses
        it): nothing depends on the move being durable."""
        ensure_private_dir(self.done_dir)
        try:
            os.replace(self.active_path(park_id), self.done_path(park_id))
        except OSError as exc:
            raise StorageError(
                f"cannot move finished park {park_id} to {self.done_dir}: "
                f"{exc.strerror or exc} (it is finished and stays where it is)"
            ) from exc

    @contextmanager
    def lock(self, park_id: str) -> Iterator[None]:
        """Exclusive, non-blocking: a held lock means someone is resuming it now (exit 5)."""
        ensure_private_dir(self.dir)
        lock_path = self.dir / f"{park_id}.lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        except OSError as exc:
            what = "is a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            raise ParkError(
                f"the lock file {lock_path} {what}; it was left as it is and nothing was decided"
            ) from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ParkError(
                f"the lock file {lock_path} is not a regular file; it was left as it is and "
                "nothing was decided"
            )
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise ParkError(
                    f"park {park_id} is being resumed by another process right now", kind=DECIDED
                ) from exc
            yield
            if not os.path.lexists(self.active_path(park_id)):
                # Finished and retired: the lock goes too, or `parks/` would keep one per
                # park ever decided. Safe while held: whoever opens the path next gets a new
                # file, locks it, and finds the park finished (and in the ledger).
                with contextlib.suppress(OSError):
                    os.unlink(lock_path)
        finally:
            os.close(fd)


def _verified_body(data: bytes, key: bytes, path: Path) -> bytes:
    start = len(_HEAD) + _MAC_LEN
    if not (
        data.startswith(_HEAD) and data[start : start + len(_MID)] == _MID and data.endswith(_TAIL)
    ):
        raise ParkError(f"park file {path} is corrupt (not a butler park file)")
    mac = data[len(_HEAD) : start].decode("ascii", "replace")
    body = data[start + len(_MID) : -len(_TAIL)]
    if not verify(key, body, mac):
        raise ParkError(
            f"park file {path} failed its authenticity check (edited, or made with another key)",
            kind=TAMPERED,
        )
    return body
