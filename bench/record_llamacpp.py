"""Record what a real llama.cpp server (llama-cpp-python's) sends the butler, for the
conformance suite (tests/captures/llamacpp/, replayed by tests/test_conformance.py).

Needs a venv of its own with ``pip install 'llama-cpp-python[server]' gguf`` (it builds
llama.cpp from source; never the project's venv) and the butler installed here. No weights are
fetched: the model is made here, a tiny llama-architecture GGUF whose vocabulary is the 256
byte tokens and whose single layer adds nothing, so it is a bigram table written by hand — it
answers "OK", and under a grammar it writes the shortest JSON the schema allows ("a" for a
string). llama-cpp-python's ``chatml-function-calling`` format streams a tool call only for a
named ``tool_choice`` (an automatic one is refused while streaming), so the recording proxy
adds one to the first request of the task — the only change made to what the butler sends.

Run: /work/wt/llama-venv/bin/python bench/record_llamacpp.py --butler .venv/bin/butler
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "captures" / "llamacpp"
N_VOCAB = 3 + 256  # <unk>, <s>, </s>, then one token per byte
N_EMBD = 320  # > N_VOCAB: every token's embedding is one axis
EOS = 2


def byte_token(ch: str) -> int:
    return 3 + ord(ch)


#: The bigram table: after token A, token B gets this logit (the rest get 0). A grammar picks
#: the best allowed token, so these are enough for "OK" and for {"path":"a","content":"a"}.
BIGRAMS: dict[tuple[int, int], float] = {
    (byte_token("\n"), byte_token("O")): 30,
    (byte_token("\n"), byte_token("{")): 20,
    (byte_token("O"), byte_token("K")): 30,
    (byte_token("K"), EOS): 30,
    (byte_token("{"), byte_token('"')): 30,
    (byte_token('"'), byte_token("a")): 30,
    (byte_token('"'), byte_token("}")): 25,
    (byte_token('"'), byte_token(",")): 20,
    (byte_token("a"), byte_token('"')): 30,
    (byte_token(":"), byte_token('"')): 30,
    (byte_token(","), byte_token('"')): 30,
    (byte_token("}"), EOS): 30,
}


def make_model(path: Path) -> None:
    """Write the tiny GGUF (about 1 MB)."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("butler-bigram-test")
    w.add_context_length(32768)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(1)
    w.add_feed_forward_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_rope_dimension_count(N_EMBD // 4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{b:02X}>".encode() for b in range(256)]
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * N_VOCAB)
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    w.add_token_types(types + [gguf.TokenType.BYTE] * 256)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(EOS)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    embd = np.zeros((N_VOCAB, N_EMBD), dtype=np.float32)
    embd[np.arange(N_VOCAB), np.arange(N_VOCAB)] = 1.0
    scale = float(np.sqrt(N_EMBD))  # the RMS norm of a one-hot row
    out = np.zeros((N_VOCAB, N_EMBD), dtype=np.float32)
    for (a, b), logit in BIGRAMS.items():
        out[b, a] = logit / scale
    zeros = np.zeros
    w.add_tensor("token_embd.weight", embd)
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("output.weight", out)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(f"blk.0.{name}.weight", zeros((N_EMBD, N_EMBD), dtype=np.float32))
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("blk.0.ffn_gate.weight", zeros((64, N_EMBD), dtype=np.float32))
    w.add_tensor("blk.0.ffn_up.weight", zeros((64, N_EMBD), dtype=np.float32))
    w.add_tensor("blk.0.ffn_down.weight", zeros((N_EMBD, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Recorder:
    """A proxy on 127.0.0.1: forwards each request to the server, keeps the raw response
    bytes (status line, headers, chunked body exactly as sent) and hands them back."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.force_tool: str | None = None
        self.exchanges: list[tuple[dict[str, Any], bytes]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                first_round = not any(m.get("role") == "tool" for m in body.get("messages", []))
                if recorder.force_tool and first_round and body.get("tools"):
                    body["tool_choice"] = {
                        "type": "function",
                        "function": {"name": recorder.force_tool},
                    }
                raw = recorder.send(self.path, body)
                recorder.exchanges.append((body, raw))
                self.wfile.write(raw)
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def send(self, path: str, body: dict[str, Any]) -> bytes:
        data = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.upstream}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", self.upstream), timeout=600) as s:
            s.sendall(head + data)
            chunks = []
            while piece := s.recv(65536):
                chunks.append(piece)
        return b"".join(chunks)


def wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit("the llama.cpp server exited; see its log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the llama.cpp server did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--butler", required=True, help="the installed butler to point at it")
    parser.add_argument("--n-ctx", type=int, default=16384)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="llamacpp-record-"))
    model = work / "bigram.gguf"
    make_model(model)
    port = free_port()
    log = open(work / "server.log", "wb")  # noqa: SIM115 - open for the server's lifetime
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
        + ["--port", str(port), "--chat_format", "chatml-function-calling"]
        + ["--n_ctx", str(args.n_ctx), "--n_threads", "1"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(port, server)
        rec = Recorder(port)
        home, cwd = work / "home", work / "cwd"
        home.mkdir()
        cwd.mkdir()
        env = {**os.environ, "BUTLER_HOME": str(home), "NO_COLOR": "1"}
        flags = ["--model", "openai-compatible:bigram", "--base-url", rec.url]

        def butler(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            done = subprocess.run(
                [args.butler, *argv], cwd=cwd, env=env, input=stdin, capture_output=True,
                text=True, timeout=900,
            )  # fmt: skip
            print(f"$ butler {' '.join(argv)[:80]}\n  exit {done.returncode}")
            print("  " + (done.stdout + done.stderr).strip().replace("\n", "\n  ")[:600])
            return done

        OUT.mkdir(parents=True, exist_ok=True)
        rec.force_tool = "write_file"
        run = butler("run", *flags, "write the letter a to the file a")
        save(rec, "forced-tool-call.http")
        pending = json.loads(butler("pending", "--json").stdout)
        if pending:
            resumed = butler("resume", pending[0]["id"], "--approve")
            save(rec, "after-tool-call.http")
            body = rec.exchanges[-1][0]
            for message in body["messages"]:
                if message.get("tool_calls"):
                    message["content"] = None  # what the butler sent before issue 21
            (OUT / "after-tool-call-content-null.http").write_bytes(
                rec.send("/v1/chat/completions", body)
            )
            print(f"  resume exit {resumed.returncode}; a file 'a' holds {read(cwd / 'a')!r}")
        rec.force_tool = None
        long_task = "Summarise this. " + "lorem ipsum dolor sit amet " * (args.n_ctx // 20)
        butler("run", *flags, long_task[: 4 * args.n_ctx])
        save(rec, "prompt-past-context.http")
        print(f"run exit {run.returncode}; captures in {OUT}")
    finally:
        server.terminate()
        server.wait(30)


def save(rec: Recorder, name: str) -> None:
    (OUT / name).write_bytes(rec.exchanges[-1][1])
    print(f"  saved {name} ({len(rec.exchanges[-1][1])} bytes)")


def read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


if __name__ == "__main__":
    main()
