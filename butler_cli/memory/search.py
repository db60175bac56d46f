"""How text is indexed and queried so recall finds what a person means (spec Q1–Q3).

SQLite's unicode61 tokenizer folds case and splits words, but it reads a run of Chinese or
Japanese characters as one long token. So each CJK run is indexed as its single characters
plus its character bigrams: ``奶茶店`` is queried as the bigrams ``奶茶`` and ``茶店``, and
``我开了家卖奶茶的小店`` is found through ``奶茶``; a one-character query like ``茶`` hits the
single characters.
"""

from __future__ import annotations

import re
from functools import cache

_WORD = re.compile(r"\w+", re.UNICODE)


@cache
def _cjk() -> re.Pattern[str]:
    """The CJK runs' pattern, compiled on first use (about 1.5 ms): ASCII text, a run's usual
    task and answer, never needs it."""
    return re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


def _grams(run: str, *, unigrams: bool) -> list[str]:
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    if unigrams or len(run) == 1:
        return [*run, *bigrams] if unigrams else [run]
    return bigrams


def index_terms(text: str) -> str:
    """The text as the full-text index should see it."""
    if text.isascii():  # no CJK run in it: the text as it is
        return text
    return _cjk().sub(lambda m: " " + " ".join(_grams(m.group(), unigrams=True)) + " ", text)


def query_terms(query: str) -> list[str]:
    """Distinct search terms: lower-cased words, and CJK bigrams (or the lone character)."""
    terms: list[str] = []
    if query.isascii():  # no CJK run in it
        return list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    for piece in _cjk().split(query):
        terms.extend(w.lower() for w in _WORD.findall(piece))
    for run in _cjk().findall(query):
        terms.extend(_grams(run, unigrams=False))
    return list(dict.fromkeys(terms))


def every_term(query: str) -> str | None:
    """An FTS5 MATCH expression needing every term, in any order; None: nothing to search."""
    terms = query_terms(query)
    return " AND ".join(quote_term(t) for t in terms) if terms else None


def quote_term(term: str) -> str:
    """One term as an FTS5 string: no operator or column syntax can leak in."""
    return '"' + term.replace('"', '""') + '"'


def phrase_of(query: str) -> str:
    return " ".join(query.lower().split())
