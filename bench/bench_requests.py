"""What a provider's prompt cache can keep over a five-turn chat: the bytes each request repeats
from the one before it (its cacheable prefix), beside a minimal loop, in the same run.

The butler: the installed chat on a pty, fifty memories, a tool round (``read_file``) and a
memory written mid-session (``remember``), against a loopback OpenAI-compatible server that
records every request. The minimal loop: the openai SDK sending the same five user turns and
the same answers with a one-line system prompt and no tools — the least any chat sends.

A request is read as a cache reads it: the tools, then each message in order; the repeated
bytes are the longest run of whole pieces it shares with the request before it.

    python bench/bench_requests.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BIN  # noqa: E402
from fake_llm import FakeLLM, Reply, openai_stream  # noqa: E402
from test_request_prefix import FACTS, cacheable, import_file  # noqa: E402

TURNS = [
    ("hi", "Hello again."),
    ("what is my plan?", "Your plan: tea, then cello."),
    ("remember Ana's recital on the 12th", "Noted the recital."),
    ("which tea?", "Oolong, 85 °C."),
    ("bye", "Goodbye for now."),
]


def repeated(before: list[str], after: list[str]) -> tuple[int, int]:
    """(bytes of ``after`` shared with ``before`` as whole leading pieces, bytes of ``after``)."""
    shared = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        shared += len(a.encode())
    return shared, sum(len(p.encode()) for p in after)


def butler_chat(fake: FakeLLM, root: Path) -> list[dict[str, Any]]:
    import pexpect

    home, work = root / "home", root / "work"
    work.mkdir()
    env = {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1", "TERM": "xterm"}
    env |= {"PROMPT_TOOLKIT_NO_CPR": "1", "OPENAI_API_KEY": "sk-bench-0123456789"}
    env["XDG_CONFIG_HOME"] = str(root / "xdg")
    (root / "memories.json").write_text(import_file(FACTS))
    subprocess.run(
        [str(BIN / "butler"), "memory", "import", str(root / "memories.json")], env=env, check=True
    )
    (work / "plan.md").write_text("1. tea\n2. cello\n")
    read = json.dumps({"path": "plan.md"})
    remember = json.dumps({"text": "Ana's recital is on the 12th"})
    fake.replies = [
        Reply(events=openai_stream(TURNS[0][1])),
        Reply(events=openai_stream("", [("r1", "read_file", [read])])),
        Reply(events=openai_stream(TURNS[1][1])),
        Reply(events=openai_stream("", [("m1", "remember", [remember])])),
        Reply(events=openai_stream(TURNS[2][1])),
        Reply(events=openai_stream(TURNS[3][1])),
        Reply(events=openai_stream(TURNS[4][1])),
    ]
    child = pexpect.spawn(
        str(BIN / "butler"),
        ["chat", "--model", "openai:gpt-4o", "--base-url", fake.url + "/v1"],
        cwd=str(work),
        env=env,
        encoding="utf-8",
        timeout=60,
    )
    child.expect("you ›")
    for line, answer in TURNS:
        child.sendline(line)
        child.expect(answer.split(",")[0])
        child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    return [r for r in fake.requests if r["path"].endswith("/chat/completions")]


def minimal_loop(fake: FakeLLM) -> list[dict[str, Any]]:
    import openai

    client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k")
    start = len(fake.requests)
    fake.replies = [Reply(events=openai_stream(answer)) for _, answer in TURNS]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant."}]
    for line, _ in TURNS:
        messages.append({"role": "user", "content": line})
        text = "".join(
            c.choices[0].delta.content or ""
            for c in client.chat.completions.create(model="m", messages=messages, stream=True)  # type: ignore[arg-type]
            if c.choices
        )
        messages.append({"role": "assistant", "content": text})
    return fake.requests[start:]


def main() -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    fake = FakeLLM()
    with tempfile.TemporaryDirectory() as tmp:
        ours = butler_chat(fake, Path(tmp))
    theirs = minimal_loop(fake)
    fake.close()
    print(f"commit {commit}\n")
    for name, requests in (("butler chat", ours), ("minimal loop (SDK)", theirs)):
        pieces = [cacheable(r) for r in requests]
        print(f"**{name}**\n")
        print("| request | bytes sent | repeated from the one before | share | new |")
        print("|---|---|---|---|---|")
        total = shared_total = 0
        for i, now in enumerate(pieces):
            shared, size = repeated(pieces[i - 1], now) if i else (0, repeated([], now)[1])
            total += size
            shared_total += shared
            share = f"{shared / size:.1%}" if i else "—"
            print(f"| {i + 1} | {size:,} | {shared:,} | {share} | {size - shared:,} |")
        print(f"| all | {total:,} | {shared_total:,} | {shared_total / total:.1%} | |\n")


if __name__ == "__main__":
    main()
