"""The Matrix client: connects out to the homeserver, announces parks, takes decisions, chats.

One asyncio loop on a thread of `butler serve`. Two tasks share the client:

- **sync**: reads the room from the last token processed (``state.since``), once and in order.
  Every event is checked before it counts: its sender must be the configured person, exactly
  (the id, never a display name; anyone else's message is ignored and audited); edits
  (``m.replace``) and redactions never decide; an event already acted on is skipped
  (``state.taken``). A reply or reaction to a park's card is a decision for that park, bound to
  the content the card showed (its digest), and goes through the inbox's one door — so a
  second decision, from here or anywhere, is refused by the ledger. Any other message is a
  chat turn. The token is kept after each batch; a batch the server cut short (``limited``)
  is read back page by page first, so nothing said while the butler was away is lost.
- **announce**: every second, each pending park without a card gets one (sent with a
  transaction id made of its id and digest: a send retried after a lost answer is not
  doubled), recorded before the next look; a card whose park was decided elsewhere is told so
  once. A restart announces only what was never announced.

A homeserver that cannot be reached is said once and retried; nothing decided is lost, since
the room and the parks are the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from nio import (
    AsyncClient,
    AsyncClientConfig,
    JoinError,
    MessageDirection,
    RoomMessagesResponse,
    RoomSendResponse,
    SyncError,
    SyncResponse,
)

from butler_cli.app.chat.room_state import (
    Announced,
    ChannelState,
    dump_state,
    load_state,
    record_ignored,
    write_state,
)
from butler_cli.app.parks.decisions import load_park
from butler_cli.app.parks.door import Answer
from butler_cli.app.parks.parks import pending_approval, waiting_parks
from butler_cli.core.errors import ButlerError
from butler_cli.serve.decide import Told
from butler_cli.serve.matrix.card import Content, answer, digest, park_card
from butler_cli.serve.matrix.chat import RoomChat
from butler_cli.serve.matrix.settings import MatrixSettings
from butler_cli.serve.matrix.words import Read, read_reaction, read_reply, reply_text
from butler_cli.ui.text import visible

#: How a decision goes in: the inbox's ``Decider.submit``, its call into the one door
#: (``app/parks/door.decide``), so the outcome is kept and shown as the inbox's are.
Door = Callable[[str, Answer], Told]
#: How long a sync waits on the server for something new (ms), and the announcer's beat (s).
POLL_MS = 5000
BEAT = 0.5
#: Pages read back when the server cut a batch short.
BACKFILL_PAGES = 20


@dataclass(frozen=True)
class _Ev:
    """The fields of an event the channel reads (from its raw JSON: nothing parsed is trusted
    beyond what is checked here)."""

    id: str
    sender: str
    type: str
    content: dict[str, Any]

    @classmethod
    def of(cls, source: Any) -> _Ev | None:
        if not isinstance(source, dict):
            return None
        content = source.get("content")
        fields = (source.get("event_id"), source.get("sender"), source.get("type"))
        if not all(isinstance(f, str) for f in fields) or not isinstance(content, dict):
            return None
        return cls(str(fields[0]), str(fields[1]), str(fields[2]), content)

    @property
    def relation(self) -> dict[str, Any]:
        rel = self.content.get("m.relates_to")
        return rel if isinstance(rel, dict) else {}


class Channel:
    """The butler in one room, for one person."""

    def __init__(
        self, settings: MatrixSettings, home: Path, door: Door, say: Callable[[str], None]
    ) -> None:
        self.settings = settings
        self.home = home
        self.door = door
        self.say = say
        self.state: ChannelState = load_state(home)  # a bad file: one line, before anything
        self.chat = RoomChat(settings.folder, self.state.conversation, self._conversation)
        self._chat_thread = ThreadPoolExecutor(1, thread_name_prefix="matrix-chat")
        self._turns: set[asyncio.Task[None]] = set()
        self._chat_lock: asyncio.Lock | None = None
        self._down = False

    # -- the thread ---------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Serve the room until ``stop`` is set; turns in flight finish first."""
        try:
            asyncio.run(self._main(stop))
        finally:
            self._chat_thread.shutdown(wait=True)
            self.chat.close()

    async def _main(self, stop: threading.Event) -> None:
        s = self.settings
        config = AsyncClientConfig(
            max_timeouts=1, max_timeout_retry_wait_time=1, request_timeout=POLL_MS / 1000 + 20
        )
        self.client = AsyncClient(s.homeserver, s.user, config=config)
        self.client.access_token = s.token
        self.client.user_id = s.user
        self._chat_lock = asyncio.Lock()
        stopping = asyncio.ensure_future(asyncio.to_thread(stop.wait))
        work = [asyncio.ensure_future(self._syncing()), asyncio.ensure_future(self._announcing())]
        try:
            await asyncio.wait([stopping, *work], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in work:
                task.cancel()
            for task in work:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self._turns:
                await asyncio.gather(*self._turns, return_exceptions=True)
            await self.client.close()
            stop.set()
            await stopping

    async def _retrying(self, step: Callable[[], Any], what: str) -> None:
        """Run ``step`` until it succeeds once; a homeserver that cannot be reached (or that
        refuses) is said once per outage, and retried with a growing wait."""
        wait = 0.5
        while True:
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except (aiohttp.ClientError, OSError, TimeoutError, _Refused) as exc:
                if not self._down:
                    self._down = True
                    self.say(f"matrix: {what} failed ({_why(exc)}); retrying")
            except ButlerError as exc:
                self.say(f"matrix: {exc.message}")
            except Exception as exc:  # a bug or an event no one foresaw: said, the room goes on
                # (the event that raised is already taken: the retry does not meet it again)
                self.say(f"matrix: {what} failed: {type(exc).__name__}: {_why(exc)}; retrying")
            else:
                if self._down:
                    self._down = False
                    self.say(f"matrix: {self.settings.homeserver} reached again")
                return
            await asyncio.sleep(wait)
            wait = min(wait * 2, 4)

    # -- reading the room ---------------------------------------------------------------
    async def _syncing(self) -> None:
        await self._retrying(self._join, "joining the room")
        if self.state.since is None:  # the first start: what was said before does not count
            await self._retrying(self._sync_once, "sync")
        self.say(f"matrix: listening in {self.settings.room} as {self.settings.user}")
        while True:
            await self._retrying(self._sync_once, "sync")

    async def _join(self) -> None:
        joined = await self.client.join(self.settings.room)
        if isinstance(joined, JoinError):
            raise _Refused(f"cannot join {self.settings.room}: {joined.message}")

    async def _sync_once(self) -> None:
        room = self.settings.room
        filt = {
            "room": {
                "rooms": [room],
                "timeline": {"limit": 50},
                "state": {"lazy_load_members": True, "types": []},
                "ephemeral": {"types": []},
                "account_data": {"types": []},
            },
            "presence": {"types": []},
            "account_data": {"types": []},
        }
        first = self.state.since is None
        got = await self.client.sync(
            timeout=0 if first else POLL_MS, sync_filter=filt, since=self.state.since
        )
        if isinstance(got, SyncError):
            raise _Refused(f"{got.status_code or ''} {got.message}".strip())
        assert isinstance(got, SyncResponse)
        if not first:  # the first sync only marks where the butler starts listening
            joined = got.rooms.join.get(room)
            if joined is not None:
                events = [_Ev.of(e.source) for e in joined.timeline.events]
                if joined.timeline.limited and joined.timeline.prev_batch:
                    gap = await self._read_back(joined.timeline.prev_batch, self.state.since)
                    events = [*gap, *events]
                for ev in events:
                    if ev is not None:
                        await self._event(ev)
        self.state.since = got.next_batch
        await self._save()

    async def _read_back(self, token: str, since: str | None) -> list[_Ev | None]:
        """The events a cut-short batch left out, oldest first: back to the last token read
        (``since``), or to the first event already acted on."""
        found: list[_Ev | None] = []
        for _ in range(BACKFILL_PAGES):
            page = await self.client.room_messages(
                self.settings.room, token, since, direction=MessageDirection.back, limit=100
            )
            if not isinstance(page, RoomMessagesResponse):
                raise _Refused(f"reading the room's history: {page.message}")
            events = [_Ev.of(e.source) for e in page.chunk]
            known = next((i for i, e in enumerate(events) if e and e.id in self.state.taken), None)
            found.extend(events if known is None else events[:known])
            if known is not None or not page.end or not page.chunk:
                break
            token = page.end
        return list(reversed(found))

    async def _event(self, ev: _Ev) -> None:
        s = self.settings
        if ev.sender == s.user or ev.type not in ("m.room.message", "m.reaction"):
            return  # its own messages; state, redactions and the rest decide nothing
        if not self.state.take(ev.id):
            return  # delivered again: acted on (or audited) already
        if ev.sender != s.person:
            self._ignored(ev, "not the configured person")
            return
        rel = ev.relation
        if rel.get("rel_type") == "m.replace" or "m.new_content" in ev.content:
            self._ignored(ev, "an edit decides nothing")
            return
        if ev.type == "m.reaction":
            if rel.get("rel_type") == "m.annotation" and isinstance(rel.get("key"), str):
                key = str(rel["key"])
                await self._answer(str(rel.get("event_id")), ev, lambda ids: read_reaction(key))
            return
        body = ev.content.get("body")
        if ev.content.get("msgtype") != "m.text" or not isinstance(body, str):
            return
        target = _answered(rel)
        card = self.state.park_of(target) if target else None
        if card is not None and target is not None:
            words = reply_text(body)
            await self._answer(target, ev, lambda ids: read_reply(words, ids))
        elif body.strip():
            self._start_turn(ev, body)

    def _ignored(self, ev: _Ev, why: str) -> None:
        text = f"{why}: {visible(ev.sender)} {visible(ev.type)} {visible(ev.id)}"
        record_ignored(self.home, "matrix", text)

    # -- decisions ----------------------------------------------------------------------
    async def _answer(self, target: str, ev: _Ev, reading: Callable[[list[str]], Read]) -> None:
        """A reply or reaction to a card: the decision (``reading`` the words for the round's
        call ids), through the one door, bound to the content the card showed."""
        found = self.state.park_of(target)
        if found is None:
            return  # a reaction to something else
        park_id, card = found
        ids, now = await asyncio.to_thread(_park_now, self.home, park_id)
        read = reading(ids)
        if read.answer is None:
            if read.problem:
                await self._post(ev.id, [Content(f"park {park_id}: {read.problem}")])
            return
        if now is not None and now != card.digest:
            told = (
                f"park {park_id}: its content is not what that card showed (content "
                f"{card.digest[:12]}, now {now[:12]}); nothing was decided"
            )
        else:
            said = await asyncio.to_thread(self.door, park_id, read.answer)
            told = said.message
        await self._post(ev.id, [Content(visible(told))])

    # -- chat turns ---------------------------------------------------------------------
    def _start_turn(self, ev: _Ev, text: str) -> None:
        task = asyncio.ensure_future(self._turn(ev, text))
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)

    async def _turn(self, ev: _Ev, text: str) -> None:
        assert self._chat_lock is not None
        async with self._chat_lock:
            loop = asyncio.get_running_loop()
            try:
                report = await loop.run_in_executor(self._chat_thread, self.chat.turn, text)
            except ButlerError as exc:
                await self._post(ev.id, [Content(visible(exc.message))])
                return
            except Exception as exc:  # the channel stays up
                await self._post(ev.id, [Content(visible(f"the turn failed: {exc}"))])
                return
        if report.status == "parked":
            told = [Content(f"parked — waiting for your decision on park {report.park_id}")]
        elif report.status == "failed":
            told = [Content(visible(f"failed: {report.error}"))]
        else:
            told = answer(report.text)
        await self._post(ev.id, told)

    async def _save(self) -> None:
        await asyncio.to_thread(write_state, self.home, dump_state(self.state))

    def _conversation(self, cid: str) -> None:
        self.state.conversation = cid  # saved with the next batch or announcement

    # -- announcing ---------------------------------------------------------------------
    async def _announcing(self) -> None:
        while True:
            await self._retrying(self._announce, "announcing parks")
            await asyncio.sleep(BEAT)

    async def _announce(self) -> None:
        summaries, _ = await asyncio.to_thread(waiting_parks, self.home)
        pending = [s.id for s in summaries]
        for park_id in pending:
            if park_id in self.state.announced:
                continue
            made = await asyncio.to_thread(_card, self.home, park_id)
            if made is None:
                continue
            full, parts = made
            events = []
            for n, part in enumerate(parts):
                tx = f"butler-park-{park_id}-{full[:16]}-{n}"
                events.append(await self._send(part.event(), tx))
            self.state.announced[park_id] = Announced(events, full)
            await self._save()
        for park_id, card in list(self.state.announced.items()):
            if card.closed or park_id in pending:
                continue
            word = await asyncio.to_thread(_outcome, self.home, park_id)
            await self._post(card.events[0], [Content(f"park {park_id}: {word}")], "closed")
            card.closed = True
            await self._save()

    # -- sending ------------------------------------------------------------------------
    async def _send(self, content: dict[str, Any], tx: str) -> str:
        sent = await self.client.room_send(self.settings.room, "m.room.message", content, tx)
        if not isinstance(sent, RoomSendResponse):
            raise _Refused(f"sending to the room: {getattr(sent, 'message', sent)}")
        return str(sent.event_id)

    async def _post(self, to: str, parts: list[Content], kind: str = "re") -> None:
        """Reply to event ``to``: retried (with the same transaction ids, so never doubled)
        until the homeserver takes it or the channel stops."""
        for n, part in enumerate(parts):
            content = part.event(**{"m.relates_to": {"m.in_reply_to": {"event_id": to}}})
            tx = f"butler-{kind}-{to}-{n}"

            async def send(c: dict[str, Any] = content, t: str = tx) -> None:
                await self._send(c, t)

            await self._retrying(send, "sending")


