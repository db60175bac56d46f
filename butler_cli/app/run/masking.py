"""The one masking step: every known secret becomes ``****`` before a line is kept, sent or
shown — a model's words and the arguments it asks for, a hook's event and its failure, a
schedule's records, the server's log, every error line and notice.

The masking itself is :func:`butler_cli.tools.redact.mask_text` (the known secret values and
the forms they are written in); this is where the surfaces reach it (``ui.text.visible``, the
neutraliser every shown line passes, masks through :func:`masked` first), and where what a
model sends comes in masked (:class:`MaskingProvider`). What a tool brings back and the title
of a governed call are masked where the toolbox makes them (``tools.masking``); a hook's event
where it is sent (``hooks.fire``). Cheap to import: the chat's first prompt goes through here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from butler_cli.tools.redact import known_secrets, mask_any, mask_text, redact

if TYPE_CHECKING:
    from butler_cli.core.provider import ModelRequest, ModelResponse, Provider


def masked(text: str) -> str:
    """``text`` with every secret the butler knows replaced by ``****``."""
    return mask_text(text)


def masked_value(value: Any) -> Any:
    """A JSON-like value with :func:`masked` applied to every string in it (keys too)."""
    return mask_any(value)


def secrets_by_name_hidden(value: Any) -> Any:
    """A copy of a call's arguments with the values of secret-looking keys (``password``,
    ``api_key`` … at any depth) shown as ``****``: what a title or a progress line may show."""
    return redact(value)


def hold_back(text: str) -> int:
    """How many characters at the end of ``text`` could be the start of a known secret: the
    longest end of it that one of them begins with (0, almost always)."""
    held = 0
    for secret in known_secrets():
        for size in range(min(len(secret) - 1, len(text)), held, -1):
            if text.endswith(secret[:size]):
                held = size
                break
    return held


class StreamMasker:
    """Streamed text passed on masked: the tail that could still be part of a secret is held
    back until the next piece shows what it is, or the stream ends (:meth:`flush`). A key
    split across two pieces is masked whole.

    What is shown is ``masked`` of the whole text so far, as before; only it is not made again
    from the start for every piece (that was quadratic: 2,000 pieces spent a second in the
    masking regexes). A front part that has been passed on, and that no secret can reach across
    any more (more than the longest secret's length of non-blank text follows it, and masking
    it alone gives what masking it with the rest gives), is kept masked once (``_front``)."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
        self.raw = ""
        self.sent = 0  # characters of the shown text passed on
        self._cut = 0  # raw[:_cut] is masked once, as ``_front``
        self._front = ""

    def __call__(self, delta: str) -> None:
        self.raw += delta
        rest = masked(self.raw[self._cut :])
        end = self._front[-_longest() :] + rest  # enough of the end to judge a secret's start
        upto = len(self._front) + len(rest) - hold_back(end)
        if upto > self.sent:
            self._pass(rest, upto)
        self._freeze(rest)

    def flush(self) -> None:
        rest = masked(self.raw[self._cut :])
        self._pass(rest, len(self._front) + len(rest))

    def _pass(self, rest: str, upto: int) -> None:
        front = len(self._front)
        shown = self._front[self.sent : upto] if self.sent < front else ""
        shown += rest[max(self.sent - front, 0) : upto - front]
        if shown:
            self.emit(shown)
        self.sent = max(self.sent, upto)

    def _freeze(self, rest: str) -> None:
        """Move the front of the unfrozen part into ``_front`` when it is safe (see above)."""
        longest = _longest()
        window = 4 * longest + 256
        if len(self.raw) - self._cut < 2 * window:
            return
        cut = len(self.raw) - window
        after = self.raw[cut:]
        if len(after) - sum(map(str.isspace, after)) <= longest:
            return  # a secret spread across white space could still reach back over the cut
        head = masked(self.raw[self._cut : cut])
        if len(self._front) + len(head) > self.sent or head + masked(after) != rest:
            return  # not passed on yet, or a secret lies across the cut
        self._front += head
        self._cut = cut


def _longest() -> int:
    """The longest known secret's length (its forms included), at least 1."""
    return max(map(len, known_secrets()), default=1)


class MaskingProvider:
    """A model whose answers come in masked: its text (streamed pieces too), every tool call's
    arguments and every complaint about them. A key a model server echoes back is ``****``
    before the loop, the screen, a park, the conversation store or memory sees it — and a call
    that would write it writes ``****``."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    def complete(self, request: ModelRequest) -> ModelResponse:
        stream = StreamMasker(request.on_text) if request.on_text is not None else None
        if stream is not None:
            request = replace(request, on_text=stream)
        response = self.inner.complete(request)
        if stream is not None:
            stream.flush()
        if not known_secrets():
            return response
        calls = tuple(replace(c, input=masked_value(dict(c.input))) for c in response.tool_calls)
        return replace(
            response,
            text=masked(response.text),
            tool_calls=calls,
            malformed={i: masked(why) for i, why in response.malformed.items()},
        )
