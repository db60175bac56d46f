"""How recall ranks one profile's memories for a query (spec Q1–Q3; docs/memory.md#recall).

A score is bm25 over the stemmed index (lower is better), with the memory's date as a second
column, fused with these signals measured on the LoCoMo tuning half (bench/bench_recall.py):

- **coverage**: a memory holding more of the query's words is worth more than one repeating
  a single word (the score grows by COVER_WEIGHT × the share of the telling words it holds);
- **neighbours**: memories stored one after the other (the turns of one conversation, the
  facts of one consolidation) share their subject, so a memory takes part of the score of
  the memories stored just before and after it;
- **expansion**: the words the best few matches share, weighted by how rare they are, are
  searched too, at EXPAND_WEIGHT: "When did Caroline go to the support group?" also finds
  the turn that says "the LGBTQ group" without the question's words.
- **who**: a memory that begins with a person the question names ("Caroline: …", the
  turn she said; "Caroline adopted …", a fact about her) is worth NAME_WEIGHT more than the
  same words in a memory that only mentions her.

Every match of the query's telling words is scored; see :meth:`Ranker.scored` for what a
query of only very common words does (it stays fast on 100,000 memories).
"""

from __future__ import annotations

import heapq
import math
import re
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from butler_cli.memory.search import STOP_WORDS, query_terms, quote_term

#: How many of the best matches are fused and re-ranked.
CANDIDATES = 400
#: Scoring costs about a microsecond a memory: a query's telling words are taken, rarest
#: first, while the memories holding them stay within this many, and every one is scored.
SCORED_BUDGET = 3000
#: A word in more memories than this is common: too common to tell memories apart, and
#: costly to weigh (bm25 walks every memory holding it).
COMMON_TERM_DOCS = 1000
#: A query made only of common words ranks this many of their newest matches.
COMMON_WINDOW = 1000
#: The date column's weight beside the text's (1.0) in bm25.
DATE_WEIGHT = 1.0
COVER_WEIGHT = 2.0
#: How much more a memory that begins with a name the question holds is worth.
NAME_WEIGHT = 0.5
VARIANT_WEIGHT = 0.5
#: Shares of the score of the memories stored 1 and 2 places before and after.
NEIGHBOUR_WEIGHTS = (0.3, 0.1)
EXPAND_FROM = 2
EXPAND_TERMS = 5
EXPAND_WEIGHT = 0.3
#: An expansion word's rarity is counted up to this many memories (a cheap bound).
EXPAND_COUNT_CAP = 500
#: The expansion words together are held by at most this many memories: bm25 costs about two
#: microseconds a memory, and on a large store five words each in 400 memories would cost
#: more than the query itself.
EXPAND_BUDGET = 1000

Scores = dict[int, float]
#: (SQL head, arguments) that select ``e.rowid`` of this profile's memories the filters allow,
#: given a FROM clause joined to ``entries e``; None when the index alone can be read.
Filter = Callable[[str, str], tuple[str, list[Any]]] | None


_NAME = re.compile(r"\b[A-Z][a-z]+")


def names_in(query: str) -> list[str]:
    """The query's names: capitalised words past its first (lower-cased, stop words out)."""
    found = [m.group().lower() for m in _NAME.finditer(query) if m.start() > 0]
    return [w for w in dict.fromkeys(found) if w not in STOP_WORDS]


def _any(terms: Sequence[str]) -> str:
    return " OR ".join(quote_term(t) for t in terms)


def best(scores: Scores, n: int) -> Scores:
    return dict(heapq.nsmallest(n, scores.items(), key=lambda it: it[1]))


def with_neighbours(scores: Scores) -> Scores:
    """Each memory lifted by shares of how much better the memories stored next to it match.
    Only a better neighbour lifts, and never past itself: a run of equal matches lifts none of
    them, so a lone better match is not outranked by a crowd."""
    out: Scores = {}
    for rowid, score in scores.items():
        lifted = score
        for distance, weight in enumerate(NEIGHBOUR_WEIGHTS, start=1):
            for near in (rowid - distance, rowid + distance):
                other = scores.get(near)
                if other is not None and other < score:
                    lifted += weight * (other - score)
        out[rowid] = lifted
    return out


def expansion_words(texts: Sequence[str], query: Sequence[str]) -> dict[str, int]:
    """The words of the best matches that the query does not hold: word → in how many."""
    seen = set(query)
    freq: dict[str, int] = {}
    for text in texts:
        for word in set(query_terms(text)):
            if word not in seen and word not in STOP_WORDS and len(word) > 2 and word.isalpha():
                freq[word] = freq.get(word, 0) + 1
    return freq