class _Refused(Exception):
    """The homeserver answered, but not as hoped (a refused token, a room not joined)."""


def _why(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _answered(rel: dict[str, Any]) -> str | None:
    """The event a message answers: the one it replies to, or its thread's root."""
    reply = rel.get("m.in_reply_to")
    if rel.get("rel_type") == "m.thread" and isinstance(rel.get("event_id"), str):
        return str(rel["event_id"])
    if isinstance(reply, dict) and isinstance(reply.get("event_id"), str):
        return str(reply["event_id"])
    return None


def _park_now(home: Path, park_id: str) -> tuple[list[str], str | None]:
    """The park's asked call ids and its digest now, read once (none, None: it cannot be
    read — the door then says why)."""
    try:
        state = load_park(park_id, home)
    except ButlerError:
        return [], None
    return [a.call_id for a in state.approvals], digest(state)


def _card(home: Path, park_id: str) -> tuple[str, list[Content]] | None:
    """A pending park's digest and card (None: it cannot be read or no longer waits)."""
    try:
        state = load_park(park_id, home)
    except ButlerError:
        return None
    if state.status != "pending":
        return None
    full = digest(state)
    return full, park_card(pending_approval(state), full[:12])


def _outcome(home: Path, park_id: str) -> str:
    """What became of a park that no longer waits, in a few words."""
    try:
        state = load_park(park_id, home)
    except ButlerError:
        return "no longer waiting"
    if state.decision is None:
        return "no longer waiting"
    word = "approved" if state.decision.approved else "denied"
    return f"{word}, no longer waiting"
