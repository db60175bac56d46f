"""A chat that never overflows, and turns that can be taken back: `/undo`, `/retry`,
`/compact`, automatic compaction before a request would pass the model's window (learned from
the provider's refusal), and `/context` — in a real pty, against the fake provider on
127.0.0.1 whose recorded requests are what a real provider would receive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pexpect
from conftest import spawn_butler
from fake_llm import FakeLLM, Reply, openai_stream

KEY = "sk-test-DO-NOT-LEAK-1234567890"
TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 2000 tokens. However, your messages "
        "resulted in 2400 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def chat(fake: FakeLLM, home: Path, cwd: Path) -> pexpect.spawn:
    args = ["chat", "--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    child = spawn_butler(args, home, cwd, OPENAI_API_KEY=KEY)
    child.expect("you ›")
    return child


def leave(child: pexpect.spawn) -> None:
    child.sendcontrol("d")
    child.expect("Goodbye")
    child.expect(pexpect.EOF)


def said(child: pexpect.spawn, line: str, answer: str) -> None:
    child.sendline(line)
    child.expect(answer)
    child.expect("you ›")


def talk(fake: FakeLLM, n: int) -> list[tuple[str, str]]:
    """The conversation of request ``n`` without its system prompt: (role, text) pairs."""
    messages = fake.requests[n]["body"]["messages"]
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


def system(fake: FakeLLM, n: int) -> str:
    first = fake.requests[n]["body"]["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def test_undo_takes_a_turn_back_and_retry_sends_it_again(
    fake: Any, butler: Any, butler_home: Path, workdir: Path
) -> None:
    fake.replies = [Reply(events=openai_stream(f"reply-{n}")) for n in range(1, 6)]
    child = chat(fake, butler_home, workdir)
    child.sendline("/undo")
    child.expect("No turn to take back")
    said(child, "my cat is Miso", "reply-1")
    said(child, "my dog is Rex", "reply-2")
    child.sendline("/undo")
    child.expect(r'Took back your last turn \("my dog is Rex"\); what it did stays done')
    child.expect("are not undone")
    said(child, "which pets do I have?", "reply-3")
    assert talk(fake, 2) == [
        ("user", "my cat is Miso"),
        ("assistant", "reply-1"),
        ("user", "which pets do I have?"),
    ]
    child.sendline("/retry")
    child.expect("Retrying your last turn")
    child.expect("reply-4")
    child.expect("you ›")
    assert talk(fake, 3) == talk(fake, 2)  # the same request again, not the turn twice
    leave(child)
    [saved] = json.loads(butler("log", "--json").stdout)
    assert saved["turns"] == 2
    shown = json.dumps(json.loads(butler("log", "show", saved["id"], "--json").stdout))
    assert "Rex" not in shown and "reply-3" not in shown and "reply-4" in shown


def test_compact_folds_older_turns_and_keeps_the_system_prompt_whole(
    fake: Any, butler: Any, butler_home: Path, workdir: Path
) -> None:
    butler("memory", "add", "Ana drinks green tea")
    (workdir / "AGENTS.md").write_text("Answer in lists.\n")
    fake.replies = [
        *(Reply(events=openai_stream(f"reply-{n}")) for n in range(1, 4)),
        Reply(events=openai_stream("SUMMARY: Ana has a cat, Miso.")),
        Reply(events=openai_stream("reply-4")),
    ]
    child = chat(fake, butler_home, workdir)
    child.sendline("/compact")
    child.expect("Nothing to compact yet")
    # the first turn is long enough that a summary of it is shorter: a summary longer than
    # what it replaces is never kept (test_a_summary_longer_than_its_turns_is_not_kept)
    first = "my cat is Miso. " + "She sleeps all day on the warm windowsill. " * 8
    for n, line in enumerate((first, "turn two", "turn three"), start=1):
        said(child, line, f"reply-{n}")
    child.sendline("/compact")
    child.expect(r"compacted 1 earlier turn\(s\) into a summary \(as asked\)")
    child.expect("the last 2 turns are kept whole")
    child.expect("you ›")
    summarised = fake.requests[3]["body"]["messages"]
    assert "my cat is Miso" in json.dumps(
        summarised
    ) and "Summarise the conversation" in json.dumps(summarised)
    said(child, "and now?", "reply-4")
    sent = talk(fake, 4)
    assert sent[0][0] == "user" and "SUMMARY: Ana has a cat, Miso." in sent[0][1]
    assert sent[2:] == [
        ("user", "turn two"),
        ("assistant", "reply-2"),
        ("user", "turn three"),
        ("assistant", "reply-3"),
        ("user", "and now?"),
    ]
    assert system(fake, 4) == system(fake, 0) and "Ana drinks green tea" in system(fake, 4)
    assert system(fake, 4).index("green tea") < system(fake, 4).index("Answer in lists.")
    child.sendline("/context")
    child.expect(r"memory block: \d+ characters \(first in the system prompt")
    child.expect(r"project instructions \(after the memory block")
    child.expect(rf"{workdir / 'AGENTS.md'} \(17 characters\)")
    child.expect(r"conversation: 4 turn\(s\)")
    child.expect(r"window is not known yet")
    child.expect("you ›")
    leave(child)


def test_a_provider_that_refuses_a_long_chat_teaches_the_window_and_the_turn_goes_through(
    fake: Any, butler_home: Path, workdir: Path
) -> None:
    """The overflow is learned from the provider's error (2000 tokens), the turn compacts and
    runs again, said in one line; the next turn compacts *before* its request would pass
    the window, with no error at all."""
    long = "x" * 1600
    fake.replies = [
        *(Reply(events=openai_stream(f"reply-{n}")) for n in range(1, 4)),
        Reply(status=400, body=TOO_LONG),
        Reply(events=openai_stream("FIRST SUMMARY")),
        Reply(events=openai_stream("reply-4")),
        Reply(events=openai_stream("SECOND SUMMARY")),
        Reply(events=openai_stream("reply-5")),
    ]
    child = chat(fake, butler_home, workdir)
    for n in range(1, 4):
        said(child, f"turn {n} {long}", f"reply-{n}")
    child.sendline(f"turn 4 {long}")
    child.expect(r"compacted 1 earlier turn\(s\) into a summary \(the provider said it was")
    child.expect(r"too long \(window 2000 tokens\)\)")
    child.expect("reply-4")
    child.expect("you ›")
    assert "failed" not in child.before
    learned = json.loads((butler_home / "context_windows.json").read_text())
    assert learned == {"openai:gpt-test": 2000}
    resent = talk(fake, 5)
    assert "FIRST SUMMARY" in resent[0][1] and resent[-1] == ("user", f"turn 4 {long}")
    child.sendline(f"turn 5 {long}")
    child.expect(r"compacted 1 earlier turn\(s\) into a summary \(about \d+ tokens, near the")
    child.expect("2000-token window")
    child.expect("reply-5")
    child.expect("you ›")
    assert len(fake.requests) == 8  # no refused request this time
    final = talk(fake, 7)
    assert "SECOND SUMMARY" in final[0][1] and final[-1] == ("user", f"turn 5 {long}")
    assert len(json.dumps(final)) // 4 < 2000
    assert {system(fake, n) for n in range(8) if n not in (4, 6)} == {system(fake, 0)}
    leave(child)


def test_a_chat_whose_last_turn_is_a_big_attachment_still_shrinks(
    fake: Any, butler_home: Path, workdir: Path
) -> None:
    """Issue 32, story 6: the only turn holds a 15,000-character attachment and the provider
    refuses the next request as too long. Compaction kept the last two turns whole, so there
    was nothing it could fold and every turn failed; now the attachment's body is dropped
    (its fence and name stay, with a note the model reads), said in one line, and the turn
    goes through."""
    (workdir / "big.txt").write_text("the quarterly numbers, line by line\n" * 420)
    fake.replies = [
        Reply(events=openai_stream("reply-1")),
        Reply(status=400, body=TOO_LONG),
        Reply(events=openai_stream("reply-2")),
    ]
    child = chat(fake, butler_home, workdir)
    said(child, "read @big.txt please", "reply-1")
    assert "quarterly numbers" in json.dumps(fake.requests[0]["body"])
    child.sendline("what was in it?")
    child.expect(r"dropped the body of 1 attachment\(s\) \(big.txt\)")
    child.expect("reply-2")
    child.expect("you ›")
    resent = json.dumps(fake.requests[2]["body"]["messages"])
    assert "quarterly numbers" not in resent
    assert "was dropped from the conversation to save room" in resent and "big.txt" in resent
    assert len(resent) // 4 < 2000  # within the window the refusal named
    assert talk(fake, 2)[-1] == ("user", "what was in it?")
    leave(child)


def test_a_summary_longer_than_its_turns_is_not_kept(
    fake: Any, butler_home: Path, workdir: Path
) -> None:
    """Issue 32, story 6: a model's summary that comes out longer than the turns it would
    replace makes the conversation bigger; it is dropped, said so, and the turns are sent as
    they were."""
    fake.replies = [
        *(Reply(events=openai_stream(f"reply-{n}")) for n in range(1, 4)),
        Reply(events=openai_stream("A LONG SUMMARY " * 300)),
        Reply(events=openai_stream("reply-4")),
    ]
    child = chat(fake, butler_home, workdir)
    for n, line in enumerate(("one", "two", "three"), start=1):
        said(child, line, f"reply-{n}")
    child.sendline("/compact")
    child.expect("kept the earlier turns: their summary came out longer than they are")
    child.expect("you ›")
    said(child, "four", "reply-4")
    assert "A LONG SUMMARY" not in json.dumps(fake.requests[4]["body"])
    assert talk(fake, 4) == [
        ("user", "one"),
        ("assistant", "reply-1"),
        ("user", "two"),
        ("assistant", "reply-2"),
        ("user", "three"),
        ("assistant", "reply-3"),
        ("user", "four"),
    ]
    leave(child)
