"""Keeping a chat within its model's context window: the turns of a conversation, an estimate
of a request's size, the windows known or learned, and compaction — the older turns folded
into a summary the model writes (kept only when shorter than what it replaces), and when the
last turns are too big themselves, their attachments' bodies dropped and long tool results cut,
each saying so.

The system prompt (the frozen memory block first, then the persona and the project
instructions) is never part of what is folded: it goes with every request, byte for byte.

A window is known for a few models (:data:`KNOWN_WINDOWS`) or learned: when a provider
refuses a request as too long, the limit its message names (or, when it names none, nine
tenths of what was sent) is kept in ``$BUTLER_HOME/context_windows.json`` for that model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from butler_cli.core.errors import ButlerError
from butler_cli.core.messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from butler_cli.store.files import ensure_private_dir, write_atomic

#: Context windows in tokens, by model spec (a spec that starts with a key matches it).
KNOWN_WINDOWS: dict[str, int] = {
    "openai:gpt-4o": 128_000,
    "openai:gpt-4.1": 1_047_576,
    "openai:gpt-4-turbo": 128_000,
    "openai:o3": 200_000,
    "openai:o4-mini": 200_000,
    "anthropic:claude-": 200_000,
}
#: Compaction starts before a request would pass this share of the window.
FILL = 0.8
#: The turns kept whole by a compaction.
KEEP_TURNS = 2
#: A rough size: characters per token for English text and JSON.
CHARS_PER_TOKEN = 4
LEARNED_FILE = "context_windows.json"
SUMMARY_HEAD = "[butler: a summary of the earlier conversation, made by the model to save room]"
SUMMARY_ACK = "Understood: I have the summary of our earlier conversation and carry on from it."
SUMMARY_PROMPT = (
    "Summarise the conversation below for yourself, to carry it on after its older turns are "
    "set aside: what the person wants, facts they gave, decisions made, files, commands and "
    "results involved, and what is still open. Be brief; keep names, paths and numbers exact."
    "\n\n"
)
#: The most of the transcript a summary request carries.
SUMMARY_SOURCE_CAP = 200_000


def estimate(system: str, messages: Sequence[Message], extra: str = "") -> int:
    """The request's size in tokens, roughly (characters / 4, JSON for the structure)."""
    size = len(system) + len(extra) + size_of(messages)
    return size // CHARS_PER_TOKEN + 1


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Where each turn begins: a user message with words in it (not one carrying tool results)."""
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "user"
        and m.content
        and not all(isinstance(b, ToolResultBlock) for b in m.content)
    ]


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(SUMMARY_HEAD)


def _transcript(messages: Sequence[Message]) -> str:
    lines: list[str] = []
    for m in messages:
        for b in m.content:
            if isinstance(b, TextBlock) and b.text.strip():
                lines.append(f"{m.role}: {b.text.strip()}")
            elif isinstance(b, ToolUseBlock):
                lines.append(f"{m.role} called {b.name}({json.dumps(b.input)[:400]})")
            elif isinstance(b, ToolResultBlock):
                lines.append(f"tool result ({b.outcome}): {b.content[:400]}")
    text = "\n".join(lines)
    return text[-SUMMARY_SOURCE_CAP:]


@dataclass(frozen=True)
class Compacted:
    """A compaction's result: the messages to send from now on, how many earlier turns were
    folded into the summary, the attachments whose body was dropped (their names), how many
    long tool results were cut, and whether a summary was made but not kept (it came out
    longer than what it would replace)."""

    messages: list[Message]
    folded: int
    dropped: tuple[str, ...] = ()
    cut: int = 0
    longer: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.folded or self.dropped or self.cut)


#: What one image weighs in a request, in tokens: about Anthropic's most for one image (an
#: image is sent as an image, so its base64 is never what it weighs).
IMAGE_TOKENS = 1600


def size_of(messages: Sequence[Message]) -> int:
    """What ``messages`` weigh in a request, in characters of JSON; an image as
    :data:`IMAGE_TOKENS`, not as its base64."""
    image = IMAGE_TOKENS * CHARS_PER_TOKEN
    return sum(
        len(json.dumps(m.to_dict())) + sum(image - len(i.data) for i in m.images) for m in messages
    )


def compact(
    messages: Sequence[Message],
    summarize: Callable[[str], str],
    keep: int = KEEP_TURNS,
    target: int | None = None,
) -> Compacted | None:
    """Make the conversation smaller: the turns before the last ``keep`` folded into one
    summary the model writes — kept only when it is shorter than what it replaces — then, if
    that is not enough (more than ``target`` tokens; None: as small as it goes), inside the
    turns themselves: each attached file's body dropped (its fence and name stay, with a note
    saying so) and each long tool result cut to its head. None when nothing could shrink."""
    starts = turn_starts(messages)
    result, folded, longer = list(messages), 0, False
    cut_at = starts[-keep] if len(starts) > keep and keep else 0
    older = list(messages[:cut_at])
    count = len([i for i in starts if i < cut_at and not is_summary(messages[i])])
    if older and (count or len(older) > 2):
        summary = summarize(SUMMARY_PROMPT + _transcript(older)).strip()
        head = [
            Message.user_text(f"{SUMMARY_HEAD}\n{summary}"),
            Message(role="assistant", content=[TextBlock(text=SUMMARY_ACK)]),
        ]
        if size_of(head) < size_of(older):
            result, folded = [*head, *messages[cut_at:]], count
        else:
            longer = True  # a summary longer than the turns it replaces saves nothing
    if folded and target is not None and estimate("", result) <= target:
        return Compacted(result, folded)
    result, dropped, cut = _shrink_inside(result)
    done = Compacted(result, folded, dropped, cut, longer)
    return done if done.changed or longer else None


#: An attachment in the chat (``@path``) and in `run` (``-f``, piped input): its fence, name
#: and body. The fence carries a random token, so a file's text cannot close it early.
_ATTACHED = (
    re.compile(
        r'(<butler-attachment-([0-9a-f]+) path="([^"\n]*)">\n)(.*?)(\n</butler-attachment-\2>)',
        re.S,
    ),
    re.compile(
        r'(^----- begin ("[^\n]*?")[^\n]*\[([0-9a-f]+)\]\n)(.*?)(^----- end \2 \[\3\]$)',
        re.S | re.M,
    ),
)
#: An attachment's body or a tool result this long is worth shrinking; a tool result keeps
#: its first :data:`RESULT_HEAD` characters.
SHRINK_OVER = 2_000
RESULT_HEAD = 1_000


def _shrink_inside(messages: list[Message]) -> tuple[list[Message], tuple[str, ...], int]:
    """Every message but a summary, shrunk inside: attachment bodies dropped, long tool
    results cut, each saying so where the model reads it."""
    dropped: list[str] = []
    cut = 0
    out: list[Message] = []
    for message in messages:
        if is_summary(message):
            out.append(message)
            continue
        blocks: list[Block] = []
        for block in message.content:
            if isinstance(block, TextBlock) and message.role == "user":
                text, names = _drop_bodies(block.text)
                dropped += names
                blocks.append(TextBlock(text=text) if names else block)
            elif isinstance(block, ToolResultBlock) and len(block.content) > SHRINK_OVER:
                cut += 1
                note = (
                    f"\n[butler: cut to save room — {len(block.content):,} characters, the "
                    f"first {RESULT_HEAD:,} kept; call the tool again if the rest is needed]"
                )
                blocks.append(replace(block, content=block.content[:RESULT_HEAD] + note))
            else:
                blocks.append(block)
        out.append(Message(role=message.role, content=blocks))
    return out, tuple(dropped), cut


def _drop_bodies(text: str) -> tuple[str, list[str]]:
    names: list[str] = []

    def dropped(found: re.Match[str]) -> str:
        body = found.group(4)
        if len(body) <= SHRINK_OVER:
            return found.group(0)
        names.append(found.group(3) if found.re is _ATTACHED[0] else found.group(2)[1:-1])
        note = (
            f"[butler: this attachment's body ({len(body):,} characters) was dropped from the "
            "conversation to save room; read the file again if it is needed]"
        )
        tail = found.group(5)
        return found.group(1) + note + ("" if tail.startswith("\n") else "\n") + tail

    for pattern in _ATTACHED:
        text = pattern.sub(dropped, text)
    return text, names


# -- windows ----------------------------------------------------------------------------------
def _learned_path(home: Path) -> Path:
    return home / LEARNED_FILE


def learned_windows(home: Path) -> dict[str, int]:
    """The windows learned from providers' refusals (a missing or corrupt file: none)."""
    try:
        raw = json.loads(_learned_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, int) and v > 0}


