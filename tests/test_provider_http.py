"""What the official SDKs did for the remote models, kept by the butler's own requests (issue 34:
they are sent with Python's urllib, without the SDKs or their client, httpx2): each error
status as one line, a rate limit retried a bounded number of times, a server that
hangs up before answering, proxies named by the environment (HTTP_PROXY, NO_PROXY), the TLS roots
named by SSL_CERT_FILE. Real servers on 127.0.0.1, the installed butler in a subprocess."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from pathlib import Path

import pytest
from conftest import json_lines
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream, self_signed

KEY = "sk-test-DO-NOT-LEAK-1234567890"
MODELS = {
    "openai": ("openai:gpt-test", "/v1", "OPENAI_API_KEY"),
    "anthropic": ("anthropic:claude-test", "", "ANTHROPIC_API_KEY"),
}


def failure(butler, kind: str, url: str, **env: str) -> tuple[int, str, str]:
    """`butler run --json` against ``url``: its exit code, the task's error line, its stderr."""
    model, suffix, key_env = MODELS[kind]
    r = butler(
        "run",
        "--model",
        model,
        "--base-url",
        url + suffix,
        "hi",
        "--json",
        env={key_env: KEY, **env},
    )
    assert "Traceback" not in r.stderr and KEY not in r.stdout + r.stderr
    [result] = json_lines(r.stdout)
    assert result["status"] == "failed", result
    return r.returncode, result["error"], r.stderr


def raw_reply(status: str, body: bytes, content_type: str = "text/plain") -> Reply:
    head = f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
    return Reply(raw=head.encode() + b"connection: close\r\n\r\n" + body)


@pytest.mark.parametrize(
    "kind,reply,needle",
    [
        ("openai", Reply(401, body={"error": {"message": "bad key"}}), "check OPENAI_API_KEY"),
        ("openai", Reply(403, body={"error": {"message": "no"}}), "refused the API key (403)"),
        (
            "anthropic",
            Reply(
                401,
                body={
                    "type": "error",
                    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                },
            ),
            "check ANTHROPIC_API_KEY",
        ),
        (
            "openai",
            Reply(404, body={"error": "model 'gpt-test' not found"}),
            "model 'gpt-test' not found",
        ),
        (
            "anthropic",
            Reply(
                529,
                body={
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"},
                },
            ),
            "anthropic failed (529): Overloaded",
        ),
        (
            "openai",
            raw_reply("503 Service Unavailable", b"upstream down"),
            "openai failed (503): upstream down",
        ),
        (
            "openai",
            Reply(
                400,
                body={"error": {"message": "This model's maximum context length is 8192 tokens"}},
            ),
            "too long for 'gpt-test'",
        ),
    ],
)
def test_an_error_status_is_one_line(kind, reply, needle, fake, butler) -> None:
    fake.replies = [reply]
    returncode, error, _ = failure(butler, kind, fake.url)
    assert returncode == 1 and needle in error, error
    assert len(fake.requests) == 1  # an error status is not retried (only a rate limit is)


