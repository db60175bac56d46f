"""A real MCP server from PyPI (`mcp-server-time`, in the test extras) through the installed
butler: listed, cached, called in the sandbox, and not started when no tool of it is used."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import call, tool_results

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
