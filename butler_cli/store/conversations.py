"""Conversations you can find again: every chat and every `run` task, in one SQLite file.

``$BUTLER_HOME/conversations.db`` (0600, WAL, named append-only migrations like memory's).
A conversation keeps its messages as the same JSON a park carries, the model, policy, folder,
profile, times and token usage. A turn that parks is linked to its park (with the number of
messages before it); when the park is decided, wherever that happens, its outcome is appended
and the link records the decision.

Ids are ``c-`` and six characters of the park alphabet (``c-k3m9xq``): a park id never has a
dash, so the two never clash. Stdlib only (no pydantic): messages come and go as plain JSON.
Reading commands on a fresh home read an empty in-memory database and create nothing; a
listing reads one index, so thousands of conversations open as fast as none.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from butler_cli.core.errors import UsageError
from butler_cli.memory.search import INDEX_TOKENIZER, every_term, index_terms
from butler_cli.store.ids import random_string
from butler_cli.store.sqlite import LazyDatabase, Migrations

DB_FILE = "conversations.db"
PREFIX = "c-"
ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # the park alphabet: no 0/o, 1/l/i
ID_LENGTH = 6
_ID_RE = re.compile(rf"^{PREFIX}[{ID_ALPHABET}]{{1,{ID_LENGTH}}}$")


def _stemmed_index(db: sqlite3.Connection) -> None:
    """0002: the index rebuilt stemmed (like memory's) from every conversation's title and
    messages: a file made before it is re-indexed on first open, no row lost."""
    db.execute("DROP TABLE conversations_fts")
    db.execute(
        f"CREATE VIRTUAL TABLE conversations_fts USING fts5 (terms, tokenize = '{INDEX_TOKENIZER}')"
    )
    db.executemany(
        "INSERT INTO conversations_fts (rowid, terms) VALUES (?, ?)",
        (
            (rowid, index_terms(title + "\n" + message_text(json.loads(messages))))
            for rowid, title, messages in db.execute(
                "SELECT rowid, title, messages FROM conversations"
            ).fetchall()
        ),
    )


#: Named, append-only: a migration is never edited once shipped; new ones go at the end.
MIGRATIONS: Migrations = [
    (
        "0001_conversations",
        """
        CREATE TABLE conversations (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            model TEXT NOT NULL,
            policy TEXT NOT NULL,
            cwd TEXT NOT NULL,
            profile TEXT NOT NULL,
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            status TEXT NOT NULL,
            park TEXT,
            messages TEXT NOT NULL,
            turns INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX conversations_recent ON conversations (updated DESC, rowid DESC);
        CREATE INDEX conversations_folder ON conversations (cwd, updated DESC, rowid DESC);
        CREATE TABLE park_links (
            park TEXT PRIMARY KEY,
            conversation TEXT NOT NULL,
            base INTEGER NOT NULL,
            decision TEXT,
            outcome TEXT,
            decided TEXT
        );
        CREATE INDEX park_links_conversation ON park_links (conversation);
        CREATE VIRTUAL TABLE conversations_fts
            USING fts5 (terms, tokenize = 'unicode61 remove_diacritics 2');
        """,
    ),
    ("0002_stemmed_index", _stemmed_index),
]

_SUMMARY = (
    "id, kind, title, model, policy, cwd, profile, created, updated, status, park, turns, "
    "tokens_in, tokens_out"
)


class UnknownConversation(UsageError):
    """No conversation with that id."""

    code = "conversation_not_found"


@dataclass(frozen=True)
class Summary:
    """One conversation as a listing shows it (no messages)."""

    id: str
    kind: str
    title: str
    model: str
    policy: str
    cwd: str
    profile: str
    created: str
    updated: str
    status: str
    park: str | None
    turns: int
    tokens_in: int
    tokens_out: int

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ParkLink:
    park: str
    base: int
    decision: str | None
    outcome: str | None


@dataclass(frozen=True)
class Record:
    """One conversation whole: its summary, its messages (park JSON), its parks."""

    summary: Summary
    messages: list[dict[str, Any]]
    parks: list[ParkLink]


def now_ts() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def message_text(messages: Sequence[dict[str, Any]]) -> str:
    """The words of a conversation, for the full-text index: what was said, the tools called
    with their arguments, and what they returned."""
    parts: list[str] = []
    for message in messages:
        for block in message.get("content") or []:
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                parts.append(str(block.get("name", "")))
                parts.append(json.dumps(block.get("input", {}), ensure_ascii=False))
            elif block.get("type") == "tool_result":
                parts.append(str(block.get("content", "")))
    return "\n".join(parts)


class ConversationStore:
    """The conversation database: opened on first use, created on the first write."""

    def __init__(self, home: Path) -> None:
        self.path = home / DB_FILE
        self._file = LazyDatabase(self.path, MIGRATIONS, now_ts, "conversation database")

    # -- connection ------------------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        """The file, created 0600 (with the home) on first use: for writes."""
        return self._file.db

    @property
    def reader(self) -> sqlite3.Connection:
        """For a read: before the file exists, an empty in-memory one (nothing is created)."""
        return self._file.reader

    def close(self) -> None:
        self._file.close()

    # -- writes ----------------------------------------------------------------------------
    def start(self, kind: str, title: str, meta: dict[str, str]) -> str:
        """A new, empty conversation; its id. ``meta``: model, policy, cwd, profile."""
        ts = now_ts()
        fields = [meta.get(k, "") for k in ("model", "policy", "cwd", "profile")]
        while True:
            cid = PREFIX + random_string(ID_ALPHABET, ID_LENGTH)
            try:
                self.db.execute(
                    "INSERT INTO conversations (id, kind, title, model, policy, cwd, profile, "
                    "created, updated, status, messages) VALUES (?,?,?,?,?,?,?,?,?,?,'[]')",
                    (cid, kind, title, *fields, ts, ts, "running"),
                )
                return cid
            except sqlite3.IntegrityError:
                continue  # that id is taken: draw another

    def add_tokens(self, cid: str, tokens: tuple[int, int]) -> None:
        """Tokens of model calls made between turns (a compaction, a consolidation)."""
        with self.db:
            self.db.execute(
                "UPDATE conversations SET tokens_in=tokens_in+?, tokens_out=tokens_out+?, "
                "updated=? WHERE id=?",
                (*tokens, now_ts(), cid),
            )

    def append(
        self,
        cid: str,
        new: Sequence[dict[str, Any]],
        status: str,
        tokens: tuple[int, int] = (0, 0),
        park: str | None = None,
        base: int | None = None,
    ) -> None:
        """A turn ended: its new messages join, its status and usage are kept. A turn that
        parked adds no messages; its park is linked (``base``: messages sent before it)."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT rowid, title, messages FROM conversations WHERE id=?", (cid,)
            ).fetchone()
            if row is None:
                db.execute("ROLLBACK")
                return
            messages = json.loads(row[2]) + list(new)
            db.execute(
                "UPDATE conversations SET messages=?, status=?, park=?, updated=?, "
                "turns=turns+?, tokens_in=tokens_in+?, tokens_out=tokens_out+? WHERE id=?",
                (
                    json.dumps(messages, ensure_ascii=False),
                    status,
                    park,
                    now_ts(),
                    1 if new and status != "parked" else 0,
                    *tokens,
                    cid,
                ),
            )
            if park is not None:
                db.execute(
                    "INSERT OR IGNORE INTO park_links (park, conversation, base) VALUES (?,?,?)",
                    (park, cid, base if base is not None else len(messages)),
                )
            _reindex(db, row[0], row[1], messages)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def drop_last(self, cid: str, count: int) -> None:
        """Take the last ``count`` messages out of a conversation (a turn taken back, `/undo`),
        one turn fewer, its search terms made again."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT rowid, title, messages FROM conversations WHERE id=?", (cid,)
            ).fetchone()
            if row is None or count <= 0:
                db.execute("ROLLBACK")
                return
            messages = json.loads(row[2])[:-count]
            db.execute(
                "UPDATE conversations SET messages=?, updated=?, turns=max(turns-1, 0) WHERE id=?",
                (json.dumps(messages, ensure_ascii=False), now_ts(), cid),
            )
            _reindex(db, row[0], row[1], messages)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def park_decided(
        self,
        park_id: str,
        approved: bool,
        status: str,
        messages: Sequence[dict[str, Any]],
        tokens: tuple[int, int] = (0, 0),
        new_park: str | None = None,
    ) -> str | None:
        """A linked park was decided and its task went on: its outcome (``messages``: the
        whole conversation the resume ended with) joins its conversation; the conversation's
        id, or None for a park no conversation knows (made before there were any)."""
        if not self.path.exists():
            return None
        link = self.db.execute(
            "SELECT conversation, base FROM park_links WHERE park=?", (park_id,)
        ).fetchone()
        if link is None:
            return None
        cid, base = link
        self.db.execute(
            "UPDATE park_links SET decision=?, outcome=?, decided=? WHERE park=?",
            ("approved" if approved else "denied", status, now_ts(), park_id),
        )
        new = [] if status in ("parked", "failed") else list(messages)[base:]
        self.append(cid, new, status, tokens, park=new_park, base=base)
        return str(cid)

    # -- reads -----------------------------------------------------------------------------
    def recent(
        self, limit: int = 20, query: str | None = None, cwd: str | None = None
    ) -> list[Summary]:
        """The latest conversations first; ``query``: only those holding every telling word
        of it (stop words out, stemmed, CJK-aware, like memory recall); ``cwd``: only this
        folder's."""
        where: list[str] = []
        args: list[str] = []
        if cwd is not None:
            where.append("cwd=?")
            args.append(cwd)
        if query is not None:
            match = every_term(query)
            if match is None:
                return []
            where.append("rowid IN (SELECT rowid FROM conversations_fts WHERE terms MATCH ?)")
            args.append(match)
        sql = f"SELECT {_SUMMARY} FROM conversations"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated DESC, rowid DESC LIMIT ?"
        return [Summary(*row) for row in self.reader.execute(sql, (*args, limit))]

    def resolve(self, given: str) -> str:
        """A full id or a unique prefix of one (``c-k3``) → the id."""
        given = given.strip().lower()
        if not _ID_RE.match(given):
            raise UnknownConversation(
                f"'{given}' is not a conversation id (they look like 'c-k3m9xq'; "
                "`butler log` lists them)"
            )
        rows = self.reader.execute(
            "SELECT id FROM conversations WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
            (given, given + "\U0010ffff"),
        ).fetchall()
        ids = [r[0] for r in rows]
        if given in ids:
            return given
        if not ids:
            raise UnknownConversation(f"no conversation with id '{given}' (see `butler log`)")
        if len(ids) > 1:
            raise UsageError(f"'{given}' matches several conversations: {', '.join(ids)}")
        return str(ids[0])

    def load(self, given: str) -> Record:
        cid = self.resolve(given)
        db = self.reader
        row = db.execute(
            f"SELECT {_SUMMARY}, messages FROM conversations WHERE id=?", (cid,)
        ).fetchone()
        links = db.execute(
            "SELECT park, base, decision, outcome FROM park_links WHERE conversation=? "
            "ORDER BY rowid",
            (cid,),
        ).fetchall()
        return Record(Summary(*row[:-1]), json.loads(row[-1]), [ParkLink(*r) for r in links])

    def of_park(self, park_id: str) -> str | None:
        """The conversation a park belongs to, if any (a read: creates nothing). A database
        that cannot be read answers None: deciding a park never waits on it."""
        try:
            row = self.reader.execute(
                "SELECT conversation FROM park_links WHERE park=?", (park_id,)
            ).fetchone()
        except (sqlite3.Error, UsageError):
            return None
        return str(row[0]) if row else None


def _reindex(db: sqlite3.Connection, rowid: int, title: str, messages: list[Any]) -> None:
    """A conversation's search terms made again from its title and messages."""
    db.execute("DELETE FROM conversations_fts WHERE rowid=?", (rowid,))
    terms = index_terms(title + "\n" + message_text(messages))
    db.execute("INSERT INTO conversations_fts (rowid, terms) VALUES (?,?)", (rowid, terms))
