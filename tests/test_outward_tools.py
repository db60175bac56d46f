"""http_request and send_email against real servers on 127.0.0.1 (http.server, aiosmtpd)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import call, json_lines, tool_results
from fake_llm import POLL


@pytest.fixture
def web():
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _reply(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            seen.append({"method": "GET", "path": self.path, "headers": dict(self.headers)})
            port = self.server.server_address[1]
            if self.path == "/away":
                self._reply(302, headers={"location": f"http://localhost:{port}/hello"})
            elif self.path == "/same":
                self._reply(302, headers={"location": "/hello"})
            else:
                self._reply(200, b"hello from the web", {"content-type": "text/plain"})

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            seen.append({"method": "POST", "path": self.path, "body": body.decode()})
            self._reply(201, b"created")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_http_request_parks_with_masked_secrets_and_runs_on_approval(web, butler, script) -> None:
    url, seen = web
    secret = "Bearer sk-live-VERY-SECRET"
    model = script(
        {
            "tool_calls": [
                call(
                    "http_request",
                    "h",
                    method="POST",
                    url=f"{url}/notes",
                    headers={"Authorization": secret},
                    body="note",
                )
            ]
        },
        {"text": "k"},
    )
    r = butler("run", "--model", model, "post it", "--json")
    assert r.returncode == 3 and seen == []
    approval = json_lines(r.stdout)[0]["approval"]
    assert (
        approval["title"].startswith(f"http_request: POST {url}/notes")
        and "****" in approval["title"]
    )
    assert "VERY-SECRET" not in approval["title"]  # --json keeps the conversation verbatim
    park_id = json_lines(r.stdout)[0]["park_id"]
    assert "VERY-SECRET" not in butler("pending").stdout
    assert "VERY-SECRET" not in butler("show", park_id).stdout
    r = butler("resume", park_id, "--approve", "--json")
    assert r.returncode == 0 and tool_results(r.stdout)[-1]["content"].startswith("HTTP 201")
    assert seen == [{"method": "POST", "path": "/notes", "body": "note"}]


def test_redirects_to_another_host_are_not_followed(web, butler, script, allow_all) -> None:
    url, seen = web
    model = script(
        {
            "tool_calls": [
                call("http_request", "a", method="GET", url=f"{url}/away"),
                call("http_request", "b", method="GET", url=f"{url}/same"),
            ]
        },
        {"text": "k"},
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all)
    away, same = (x["content"] for x in tool_results(r.stdout))
    assert away.startswith("HTTP 302") and "redirect to another origin not followed" in away
    assert same.startswith("HTTP 200") and same.endswith("hello from the web")
    assert [s["path"] for s in seen] == ["/away", "/same", "/hello"]


def test_http_request_bad_calls_are_refused(butler, script, allow_all) -> None:
    model = script(
        {"tool_calls": [call("http_request", "x", method="GET", url="file:///etc/passwd")]},
        {"text": "k"},
    )
    res = tool_results(butler("run", "--model", model, "go", "--json", *allow_all).stdout)[0]
    assert res["is_error"] and "http:// or https://" in res["content"]


@pytest.fixture
def smtp_server():
    from aiosmtpd.controller import Controller

    received: list = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            received.append(envelope)
            return "250 OK"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    yield port, received
    controller.stop()


def test_send_email_runs_once_on_approval(smtp_server, butler, script) -> None:
    port, received = smtp_server
    for key, value in (
        ("smtp.host", "127.0.0.1"),
        ("smtp.port", str(port)),
        ("smtp.tls", "none"),
        ("smtp.sender", "me@example.test"),
    ):
        assert butler("config", "set", key, value).returncode == 0
    model = script(
        {
            "tool_calls": [
                call("send_email", "e", to="ana@example.test", subject="Lunch", body="Friday?")
            ]
        },
        {"text": "sent"},
    )
    r = butler("run", "--model", model, "mail Ana", "--json")
    assert r.returncode == 3 and received == []
    approval = json_lines(r.stdout)[0]["approval"]
    assert approval["title"] == "send_email to ana@example.test: 'Lunch' (7 characters)"
    park_id = json_lines(r.stdout)[0]["park_id"]
    assert butler("resume", park_id, "--approve").returncode == 0
    assert butler("resume", park_id, "--approve").returncode == 5
    [mail] = received
    assert mail.rcpt_tos == ["ana@example.test"] and b"Subject: Lunch" in mail.content
    assert b"Friday?" in mail.content


def test_a_silent_smtp_server_fails_the_call_after_smtp_timeout(butler, script, allow_all) -> None:
    """A server that accepts the connection and never greets used to hold the task for a fixed
    30 s; `smtp.timeout` (declared once, in send_email's [smtp]) bounds it, and a timeout that
    is no timeout is refused."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        for key, value in (("smtp.host", "127.0.0.1"), ("smtp.port", str(port))):
            assert butler("config", "set", key, value).returncode == 0
        assert butler("config", "get", "smtp.timeout").stdout.startswith("smtp.timeout = 30")
        for bad in ("0", "0.0", "soon"):
            r = butler("config", "set", "smtp.timeout", bad)
            assert r.returncode == 2 and "smtp.timeout must be" in r.stderr, r.stderr
        assert butler("config", "set", "smtp.timeout", "0.5").returncode == 0
        model = script(
            {"tool_calls": [call("send_email", "e", to="a@example.test", subject="s", body="b")]},
            {"text": "k"},
        )
        r = butler("run", "--model", model, "go", "--json", *allow_all, timeout=20)
    assert r.returncode == 0, r.stderr
    res = tool_results(r.stdout)[0]
    assert res["is_error"] and "timed out" in res["content"], res


def test_send_email_is_not_offered_without_an_smtp_server(butler, script, fake) -> None:
    """It used to be offered, asked about, approved by a person — and only then fail. Without
    [smtp] host the provider is never told of it, a model that calls it anyway is told the tool
    does not exist (nothing parks, nobody is asked), and `tools list` says why it is missing."""
    from fake_llm import Reply, openai_stream

    fake.replies = [Reply(events=openai_stream("No mail today."))]
    args = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    r = butler("run", *args, "mail Ana", env={"OPENAI_API_KEY": "sk-test-123456789"})
    assert r.returncode == 0, r.stderr
    offered = [t["function"]["name"] for t in fake.requests[0]["body"]["tools"]]
    assert "write_file" in offered and "send_email" not in offered
    model = script(
        {"tool_calls": [call("send_email", "e", to="a@b.c", subject="s", body="b")]}, {"text": "k"}
    )
    ran = butler("run", "--model", model, "go", "--json")
    assert ran.returncode == 0, ran.stderr
    res = tool_results(ran.stdout)[0]
    assert res["is_error"] and "send_email" in res["content"]
    assert json.loads(butler("pending", "--json").stdout) == []
    listed = butler("tools", "list")
    assert "send_email is not offered: no SMTP server is set" in listed.stdout
    assert "send_email" not in [
        row["name"] for row in json.loads(butler("tools", "list", "--json").stdout)
    ]