def test_a_rate_limit_is_retried_four_times_then_named(fake, butler) -> None:
    limited = Reply(429, body={"error": {"message": "slow down"}}, headers={"retry-after": "0.01"})
    fake.replies = [limited] * 4 + [Reply(events=openai_stream("too late"))]
    returncode, error, stderr = failure(butler, "openai", fake.url)
    assert returncode == 1 and "openai kept rate limiting the request" in error, error
    assert len(fake.requests) == 4 and stderr.count("rate limited the request; retrying") == 3


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_a_server_that_hangs_up_before_answering_is_unreachable(kind, butler) -> None:
    """The connection is taken and closed without a response: the request never reached a
    model, so it is `unreachable` — as the SDKs said — never a model's answer."""
    listener = socket.create_server(("127.0.0.1", 0))

    def hang_up() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        returncode, error, _ = failure(butler, kind, url)
    finally:
        listener.close()
    assert returncode == 1 and error.startswith(f"cannot reach {url}"), error


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_the_proxy_the_environment_names_carries_the_request(kind, fake, butler) -> None:
    """HTTP_PROXY is honoured as httpx honours it (and NO_PROXY skips it): the request goes to
    the proxy, in absolute form, and never straight to the server."""
    proxy = FakeLLM()
    stream = openai_stream if kind == "openai" else anthropic_stream
    try:
        proxy.replies = [Reply(events=stream("through the proxy"))]
        model, suffix, key_env = MODELS[kind]
        args = ["run", "--model", model, "--base-url", fake.url + suffix, "hi"]
        env = {key_env: KEY, "HTTP_PROXY": proxy.url, "http_proxy": proxy.url, "NO_PROXY": ""}
        r = butler(*args, env={**env, "no_proxy": ""})
        assert r.returncode == 0 and "through the proxy" in r.stdout, r.stderr
        assert fake.requests == [] and proxy.requests[0]["path"].startswith(fake.url + "/v1/")
        fake.replies = [Reply(events=stream("straight"))]
        r = butler(*args, env={**env, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
        assert r.returncode == 0 and "straight" in r.stdout, r.stderr
        assert len(proxy.requests) == 1 and len(fake.requests) == 1
    finally:
        proxy.close()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (openssl, as a person makes one)."""
    return self_signed(tmp_path_factory.mktemp("tls"))


def tls_server(certificate: tuple[Path, Path]) -> FakeLLM:
    """The fake provider behind TLS with ``certificate``."""
    server = FakeLLM()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server.server.socket = context.wrap_socket(server.server.socket, server_side=True)
    return server


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_tls_trusts_the_roots_ssl_cert_file_names(kind, certificate, butler) -> None:
    """An HTTPS server whose certificate no system root signed: refused (unreachable, nothing
    sent), until SSL_CERT_FILE names it."""
    cert = certificate[0]
    server = tls_server(certificate)
    url = server.url.replace("http://", "https://")
    stream = openai_stream if kind == "openai" else anthropic_stream
    try:
        returncode, error, _ = failure(butler, kind, url, SSL_CERT_FILE="")
        assert returncode == 1 and error.startswith(f"cannot reach {url}"), error
        assert server.requests == []
        server.replies = [Reply(events=stream("over TLS"))]
        model, suffix, key_env = MODELS[kind]
        r = butler(
            "run", "--model", model, "--base-url", url + suffix, "hi",
            env={key_env: KEY, "SSL_CERT_FILE": str(cert)},
        )  # fmt: skip
        assert r.returncode == 0 and "over TLS" in r.stdout, r.stderr
    finally:
        server.close()


def test_an_error_event_inside_an_anthropic_stream_fails_the_task(fake, butler) -> None:
    """Anthropic reports an overload mid-answer as an ``error`` event in a 200 stream: the
    task fails with its words, the text before it is not taken as the answer."""
    frames = anthropic_stream("half an ans")[:3]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    fake.replies = [Reply(events=[*frames, f"event: error\ndata: {json.dumps(error)}\n\n"])]
    returncode, message, _ = failure(butler, "anthropic", fake.url)
    assert returncode == 1 and "anthropic failed: Overloaded" in message, message
    assert len(fake.requests) == 1


class ConnectProxy:
    """A tunnelling proxy on 127.0.0.1, as a company's proxy is to an https API: it answers
    CONNECT and relays bytes both ways, seeing only where the tunnel goes."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            head += client.recv(4096)
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        self.targets.append(f"{method} {target}")
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pipe(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            for end in (src, dst):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_an_https_server_is_reached_through_the_proxy_by_connect(kind, certificate, butler) -> None:
    """HTTPS_PROXY for an https API: a CONNECT tunnel through the proxy, TLS end to end (the
    proxy sees where, never what: the key stays inside the tunnel)."""
    cert = certificate[0]
    server = tls_server(certificate)
    proxy = ConnectProxy()
    url = server.url.replace("http://", "https://")
    stream = openai_stream if kind == "openai" else anthropic_stream
    try:
        server.replies = [Reply(events=stream("through the tunnel"))]
        model, suffix, key_env = MODELS[kind]
        env = {key_env: KEY, "SSL_CERT_FILE": str(cert), "HTTPS_PROXY": proxy.url}
        env |= {"https_proxy": proxy.url, "NO_PROXY": "", "no_proxy": ""}
        r = butler("run", "--model", model, "--base-url", url + suffix, "hi", env=env)
        assert r.returncode == 0 and "through the tunnel" in r.stdout, r.stderr
        assert proxy.targets == [f"CONNECT {url.removeprefix('https://')}"]
        sent = server.requests[0]["headers"]
        assert KEY in sent.get("x-api-key", "") + sent.get("authorization", "")
    finally:
        proxy.close()
        server.close()


def test_a_socks_proxy_is_named_not_tried(fake, butler) -> None:
    """ALL_PROXY=socks5://… (the SDKs' client spoke SOCKS; urllib does not): one line naming
    it as why the server cannot be reached, nothing sent — and NO_PROXY naming the server
    reaches it directly."""
    fake.replies = [Reply(events=openai_stream("direct"))]
    args = ["run", "--model", "openai-compatible:local", "--base-url", fake.url + "/v1", "hi"]
    socks = {"ALL_PROXY": "socks5://127.0.0.1:9", "all_proxy": "socks5://127.0.0.1:9"}
    r = butler(*args, env={**socks, "NO_PROXY": "", "no_proxy": ""})
    assert r.returncode == 1 and f"cannot reach {fake.url}/v1 (" in r.stderr, r.stderr
    assert "SOCKS proxy, socks5://127.0.0.1:9;" in r.stderr
    assert fake.requests == [] and "Traceback" not in r.stderr
    r = butler(*args, env={**socks, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    assert r.returncode == 0 and "direct" in r.stdout, r.stderr
