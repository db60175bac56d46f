"""How much later a streamed answer of 2,000 tokens is all there, beside the official openai SDK
consuming the same stream from the same loopback server, in the same run.

A loopback server sends an OpenAI Chat Completions stream as fast as the socket takes it: one
token a chunk, 2,000 chunks of Markdown (headings, paragraphs, a list, a code block), the last
token ``ENDMARK``. Every figure runs from the moment the server has the request to the moment
the consumer has the whole answer:

- floor: ``openai.OpenAI().chat.completions.create(stream=True)`` iterated to its end, in a
  fresh process as the butler's is (what any client of the SDK pays);
- raw (issue 34's baseline): the same stream read with httpx and ``json.loads`` of each event,
  in a fresh process (its second stream) — no SDK, no screen;
- ``butler run --output stream-json``: the last ``text`` event read from its stdout pipe;
- the chat on a terminal (a pty, 80x24: Markdown rendered live, the live line, scrolling):
  ``ENDMARK`` read from the pty;
- ``butler run`` on a terminal: ``ENDMARK`` read from the pty.

Targets (issue 26): the terminal within 1.1x the floor, stream-json within 1.05x.

    python bench/bench_stream.py [RUNS] [--before DIR]

``--before DIR`` also times the chat of the butler_cli in DIR (a ``git worktree`` of an older
commit, first on PYTHONPATH) in the same runs, interleaved.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BIN, before_option  # noqa: E402

TOKENS = 2000
MARK = "ENDMARK"


def answer_tokens() -> list[str]:
    """2,000 tokens of a realistic Markdown answer, ``ENDMARK`` last."""
    words = "the butler reads your notes and drafts a plan with the tea you like".split(" ")  # noqa: SIM905
    out: list[str] = []
    section = 0
    while len(out) < TOKENS - 1:
        section += 1
        out += [f"## Part {section}\n\n"]
        out += [f"{w} " for w in words * 2] + ["\n\n"]
        out += [f"- item {i}: " + " ".join(words[i : i + 3]) + "\n" for i in range(6)] + ["\n"]
        out += ["```python\n", "def plan(week):\n", "    return sorted(week)\n", "```\n\n"]
    return [*out[: TOKENS - 1], MARK]


def frames(tokens: list[str]) -> list[bytes]:
    def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        return f"data: {json.dumps({**body, 'choices': choices, **extra})}\n\n".encode()

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": t}) for t in tokens]
    out.append(chunk({}, "stop"))
    usage = {"prompt_tokens": 50, "completion_tokens": TOKENS, "total_tokens": TOKENS + 50}
    out.append(chunk(None, usage=usage))
    out.append(b"data: [DONE]\n\n")
    return out


class Server:
    """Streams ``frames`` to every POST; ``arrived`` is when the last request came in."""

    def __init__(self, frames: list[bytes]) -> None:
        self.arrived = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                server.arrived = time.perf_counter()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for data in frames:
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"


RAW_CLIENT = """
import json, sys, time
import httpx

body = {"model": "m", "messages": [{"role": "user", "content": "plan my week"}], "stream": True}
with httpx.Client() as client:
    for _ in range(2):  # as the SDK's: the second is timed
        text = []
        with client.stream("POST", sys.argv[1] + "/chat/completions", json=body) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunk = json.loads(line[6:])
                    if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                        text.append(chunk["choices"][0]["delta"]["content"])
        done = time.perf_counter()
assert "".join(text).endswith(sys.argv[2])
print(done)
"""


def raw(server: Server) -> float:
    """httpx and json alone, in a process of its own: the least a consumer can do."""
    out = subprocess.run(
        [sys.executable, "-c", RAW_CLIENT, server.url, MARK],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout) - server.arrived


SDK_CLIENT = """
import sys, time
import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key="k")
for _ in range(2):  # the first builds the SDK's chunk types (pydantic): the second is timed
    text = []
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "plan my week"}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
    done = time.perf_counter()
assert "".join(text).endswith(sys.argv[2])
from rich.console import Console
from rich.markdown import Markdown