class Ranker:
    """One recall's SQL over ``entries_fts`` (and ``entries`` when filters apply)."""

    def __init__(self, db: sqlite3.Connection, where: Filter, total: int) -> None:
        self.db = db
        self.where = where
        self.total = max(1, total)

    def rank(
        self,
        terms: list[str],
        texts: Callable[[list[int]], dict[int, str]],
        names: Sequence[str] = (),
        forms: Sequence[str] = (),
    ) -> Scores:
        """The CANDIDATES best memories for ``terms``: rowid → fused score (lower is better).
        ``texts`` reads the given memories' texts (for expansion)."""
        counts = self.counts(terms, COMMON_TERM_DOCS + 1)
        scores = self.scored(terms, counts)
        if forms and VARIANT_WEIGHT:
            more = self.scored(list(forms), self.counts(list(forms), COMMON_TERM_DOCS + 1))
            for r, s in more.items():
                scores[r] = scores.get(r, 0.0) + VARIANT_WEIGHT * s
        if not scores:
            return {}
        present = [t for t in terms if 0 < counts[t] <= COMMON_TERM_DOCS]
        if COVER_WEIGHT and len(present) > 1:
            held = self.held(present, list(scores))
            scores = {
                r: s * (1 + COVER_WEIGHT * held.get(r, 0) / len(present)) for r, s in scores.items()
            }
        named = [t for t in names if t in present]
        if NAME_WEIGHT and named:
            has = self.held(named, list(scores), first=True)
            scores = {r: s * (1 + NAME_WEIGHT * (r in has)) for r, s in scores.items()}
        if EXPAND_TERMS and present:  # not from a window of common words' matches
            top = [r for r, _ in heapq.nsmallest(EXPAND_FROM, scores.items(), key=lambda i: i[1])]
            extra = self.expansion(expansion_words(list(texts(top).values()), terms))
            if extra:
                more = self.scored(list(extra), extra)
                for r, s in more.items():
                    scores[r] = scores.get(r, 0.0) + EXPAND_WEIGHT * s
                scores = best(scores, CANDIDATES)
        return with_neighbours(scores)

    def scored(self, terms: list[str], counts: dict[str, int]) -> Scores:
        """The CANDIDATES best by bm25 of the memories holding any telling term.

        A term is telling when at most COMMON_TERM_DOCS memories hold it; telling terms are
        taken rarest first while the memories holding them stay within SCORED_BUDGET, and
        every memory holding one is scored. A common word is left out of the score: bm25
        would walk its every memory to weigh it. A query made only of common words ranks
        the COMMON_WINDOW newest memories holding all of them (then any of them) by the
        tie-break alone: importance, then newest.
        """
        present = sorted((t for t in terms if counts[t]), key=lambda t: counts[t])
        telling: list[str] = []
        total = 0
        for term in present:
            if counts[term] > COMMON_TERM_DOCS or total + counts[term] > SCORED_BUDGET:
                break
            telling.append(term)
            total += counts[term]
        if telling:
            return self.best(_any(telling))
        if not present:
            return {}
        found = self.newest(" AND ".join(quote_term(t) for t in present))
        if len(found) < CANDIDATES:
            found.update((r, 0.0) for r in self.newest(_any(present)) if r not in found)
        return found

    def counts(self, terms: list[str], cap: int) -> dict[str, int]:
        """How many memories (across the file) hold each term, counted only up to ``cap``:
        a word in most memories costs no more than a rare one."""
        return {
            term: self.db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM entries_fts WHERE entries_fts MATCH ? "
                "LIMIT ?)",
                (quote_term(term), cap),
            ).fetchone()[0]
            for term in terms
        }

    def held(self, terms: list[str], rowids: list[int], *, first: bool = False) -> dict[int, int]:
        """How many of ``terms`` (each in at most COMMON_TERM_DOCS memories) each of
        ``rowids`` holds; with ``first``, as the first word of its text."""
        wanted = set(rowids)
        held: dict[int, int] = {}
        where = "terms : ^" if first else ""
        for term in terms:
            for (rowid,) in self.db.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?",
                (where + quote_term(term),),
            ):
                if rowid in wanted:
                    held[rowid] = held.get(rowid, 0) + 1
        return held

    def expansion(self, freq: dict[str, int]) -> dict[str, int]:
        """The EXPAND_TERMS words worth searching too, shared by the best matches and held by
        fewer than EXPAND_COUNT_CAP memories, best first while all of them together are held by
        at most EXPAND_BUDGET: word → how many hold it."""
        words = sorted(freq, key=lambda w: (-freq[w], w))[: EXPAND_TERMS * 3]
        counts = self.counts(words, EXPAND_COUNT_CAP)
        weight = {
            w: freq[w] * math.log(1 + self.total / counts[w])
            for w in words
            if 0 < counts[w] < EXPAND_COUNT_CAP
        }
        chosen: dict[str, int] = {}
        for w in sorted(weight, key=lambda w: (-weight[w], w)):
            if len(chosen) == EXPAND_TERMS:
                break
            if sum(chosen.values()) + counts[w] <= EXPAND_BUDGET:
                chosen[w] = counts[w]
        return chosen

    def best(self, match: str) -> Scores:
        """The CANDIDATES best by bm25 of the allowed matches."""
        sql, args = self._matches(f"bm25(entries_fts, 1.0, {DATE_WEIGHT})", match)
        sql += " ORDER BY s LIMIT ?"
        args.append(CANDIDATES)
        return {r[0]: r[1] for r in self.db.execute(sql, args)}

    def newest(self, match: str) -> Scores:
        """The CANDIDATES first by the tie-break (importance, newest, id) of the
        COMMON_WINDOW newest allowed matches, unscored (0.0): the index walks them newest
        first and stops."""
        sql, args = self._matches(None, match)
        sql = (
            f"SELECT rowid FROM entries WHERE rowid IN ({sql} ORDER BY entries_fts.rowid DESC "
            "LIMIT ?) ORDER BY importance DESC, ts DESC, id LIMIT ?"
        )
        args += [COMMON_WINDOW, CANDIDATES]
        return {r[0]: 0.0 for r in self.db.execute(sql, args)}

    def _matches(self, score: str | None, match: str) -> tuple[str, list[Any]]:
        """The SELECT of the allowed matches' rowids (and ``score`` as ``s``, when given)."""
        score = "" if score is None else f", {score} AS s"
        if self.where is None:
            sql = f"SELECT rowid{score} FROM entries_fts WHERE entries_fts MATCH ?"
            args: list[Any] = [match]
        else:
            sql, args = self.where(
                f"SELECT e.rowid{score} FROM entries_fts "
                "JOIN entries e ON e.rowid = entries_fts.rowid",
                "entries_fts MATCH ?",
            )
            args.insert(0, match)
        return sql, args
