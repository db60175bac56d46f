"""What a provider's prompt cache can keep: each request of a chat repeats the one before it
byte for byte — the tools, the system prompt with its memory block, every earlier turn — and
only adds the new turn (issue 26). Through the installed butler, in a real pty, with many
memories, a tool round and a memory written mid-session; the fake provider records the bytes
each request carried."""

from __future__ import annotations

import json
from typing import Any

from conftest import spawn_butler
from fake_llm import FakeLLM, Reply, openai_stream

KEY = "sk-test-prefix-0123456789"
FACTS = [
    "prefers oolong tea at 85 °C",
    "works from Lisbon, UTC+0",
    "daughter Ana plays the cello on Tuesdays",
    "allergic to peanuts",
    "writes notes in Markdown under ~/notes",
    "reviews the budget every first Monday",
    "likes answers short, with the command first",
    "runs Debian on a 2-core laptop",
    "calls the cat Miso",
    "books trains, never flights, inside Europe",
    "keeps receipts in ~/receipts/YYYY",
    "speaks Portuguese and English",
]

# Fifty memories, as a person who has used the butler for a while has: the block is long.
FACTS += [
    f"{who}'s {what} falls on day {day} of the month"
    for who, what, day in zip(
        ["Ana", "Rui", "Marta", "the landlord", "the dentist", "Joana", "Tiago", "Inês"] * 5,
        ["birthday", "appointment", "deadline", "invoice", "visit"] * 8,
        range(1, 39),
        strict=False,
    )
]


def import_file(facts: list[str]) -> str:
    """The facts as a `butler memory import` file: one command for fifty memories."""
    ts = "2026-12-01T09:00:00+00:00"
    entries = [{"kind": "semantic", "text": f, "ts": ts, "meta": {}} for f in facts]
    return json.dumps({"format": "butler-memory", "version": 1, "entries": entries})


def cacheable(request: dict[str, Any]) -> list[str]:
    """The request as a provider's cache reads it, piece by piece, each piece as the bytes it
    was sent as: the tools, then every message in order (the system prompt first)."""
    body = request["body"]
    pieces = [json.dumps(body.get("tools"), ensure_ascii=False, sort_keys=False)]
    pieces += [json.dumps(m, ensure_ascii=False, sort_keys=False) for m in body["messages"]]
    return pieces


def test_each_request_of_a_chat_repeats_the_one_before_byte_for_byte(
    fake: FakeLLM, butler, butler_home, workdir
) -> None:
    assert len(FACTS) == 50
    (workdir / "memories.json").write_text(import_file(FACTS))
    assert butler("memory", "import", str(workdir / "memories.json")).returncode == 0
    (workdir / "plan.md").write_text("1. tea\n2. cello\n")
    read = json.dumps({"path": "plan.md"})
    remember = json.dumps({"text": "Ana's recital is on the 12th"})
    fake.replies = [
        Reply(events=openai_stream("Hello again.")),
        Reply(events=openai_stream("", [("r1", "read_file", [read])])),
        Reply(events=openai_stream("Your plan: tea, then cello.")),
        Reply(events=openai_stream("", [("m1", "remember", [remember])])),
        Reply(events=openai_stream("Noted the recital.")),
        Reply(events=openai_stream("Oolong, 85 °C.")),
        Reply(events=openai_stream("Goodbye for now.")),
    ]
    child = spawn_butler(
        ["chat", "--model", "openai:gpt-4o", "--base-url", fake.url + "/v1"],
        butler_home,
        workdir,
        OPENAI_API_KEY=KEY,
    )
    child.expect("you ›")
    for line, answer in (
        ("hi", "Hello again."),
        ("what is my plan?", "Your plan: tea, then cello."),
        ("remember Ana's recital on the 12th", "Noted the recital."),
        ("which tea?", "Oolong, 85"),
        ("bye", "Goodbye for now."),
    ):
        child.sendline(line)
        child.expect(answer)
        child.expect("you ›")
    child.sendcontrol("d")
    child.expect("Goodbye")
    child.close()
    asked = [r for r in fake.requests if r["path"].endswith("/chat/completions")]
    assert len(asked) == 7
    system = asked[0]["body"]["messages"][0]
    assert system["role"] == "system" and all(f in system["content"] for f in FACTS)
    for before, after in zip(asked, asked[1:], strict=False):
        old, new = cacheable(before), cacheable(after)
        assert new[: len(old)] == old, next(
            (i, a, b) for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b
        )
        assert len(new) > len(old)