console = Console(file=open("/dev/null", "w"), force_terminal=True, width=80, height=24)
began = time.perf_counter()
console.print(Markdown("".join(text)))  # what rich alone takes to render the answer, once
print(done, time.perf_counter() - began)
"""


def sdk(server: Server) -> tuple[float, float]:
    """The SDK in a process of its own, as the butler is (in this one it would share the
    interpreter lock with the server's thread), its second stream: the same monotonic clock.
    The first stream of a process also builds the SDK's pydantic chunk types (about a second
    here), which the butler never does (it reads the stream's events itself)."""
    out = subprocess.run(
        [sys.executable, "-c", SDK_CLIENT, server.url, MARK],
        capture_output=True,
        text=True,
        check=True,
    )
    done, render = (float(x) for x in out.stdout.split())
    return done - server.arrived, render


def stream_json(server: Server, env: dict[str, str], work: Path) -> float:
    proc = subprocess.Popen(
        [str(BIN / "butler"), "run", "--model", "openai:m", "--base-url", server.url]
        + ["--output", "stream-json", "plan my week"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    last = 0.0
    text = []
    for line in proc.stdout:
        event = json.loads(line)
        if event["type"] == "text":
            text.append(event["delta"])
            last = time.perf_counter()
    proc.wait()
    assert "".join(text).endswith(MARK), "".join(text)[-200:]
    return last - server.arrived


def on_pty(server: Server, env: dict[str, str], work: Path, chat: bool) -> float:
    import pexpect

    args = ["--model", "openai:m", "--base-url", server.url]
    args = ["chat", *args] if chat else ["run", *args, "plan my week"]
    child = pexpect.spawn(
        str(BIN / "butler"), args, cwd=str(work), env=env, dimensions=(24, 80), timeout=120
    )
    if chat:
        child.expect("you ›".encode())
        child.sendline("plan my week")
    tail = b""
    seen = 0.0
    while True:
        try:
            data = child.read_nonblocking(65536, timeout=120)
        except pexpect.EOF:
            break
        if MARK.encode() in tail[-16:] + data:
            seen = time.perf_counter()
            break
        tail = data
    assert seen, "the answer's end never appeared"
    child.terminate(force=True)
    return seen - server.arrived


def main() -> None:
    args, before = before_option(sys.argv[1:])
    runs = int(args[0]) if args else 7
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    server = Server(frames(answer_tokens()))
    with tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        work.mkdir()
        env = {
            **os.environ,
            "BUTLER_HOME": str(home),
            "OPENAI_API_KEY": "sk-bench-0123456789",
            "TERM": "xterm-256color",
            "PROMPT_TOOLKIT_NO_CPR": "1",
        }
        env.pop("NO_COLOR", None)
        times: dict[str, list[float]] = {
            "raw": [],
            "sdk": [],
            "render": [],
            "json": [],
            "chat": [],
            "run": [],
            "before": [],
        }
        old = {**env, "PYTHONPATH": before} if before else env
        for _ in range(runs):
            times["raw"].append(raw(server))
            took, render = sdk(server)
            times["sdk"].append(took)
            times["render"].append(took + render)
            times["json"].append(stream_json(server, env, work))
            times["chat"].append(on_pty(server, env, work, chat=True))
            if before:
                times["before"].append(on_pty(server, old, work, chat=True))
            times["run"].append(on_pty(server, env, work, chat=False))
    m = {k: statistics.median(v) for k, v in times.items() if v}
    print(f"commit {commit}, load {os.getloadavg()[0]:.1f}, {runs} runs, medians\n")
    print(
        "| consumer of the same 2,000-token stream | until the whole answer is there | ÷ SDK "
        "| ÷ raw | target |"
    )
    print("|---|---|---|---|---|")
    rows = [
        ("raw read: httpx + json (issue 34's baseline)", "raw", None),
        ("openai SDK, iterated (floor)", "sdk", None),
        (
            "the SDK, then rich renders the whole answer's Markdown once (80 columns)",
            "render",
            None,
        ),
        ("`butler run --output stream-json`, read from its pipe", "json", 1.05),
        ("the chat on a terminal (pty 80x24, Markdown live; issue 34: ≤ 4x raw)", "chat", None),
        ("`butler run` on a terminal (pty 80x24)", "run", 1.1),
    ]
    if before:
        rows.insert(4, (f"the chat on a terminal, before (`{before}`)", "before", None))
    for label, key, target in rows:
        ratio = m[key] / m["sdk"]
        mark = "" if target is None else f"≤ {target}x {'✓' if ratio <= target else '✗'}"
        if key in ("chat", "before"):
            to_raw = m[key] / m["raw"]
            mark = f"≤ 4x raw {'✓' if to_raw <= 4 else '✗'}"
        print(
            f"| {label} | {m[key] * 1000:.0f} ms | {ratio:.2f}x | {m[key] / m['raw']:.2f}x "
            f"| {mark} |"
        )


if __name__ == "__main__":
    main()
