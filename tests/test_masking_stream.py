"""Issue 34: a streamed answer is masked piece by piece without masking the whole answer so far
again for every piece (quadratic: a second of a 2,000-piece answer) — and passes on exactly what
the old way passed on, piece for piece: a key whole, split across pieces, spread across white
space or lines, in any of its encodings, near the start or deep in a long answer.

The old way is kept here as the oracle; hypothesis makes the streams."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from butler_cli.app.run import masking
from butler_cli.app.run.masking import StreamMasker, hold_back, masked
from butler_cli.tools import redact

KEY = "sk-live-0123456789abcdefXYZ"
OTHER = "hunter2-pass-word"


class OldMasker:
    """The masker as it was: the whole text masked again for every piece."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit, self.raw, self.sent = emit, "", 0

    def __call__(self, delta: str) -> None:
        self.raw += delta
        shown = masked(self.raw)
        upto = len(shown) - hold_back(shown)
        if upto > self.sent:
            self.emit(shown[self.sent : upto])
            self.sent = upto

    def flush(self) -> None:
        shown = masked(self.raw)
        if len(shown) > self.sent:
            self.emit(shown[self.sent :])
        self.sent = len(shown)


@pytest.fixture(autouse=True)
def secrets() -> Iterator[None]:
    kept = set(redact._secrets)
    redact.remember_secret(KEY)
    redact.remember_secret(OTHER)
    yield
    redact._secrets.clear()
    redact._secrets.update(kept)


def spread(text: str, gaps: list[str]) -> str:
    return "".join(ch + (gaps[i % len(gaps)] if i % 5 == 4 else "") for i, ch in enumerate(text))


PLANTS = [
    KEY,
    OTHER,
    base64.b64encode(KEY.encode()).decode(),
    KEY.encode().hex(),
    spread(KEY, ["\n"]),
    spread(base64.b64encode(KEY.encode()).decode(), [" ", "\n  "]),
    KEY[:10],  # a start of the key that goes nowhere
]

words = st.sampled_from(["the ", "butler ", "plan\n", "\n\n", "- item\n", "```\n", "  ", "tea. "])
parts = st.lists(st.one_of(words, st.sampled_from(PLANTS)), min_size=1, max_size=300)


def pieces_of(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def both(pieces: list[str]) -> tuple[list[str], list[str]]:
    new: list[str] = []
    old: list[str] = []
    a, b = StreamMasker(new.append), OldMasker(old.append)
    for piece in pieces:
        a(piece)
        b(piece)
    a.flush()
    b.flush()
    return new, old


@settings(max_examples=60, deadline=None)
@given(parts, st.lists(st.integers(min_value=0, max_value=100_000), max_size=200))
def test_the_streamed_masking_passes_on_what_the_old_way_did(parts, cuts) -> None:
    text = "".join(parts)
    new, old = both(pieces_of(text, cuts))
    assert new == old
    assert KEY not in "".join(new) and OTHER not in "".join(new)


def test_a_long_answer_is_masked_a_window_at_a_time(monkeypatch) -> None:
    """Deep in a long answer, a key split across pieces is still masked, and each piece masks
    a bounded window, not everything so far."""
    seen: list[int] = []
    real = masking.masked

    def counting(text: str) -> str:
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(masking, "masked", counting)
    filler = ["word "] * 800
    pieces = [*filler, KEY[:9], KEY[9:], " and ", spread(KEY, ["\n"]), *filler]
    new, old = both(pieces)
    assert new == old and KEY not in "".join(new) and "****" in "".join(new)
    assert max(seen) < 2_000 < len("".join(pieces)) // 4


@pytest.mark.parametrize("plant", [KEY, spread(KEY, ["\n"]), spread(KEY, ["   "])])
def test_no_key_is_cut_where_the_front_is_kept(plant: str) -> None:
    """A character at a time, a key (whole, or spread across lines or spaces) lying across
    the first place the front would be kept: it is not kept there — what is passed on is what
    the old way passed on. (A key spread across lines and sent a character at a time goes out
    in the clear in both: its first line is no start of the key's one-line form. Left as it
    was: the old way's weakness, not this change's.)"""
    window = 4 * masking._longest() + 256
    at = window - len(plant) // 2  # the key lies across ``window``, where the first cut falls
    text = "w " * (at // 2) + "w" * (at % 2) + plant + " tail" * window
    new, old = both(list(text))
    assert new == old
    if plant == KEY:
        assert KEY not in "".join(new) and "****" in "".join(new)
