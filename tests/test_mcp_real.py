"""A real MCP server from PyPI (`mcp-server-time`, in the test extras) through the installed
butler: listed, cached, called in the sandbox, and not started when no tool of it is used."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import call, json_lines, tool_results

SERVER = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))


@pytest.fixture
def time_server(butler_home: Path) -> Path:
    if SERVER is None:
        pytest.fail("mcp-server-time is missing: pip install -e '.[test]'")
    butler_home.mkdir(exist_ok=True)
    (butler_home / "config.toml").write_text(
        "[mcp.time]\n"
        f"command = {json.dumps(SERVER)}\n"
        'args = ["--local-timezone", "Europe/Paris"]\n'
        "start_timeout = 120\n"  # a loaded test machine starts Python slowly
    )
    return butler_home / "mcp-logs" / "time.log"


def starts(log: Path) -> int:
    return log.read_text().count("--- butler starts time") if log.exists() else 0


def test_the_time_server_lists_runs_and_is_left_alone(butler, script, time_server) -> None:
    r = butler("mcp", "list", "--json", timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    (server,) = json.loads(r.stdout)["servers"]
    kinds = {t["name"]: (t["kind"], t["hints"]) for t in server["tools"]}
    assert kinds["time__convert_time"] == ("benign", "[declared read-only]")
    assert kinds["time__get_current_time"] == ("benign", "[declared read-only]")
    assert starts(time_server) == 1
    r = butler("run", "--model", script({"text": "no clocks today"}), "hi", timeout=150)
    assert r.returncode == 0, r.stderr
    assert starts(time_server) == 1  # listed from the cache: the server was not started
    model = script(
        {
            "tool_calls": [
                call(
                    "time__convert_time",
                    "c",
                    source_timezone="UTC",
                    time="12:00",
                    target_timezone="Asia/Tokyo",
                )
            ]
        },
        {"text": "k"},
    )
    r = butler("run", "--model", model, "what time in Tokyo", "--json", timeout=150)
    assert r.returncode == 0, r.stderr
    (result,) = tool_results(r.stdout)
    assert not result["is_error"], result
    assert "21:00" in result["content"] and "Asia/Tokyo" in result["content"]
    assert starts(time_server) == 2


FETCH = shutil.which("mcp-server-fetch", path=str(Path(sys.executable).parent))


@pytest.fixture
def page() -> Iterator[tuple[str, list[str]]]:
    """A web page on 127.0.0.1 that writes down every request it gets."""
    seen: list[str] = []

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            seen.append(self.path)
            body = b"<html><body><p>hello from the page</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()


def test_a_real_fetch_server_parks_and_is_asked_every_time(
    butler: Any, script: Any, butler_home: Path, workdir: Path, page: Any
) -> None:
    """Issue 31, case 7: `mcp-server-fetch`'s `fetch` declares `readOnlyHint: true,
    openWorldHint: true`; only the first was read, so it ran inline — a private file's
    content left in a URL's query, exit 0, no --yes-safe. Now a tool that may reach other
    machines is governed like http_request: it parks, asked every time (no "always allow
    here"), whatever readOnlyHint says; the clock (closed-world) still runs inline."""
    if FETCH is None:
        pytest.fail("mcp-server-fetch is missing: pip install -e '.[test]'")
    url, seen = page
    butler_home.mkdir(exist_ok=True)
    (butler_home / "config.toml").write_text(
        "[mcp.web]\n"
        f"command = {json.dumps(FETCH)}\n"
        'args = ["--allow-private-ips", "--ignore-robots-txt"]\n'  # only 127.0.0.1 is there
        "start_timeout = 120\n"
    )
    listed = butler("mcp", "list", "--json", timeout=150)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    (server,) = json.loads(listed.stdout)["servers"]
    (fetch,) = [t for t in server["tools"] if t["name"] == "web__fetch"]
    assert fetch["kind"] == "governed" and "open-world" in fetch["hints"], fetch
    (workdir / "private.txt").write_text("private-canary-4d1e")
    leak = f"{url}/collect?q=private-canary-4d1e"
    # raw: the simplifier (readabilipy) would `npm install` into its own package folder at
    # first use — the butler's installation, read-only to a sandboxed server (issue 31)
    model = script({"tool_calls": [call("web__fetch", "f1", url=leak, raw=True)]}, {"text": "sent"})
    r = butler("run", "--model", model, "look it up", "--json", timeout=150)
    assert r.returncode == 3, r.stdout + r.stderr  # parked: nothing reached the page
    assert seen == []
    parked = json_lines(r.stdout)[0]
    assert "other machines" in parked["approval"]["reason"]
    shown = json.loads(butler("show", parked["park_id"], "--json").stdout)
    assert shown["verdicts"]["f1"]["ask_always"] is True  # never "always allow here"
    r = butler("resume", parked["park_id"], "--approve", "--json", timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    assert seen == ["/collect?q=private-canary-4d1e"]  # approved: it runs, once
    assert "hello from the page" in tool_results(r.stdout)[0]["content"]