def window_for(spec: str, home: Path) -> int | None:
    """The model's context window in tokens: learned first, else known, else None."""
    learned = learned_windows(home).get(spec)
    if learned is not None:
        return learned
    for prefix, size in KNOWN_WINDOWS.items():
        if spec == prefix or spec.startswith(prefix if prefix.endswith("-") else prefix + "-"):
            return size
    return None


def limit_named(detail: str) -> int | None:
    """The token limit a provider's too-long message names, if it names one: OpenAI's
    "maximum context length is 8192 tokens", Anthropic's "… tokens > 200000 maximum"."""
    for pattern in (
        r"maximum context length is (\d+)",
        r">\s*(\d+)\s*maximum",
        r"context (?:window|length|limit)[^\d]{0,20}(\d{3,})",
    ):
        found = re.search(pattern, detail, re.I)
        if found:
            return int(found.group(1))
    return None


def learn(spec: str, home: Path, detail: str, sent: int) -> int:
    """Keep the window a refusal taught (the limit it names, else 9/10 of what was sent)."""
    window = limit_named(detail) or max(sent * 9 // 10, 1)
    known = learned_windows(home)
    known[spec] = window
    try:
        ensure_private_dir(home)
        data = json.dumps(known, indent=1, sort_keys=True).encode("utf-8")
        write_atomic(_learned_path(home), data)
    except (OSError, ButlerError):
        pass  # learning is a comfort: this session still compacts
    return window


def over(spec: str, home: Path, tokens: int) -> int | None:
    """The window when a request of ``tokens`` would pass its :data:`FILL` share, else None."""
    window = window_for(spec, home)
    return window if window is not None and tokens > window * FILL else None


__all__ = [
    "Compacted",
    "compact",
    "estimate",
    "is_summary",
    "learn",
    "over",
    "turn_starts",
    "window_for",
]
