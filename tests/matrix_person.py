"""The person (and the stranger) in the room: a real Matrix client (matrix-nio), driven
synchronously from a test, on an event loop of its own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nio import (
    AsyncClient,
    JoinResponse,
    LoginResponse,
    RoomCreateResponse,
    RoomSendResponse,
    SyncResponse,
)

T = TypeVar("T")


@dataclass
class Seen:
    """An event of the room, as read by the person's client."""

    id: str
    sender: str
    type: str
    content: dict[str, Any]

    @property
    def body(self) -> str:
        return str(self.content.get("body", ""))

    @property
    def replying_to(self) -> str | None:
        rel = self.content.get("m.relates_to") or {}
        return (rel.get("m.in_reply_to") or {}).get("event_id")


@dataclass
class Person:
    url: str
    user: str
    password: str
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    seen: list[Seen] = field(default_factory=list)
    since: str | None = None

    def __post_init__(self) -> None:
        self.client = AsyncClient(self.url, self.user)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def login(self) -> str:
        got = self._run(self.client.login(self.password, device_name="test"))
        assert isinstance(got, LoginResponse), got
        return str(got.access_token)

    def create_room(self, invite: list[str]) -> str:
        got = self._run(self.client.room_create(invite=invite, name="butler"))
        assert isinstance(got, RoomCreateResponse), got
        return str(got.room_id)

    def join(self, room: str) -> None:
        got = self._run(self.client.join(room))
        assert isinstance(got, JoinResponse), got

    def send(self, room: str, content: dict[str, Any]) -> str:
        got = self._run(self.client.room_send(room, "m.room.message", content))
        assert isinstance(got, RoomSendResponse), got
        return str(got.event_id)

    def say(self, room: str, text: str, reply_to: str | None = None) -> str:
        content: dict[str, Any] = {"msgtype": "m.text", "body": text}
        if reply_to:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
        return self.send(room, content)

    def react(self, room: str, event_id: str, key: str) -> str:
        content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}
        got = self._run(self.client.room_send(room, "m.reaction", content))
        assert isinstance(got, RoomSendResponse), got
        return str(got.event_id)

    def edit(self, room: str, event_id: str, text: str, reply_to: str | None = None) -> str:
        new: dict[str, Any] = {"msgtype": "m.text", "body": text}
        content: dict[str, Any] = {
            "msgtype": "m.text",
            "body": f"* {text}",
            "m.new_content": new,
            "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
        }
        if reply_to:
            content["m.relates_to"]["m.in_reply_to"] = {"event_id": reply_to}
        return self.send(room, content)

    def sync(self, timeout_ms: int = 1000) -> None:
        got = self._run(self.client.sync(timeout=timeout_ms, since=self.since))
        assert isinstance(got, SyncResponse), got
        self.since = got.next_batch
        for room in got.rooms.join.values():
            for ev in room.timeline.events:
                src = ev.source
                self.seen.append(
                    Seen(src["event_id"], src["sender"], src["type"], src.get("content", {}))
                )

    def wait_for(self, check: Callable[[Seen], bool], timeout: float = 60) -> Seen:
        """The first event (seen before or arriving now) that passes ``check``."""
        deadline = time.monotonic() + timeout
        while True:
            found = next((s for s in self.seen if check(s)), None)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                bodies = [f"{s.sender}: {s.body[:80]}" for s in self.seen[-15:]]
                raise AssertionError(f"not seen within {timeout} s; last: {bodies}")
            self.sync()

    def from_user(self, user: str) -> list[Seen]:
        return [s for s in self.seen if s.sender == user and s.type == "m.room.message"]

    def close(self) -> None:
        self._run(self.client.close())
        self.loop.close()
