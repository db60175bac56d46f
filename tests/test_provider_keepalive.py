"""A model call reuses the connection the one before it left open (issue 34: the SDKs' client
kept it alive; our urllib requests opened one per call, a TLS handshake each). And the one
promise that comes with reuse: a request is sent a second time only when a REUSED connection
ended before a byte of the answer came — never after the server began answering. Real
HTTP/1.1 servers on 127.0.0.1 counting the connections they accept, the installed butler."""

from __future__ import annotations

import base64
import threading
import time
from pathlib import Path

import pytest
from conftest import json_lines
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream
from test_provider_http import KEY, MODELS, certificate, tls_server

from butler_cli.providers.remote.http import Wire

__all__ = ["certificate"]  # the fixture, shared with test_provider_http

STREAMS = {"openai": openai_stream, "anthropic": anthropic_stream}


def two_calls(kind: str, first: Reply | None = None) -> list[Reply]:
    """A tool round (read notes.txt), then the answer."""
    stream = STREAMS[kind]
    call = Reply(events=stream("", [("c1", "read_file", ['{"path": "notes.txt"}'])]))
    return [first or call, Reply(events=stream("the notes say hello"))]


def run(butler, kind: str, url: str, workdir: Path, **env: str):
    (workdir / "notes.txt").write_text("hello\n")
    model, suffix, key_env = MODELS[kind]
    return butler(
        "run", "--model", model, "--base-url", url + suffix, "read notes.txt", "--json",
        env={key_env: KEY, "NO_PROXY": "*", "no_proxy": "*", **env},
    )  # fmt: skip


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_a_tool_round_and_its_answer_share_one_connection(kind, fake, butler, workdir) -> None:
    fake.replies = two_calls(kind)
    r = run(butler, kind, fake.url, workdir)
    [result] = json_lines(r.stdout)
    assert result["status"] == "done" and "the notes say hello" in r.stdout, r.stdout + r.stderr
    assert len(fake.requests) == 2
    assert fake.connections == 1


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_https_with_a_self_signed_root_reuses_too(kind, certificate, butler, workdir) -> None:
    server = tls_server(certificate)
    try:
        server.replies = two_calls(kind)
        url = server.url.replace("http://", "https://")
        r = run(butler, kind, url, workdir, SSL_CERT_FILE=str(certificate[0]))
        assert r.returncode == 0 and "the notes say hello" in r.stdout, r.stderr
        assert len(server.requests) == 2 and server.connections == 1
    finally:
        server.close()


@pytest.mark.parametrize("how", ["idle", "unread"])
def test_a_connection_the_server_closed_is_replaced_and_the_call_sent_once(
    how, fake, butler, workdir
) -> None:
    """The server closes the kept-alive connection: while idle (seen before it is used), or
    when the next request comes, unread (the race a keep-alive timeout makes). The second
    call goes out on a new connection, and the server took each request exactly once."""
    stream = openai_stream("", [("c1", "read_file", ['{"path": "notes.txt"}'])])
    fake.replies = two_calls("openai", Reply(events=stream, hang_up=how))
    r = run(butler, "openai", fake.url, workdir)
    assert r.returncode == 0 and "the notes say hello" in r.stdout, r.stderr
    assert fake.connections == 2
    first, second = (request["body"]["messages"] for request in fake.requests)
    assert len(first) < len(second)  # two different calls, each seen once


def test_a_connection_dropped_mid_answer_is_not_sent_again(fake, butler, workdir) -> None:
    """The server took the second call on the reused connection and began answering, then
    dropped it: the model may have done the work (and billed it), so it is never sent again
    silently — the task fails as it did before reuse."""
    fake.replies = two_calls("openai")
    fake.replies[1].drop_after = 2
    r = run(butler, "openai", fake.url, workdir)
    [result] = json_lines(r.stdout)
    assert r.returncode == 1 and result["status"] == "failed", r.stdout
    assert "ended the stream before the answer was complete" in result["error"], result["error"]
    assert len(fake.requests) == 2 and fake.connections == 1
    assert "Traceback" not in r.stderr and KEY not in r.stdout + r.stderr


def test_a_server_that_says_connection_close_gets_a_new_connection(fake, butler, workdir) -> None:
    first = two_calls("openai")[0]
    first.headers = {"connection": "close"}
    fake.replies = [
        Reply(raw=b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
              + "".join(first.events).encode()),
        two_calls("openai")[1],
    ]  # fmt: skip
    r = run(butler, "openai", fake.url, workdir)
    assert r.returncode == 0 and "the notes say hello" in r.stdout, r.stderr
    assert len(fake.requests) == 2 and fake.connections == 2


def test_a_proxy_carries_both_calls_on_one_connection(fake, butler, workdir) -> None:
    """Plain http through HTTP_PROXY: each request in absolute form to the proxy, on one
    kept-alive connection to it, with the proxy URL's user and password as Basic
    Proxy-Authorization (as urllib's ProxyHandler sent them)."""
    proxy = FakeLLM()
    try:
        proxy.replies = two_calls("openai")
        named = proxy.url.replace("http://", "http://me:s%40cret@")
        r = run(butler, "openai", fake.url, workdir, HTTP_PROXY=named, http_proxy=named,
                NO_PROXY="", no_proxy="")  # fmt: skip
        assert r.returncode == 0 and "the notes say hello" in r.stdout, r.stderr
        assert fake.requests == [] and proxy.connections == 1
        assert [q["path"] for q in proxy.requests] == [fake.url + "/v1/chat/completions"] * 2
        auth = "Basic " + base64.b64encode(b"me:s@cret").decode()
        assert [q["headers"].get("proxy-authorization") for q in proxy.requests] == [auth] * 2
    finally:
        proxy.close()


def test_two_threads_on_one_wire_never_share_a_connection_mid_request() -> None:
    """`butler serve` runs decisions (and their model calls) on threads of their own, with
    one provider: two calls at once each get a connection of their own, and both are kept
    for the next calls."""
    fake = FakeLLM()
    try:
        fake.replies = [Reply(events=openai_stream("first", []), hold_after=2)]
        fake.replies += [Reply(events=openai_stream(f"answer {i}")) for i in range(3)]
        wire = Wire(fake.url + "/v1", {})
        got: list[str] = []

        def call() -> None:
            with wire.stream("chat/completions", {"messages": []}) as lines:
                got.append("".join(lines))

        held = threading.Thread(target=call)
        held.start()
        while len(fake.requests) < 1:  # the first call is mid-answer, holding its connection
            time.sleep(0.01)
        call()  # the second, meanwhile
        fake.release.set()
        held.join(30)
        assert fake.connections == 2 and len(got) == 2
        # each text comes in two halves: "answ" "er 0", "fi" "rst"
        assert '"er 0"' in got[0] and '"rst"' in got[1]
        call()
        call()
        assert fake.connections == 2 and '"er 1"' in got[2] and '"er 2"' in got[3]
        wire.close()
    finally:
        fake.close()
