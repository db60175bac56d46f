"""http_request is bounded: one overall deadline, a body cap while it streams, redirects only
within the same origin, and no header crossing to another one. Real servers on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import call, tool_results
from fake_llm import POLL


def serve(handler: type[BaseHTTPRequestHandler]):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True).start()
    return server


@pytest.fixture
def servers():
    """Two servers on the same host, different ports: `main` redirects to `other`."""
    seen: dict[str, list[dict]] = {"main": [], "other": []}
    ports: dict[str, int] = {}

    def handler(name: str) -> type[BaseHTTPRequestHandler]:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self) -> None:
                seen[name].append({"path": self.path, "headers": dict(self.headers)})
                if self.path == "/drip":  # a byte every 0.5 s, for ever
                    self.send_response(200)
                    self.send_header("content-length", "100000")
                    self.end_headers()
                    try:
                        for _ in range(400):
                            self.wfile.write(b"x")
                            self.wfile.flush()
                            time.sleep(0.5)
                    except OSError:
                        return
                    return
                if self.path == "/big":
                    body = b"y" * 5_000_000
                elif self.path == "/to-other-port":
                    self.send_response(302)
                    self.send_header("location", f"http://127.0.0.1:{ports['other']}/landed")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                elif self.path == "/to-same-origin":
                    self.send_response(307)
                    self.send_header("location", "/landed")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                else:
                    body = f"{name} {self.path}".encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    main, other = serve(handler("main")), serve(handler("other"))
    ports["main"], ports["other"] = main.server_address[1], other.server_address[1]
    yield f"http://127.0.0.1:{ports['main']}", seen
    for server in (main, other):
        server.shutdown()
        server.server_close()


def fetch(butler, script, allow_all, *requests: dict) -> list[str]:
    calls = [call("http_request", f"h{i}", **req) for i, req in enumerate(requests)]
    r = butler(
        "run", "--model", script({"tool_calls": calls}, {"text": "k"}), "go", "--json", *allow_all
    )
    assert r.returncode == 0, r.stderr
    return [res["content"] for res in tool_results(r.stdout)]


def test_a_dripping_server_is_cut_at_the_deadline(servers, butler, script, allow_all) -> None:
    """A server sending a byte at a time was still being read at 50 s."""
    url, _ = servers
    start = time.monotonic()
    (out,) = fetch(
        butler, script, allow_all, {"method": "GET", "url": f"{url}/drip", "timeout_s": 2}
    )
    took = time.monotonic() - start
    assert "no complete answer" in out and "within 2 s" in out
    assert took < 12, took  # generous: the call itself ends at about 2 s


def test_no_header_crosses_to_another_port(servers, butler, script, allow_all) -> None:
    url, seen = servers
    auth = {"Authorization": "Bearer sk-test-LEAKCANARY-123"}
    away, same, big = fetch(
        butler,
        script,
        allow_all,
        {"method": "GET", "url": f"{url}/to-other-port", "headers": auth},
        {"method": "GET", "url": f"{url}/to-same-origin", "headers": auth},
        {"method": "GET", "url": f"{url}/big"},
    )
    assert away.startswith("HTTP 302") and "redirect to another origin not followed" in away
    assert seen["other"] == []  # not followed: nothing (and no credential) reached it
    assert same.startswith("HTTP 200") and same.endswith("main /landed")
    assert [s["path"] for s in seen["main"]][:3] == ["/to-other-port", "/to-same-origin", "/landed"]
    assert "body cut at 65536 bytes" in big and len(big) < 70_000


def test_an_unreachable_port_is_one_clear_line(butler, script, allow_all) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (out,) = fetch(butler, script, allow_all, {"method": "GET", "url": f"http://127.0.0.1:{port}/"})
    assert out.startswith(f"cannot reach http://127.0.0.1:{port}/")
