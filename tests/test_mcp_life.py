"""MCP servers as a user lives with them (issue 21): started lazily, in parallel, once per
session, their tool lists cached in the home; a bounded start that kills what it started; start
errors in one line; their stderr in a log; results capped; an approval never burnt on a server
that is down; MCP tools in `butler tools list`; servers in the sandbox."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import call, json_lines, sleepers, tool_results
from fake_llm import Reply, openai_stream
from test_providers import run_args

PROBE = Path(__file__).parent / "mcp_probe_server.py"


def server_table(name: str, env: dict[str, str], *more: str, **extra: Any) -> str:
    lines = [
        f"[mcp.{name}]",
        f"command = {json.dumps(sys.executable)}",
        f"args = {json.dumps([str(PROBE), *more])}",
        "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }",
    ]
    extra.setdefault("start_timeout", 120)  # a loaded test machine starts Python slowly
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n\n"


def configure(home: Path, *tables: str) -> None:
    """The servers, and the test's folder as a write root: a sandboxed server writes only
    where it is allowed to (issue 31), and the probes log their starts there."""
    home.mkdir(exist_ok=True)
    roots = f"allowed_roots = [{json.dumps(str(home.parent))}]\n"
    (home / "config.toml").write_text(roots + "".join(tables))


def starts(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


@pytest.fixture
def probe(butler_home: Path, tmp_path: Path) -> Path:
    """One probe server; returns the file each of its starts is logged in."""
    log = tmp_path / "probe-starts"
    configure(butler_home, server_table("probe", {"PROBE_LOG": str(log), "SECRETISH": "s3cr3t"}))
    return log


def test_a_task_that_uses_no_mcp_tool_starts_no_server(butler, fake, probe, butler_home) -> None:
    """The first run lists the server's tools (one start) and caches them; later runs send the
    model the same specs from the cache and start nothing until a tool is called."""
    fake.replies = [Reply(events=openai_stream("hi")) for _ in range(2)]
    args, env = run_args("openai", fake)
    assert butler("run", *args, "hello", env=env).returncode == 0
    assert starts(probe) == 1
    r = butler("run", *args, "hello again", env=env)
    assert r.returncode == 0, r.stderr
    assert starts(probe) == 1  # nothing started: the tools came from the cache
    sent = [t["function"]["name"] for t in fake.requests[-1]["body"]["tools"]]
    assert {"probe__echo", "probe__stamp"} <= set(sent)
    fake.replies = [
        Reply(events=openai_stream("", [("c1", "probe__echo", ['{"text":"ping"}'])])),
        Reply(events=openai_stream("done")),
    ]
    r = butler("run", *args, "echo", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert tool_results(r.stdout)[0]["content"] == "ping"
    assert starts(probe) == 2  # started when its tool was called


def test_the_cache_is_a_home_file_tools_cannot_reach(butler, script, probe, butler_home) -> None:
    """The cache holds env names, never their values, and is as off-limits as the park key."""
    assert butler("run", "--model", script({"text": "k"}), "hi").returncode == 0
    cache = butler_home / "mcp-tools.json"
    text = cache.read_text()
    assert "probe__echo" in text or '"echo"' in text
    assert "SECRETISH" in text and "s3cr3t" not in text
    model = script({"tool_calls": [call("read_file", "r", path=str(cache))]}, {"text": "k"})
    r = butler("run", "--model", model, "peek", "--json")
    result = tool_results(r.stdout)[0]
    assert result["is_error"] and "echo" not in result["content"]


def test_a_changed_server_is_listed_again(butler, fake, butler_home, tmp_path) -> None:
    """The cache is keyed by the command, args and env names, and by the name and version the
    server reports: a new version seen when it is started (for a call) refreshes the list."""
    log, version = tmp_path / "starts", tmp_path / "version"
    version.write_text("1.0")
    env = {"PROBE_LOG": str(log), "PROBE_VERSION_FILE": str(version)}
    configure(butler_home, server_table("probe", env))
    args, fenv = run_args("openai", fake)

    def tools_sent() -> set[str]:
        return {t["function"]["name"] for t in fake.requests[-1]["body"]["tools"]}

    fake.replies = [Reply(events=openai_stream("hi"))]
    assert butler("run", *args, "a", env=fenv).returncode == 0
    assert "probe__newer" not in tools_sent() and starts(log) == 1
    version.write_text("2.0")  # upgraded in place: the same command, args and env
    fake.replies = [
        Reply(events=openai_stream("", [("c1", "probe__echo", ['{"text":"x"}'])])),
        Reply(events=openai_stream("k")),
    ]
    assert butler("run", *args, "b", env=fenv).returncode == 0
    assert starts(log) == 2
    fake.replies = [Reply(events=openai_stream("hi"))]
    assert butler("run", *args, "c", env=fenv).returncode == 0
    assert "probe__newer" in tools_sent() and starts(log) == 2
    # another argument is another server: listed afresh
    configure(butler_home, server_table("probe", {**env, "PROBE_EXTRA": "1"}))
    fake.replies = [Reply(events=openai_stream("hi"))]
    assert butler("run", *args, "d", env=fenv).returncode == 0
    assert starts(log) == 3


def test_a_cached_benign_tool_the_server_now_governs_is_not_run(
    butler, script, butler_home, tmp_path
) -> None:
    """The cache said read-only; the upgraded server, started for the call, no longer does:
    the call is not made (the next task sees the new list, and the tool waits for a person)."""
    log, version = tmp_path / "starts", tmp_path / "version"
    version.write_text("1.0")
    configure(
        butler_home,
        server_table("probe", {"PROBE_LOG": str(log), "PROBE_VERSION_FILE": str(version)}),
    )
    assert butler("run", "--model", script({"text": "k"}), "list").returncode == 0
    version.write_text("3.0")
    echo = {"tool_calls": [call("probe__echo", "e", text="sent anyway")]}
    r = butler("run", "--model", script(echo, {"text": "k"}), "echo", "--json")
    assert r.returncode == 0, r.stderr
    (result,) = tool_results(r.stdout)
    assert result["is_error"] and "no longer read-only" in result["content"]
    assert "sent anyway" not in result["content"]
    r = butler("run", "--model", script(echo, {"text": "k"}), "echo", "--json")
    assert r.returncode == 3 and json_lines(r.stdout)[0]["approval"]["tool"] == "probe__echo"


def test_servers_are_listed_in_parallel(butler, butler_home, tmp_path) -> None:
    """Each server waits for the other to be up before it answers: one after the other, the
    first would give up; side by side, both start."""
    a, b = tmp_path / "a-up", tmp_path / "b-up"
    configure(
        butler_home,
        server_table("a", {"PROBE_MARK": str(a), "PROBE_WAIT_FOR": str(b)}),
        server_table("b", {"PROBE_MARK": str(b), "PROBE_WAIT_FOR": str(a)}),
    )
    r = butler("mcp", "list", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    states = {s["name"]: s["state"] for s in json.loads(r.stdout)["servers"]}
    assert states == {"a": "running", "b": "running"}


def test_a_server_that_never_answers_is_bounded_and_killed(butler, butler_home, tmp_path) -> None:
    log, marker = tmp_path / "hung", f"hung-marker-{os.getpid()}-{tmp_path.name}"
    configure(
        butler_home,
        server_table("hung", {"PROBE_LOG": str(log), "PROBE_HANG": "1"}, marker, start_timeout=1),
    )
    r = butler("mcp", "list", timeout=30)
    assert r.returncode == 1
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("hung:"))
    assert "did not answer within 1 s" in line and "TimeoutError" not in line
    assert starts(log) == 1 and sleepers(marker) == []  # what it started is gone


def test_start_errors_read_as_their_cause(butler, butler_home, tmp_path) -> None:
    """Three real failures, three causes, one line each; `mcp list` exits non-zero."""
    not_mcp = tmp_path / "not-mcp.sh"
    not_mcp.write_text("#!/bin/sh\necho hello there\n")
    not_mcp.chmod(0o755)
    configure(
        butler_home,
        '[mcp.missing]\ncommand = "/nonexistent/mcp-server"\n\n',
        server_table("dies", {"PROBE_DIE": "ModuleNotFoundError: No module named 'frobnicate'"}),
        f"[mcp.chatty]\ncommand = {json.dumps(str(not_mcp))}\n\n",
        server_table("fine", {}),
    )
    r = butler("mcp", "list", "--json", timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    states = {s["name"]: s["state"] for s in json.loads(r.stdout)["servers"]}
    assert states["fine"] == "running"
    for name in ("missing", "dies", "chatty"):
        assert states[name].startswith("failed: "), states
        assert "\n" not in states[name]
        assert "ExceptionGroup" not in states[name] and "TaskGroup" not in states[name]
    assert "No such file or directory" in states["missing"]
    assert "ModuleNotFoundError: No module named 'frobnicate'" in states["dies"]
    assert "exited" in states["chatty"] or "closed" in states["chatty"]
    text = butler("mcp", "list", timeout=60)
    assert text.returncode == 1 and "mcp-logs/dies.log" in text.stdout


def test_a_servers_stderr_goes_to_the_log(butler, script, probe, butler_home) -> None:
    model = script({"tool_calls": [call("probe__echo", "e", text="hi")]}, {"text": "k"})
    r = butler("run", "--model", model, "echo", "--json")
    assert r.returncode == 0, r.stderr
    assert "warming up" not in r.stderr and "warming up" not in r.stdout
    assert "warming up" in (butler_home / "mcp-logs" / "probe.log").read_text()


def test_a_servers_log_is_capped_while_it_is_written(butler, script, probe, butler_home) -> None:
    """Issue 31, case 8: a server's stderr went to its log without bound within a session
    (12 MB from two calls of a real server). Each start keeps at most 1 MiB, says the rest was
    dropped, and the server is never blocked by it."""
    calls = [call("probe__shout", f"s{n}", kib=6000) for n in range(2)]
    model = script({"tool_calls": calls}, {"text": "k"})
    r = butler("run", "--model", model, "shout", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    assert [x["content"] for x in tool_results(r.stdout)] == ["shouted", "shouted"]
    log = butler_home / "mcp-logs" / "probe.log"
    assert log.stat().st_size < (1 << 20) + 4096, log.stat().st_size
    assert "log capped at 1048576 bytes" in log.read_text()


def test_results_are_capped_like_read_file(butler, script, probe) -> None:
    model = script(
        {"tool_calls": [call("probe__big", "b", kib=200), call("probe__picture", "p")]},
        {"text": "k"},
    )
    r = butler("run", "--model", model, "big", "--json")
    assert r.returncode == 0, r.stderr
    big, picture = tool_results(r.stdout)
    assert len(big["content"].encode()) < 65 * 1024
    assert "cut at 65536 bytes of 204800" in big["content"]
    assert "image/png" in picture["content"] and "200000 bytes" in picture["content"]
    assert "iVBOR" not in picture["content"] and len(picture["content"]) < 200


@pytest.mark.parametrize("how", ["command", "start"])
def test_a_park_whose_server_is_down_stays_pending(
    butler, script, butler_home, tmp_path, how
) -> None:
    """The approval is not spent on a server that cannot be reached: the park stays pending
    and runs, once, when the server is back."""
    target, broken = tmp_path / "stamped.txt", tmp_path / "broken"
    env = {"PROBE_DIE_IF": str(broken)}
    configure(butler_home, server_table("probe", env))
    model = script(
        {"tool_calls": [call("probe__stamp", "s", path=str(target), text="once")]},
        {"text": "stamped"},
    )
    r = butler("run", "--model", model, "stamp", "--json")
    assert r.returncode == 3, r.stderr
    park = json_lines(r.stdout)[0]["park_id"]
    if how == "command":
        text = (butler_home / "config.toml").read_text()
        (butler_home / "config.toml").write_text(
            text.replace(json.dumps(sys.executable), '"/nonexistent/python"')
        )
    else:
        broken.write_text("down")  # the cached list is still good: the start itself fails
    r = butler("resume", park, "--approve")
    assert r.returncode == 1, r.stdout + r.stderr
    said = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(said) == 1 and "probe" in said[0] and "pending" in said[0], r.stderr
    assert "Traceback" not in r.stderr and not target.exists()
    pending = butler("pending", "--json")
    assert park in pending.stdout
    configure(butler_home, server_table("probe", env))
    broken.unlink(missing_ok=True)
    r = butler("resume", park, "--approve", "--json")
    assert r.returncode == 0, r.stderr
    assert target.read_text() == "once"
    assert butler("resume", park, "--approve").returncode == 5
    assert target.read_text() == "once"


def test_tools_list_shows_mcp_tools_with_their_verdicts(butler, probe) -> None:
    r = butler("tools", "list", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["probe__echo"]["kind"] == "benign" and rows["probe__echo"]["source"] == "mcp probe"
    assert rows["probe__stamp"]["kind"] == "governed"
    assert rows["probe__stamp"]["default"] == "approve"
    assert "read_file" in rows  # the built-ins are still there
    text = butler("tools", "list")
    assert "probe__stamp" in text.stdout


def test_a_server_cannot_read_the_park_key(butler, script, probe, butler_home, tmp_path) -> None:
    """stdio servers run in the command sandbox: the butler's own files are hidden."""
    model = script(
        {"tool_calls": [call("probe__stamp", "s", path=str(tmp_path / "x"), text="y")]},
    )
    assert butler("run", "--model", model, "park one").returncode == 3
    key = butler_home / "park.key"
    secret = key.read_bytes()
    config = butler_home / "config.toml"
    model = script(
        {"tool_calls": [call("probe__peek", "k", path=str(key))]},
        {"tool_calls": [call("probe__peek", "c", path=str(config))]},
        {"text": "k"},
    )
    r = butler("run", "--model", model, "peek", "--json")
    assert r.returncode == 0, r.stderr
    for result in tool_results(r.stdout):
        assert result["content"].startswith("cannot read") or result["content"] == ""
        assert base64.b64encode(secret).decode() not in result["content"]
    assert os.path.exists(key)


def test_the_inbox_starts_each_server_once(butler, script, probe, butler_home, workdir) -> None:
    """`butler serve` is one session: two decisions (each a fresh butler for its park) share
    one start of the server; the two runs that parked started it once, to list it."""
    from serve_support import eventually, start_serve

    parks = []
    for name in ("a", "b"):
        target = str(workdir / f"{name}.txt")
        turns = [{"tool_calls": [call("probe__stamp", "s", path=target, text=name)]}]
        r = butler("run", "--model", script(*turns, {"text": "ok"}), "stamp", "--json")
        assert r.returncode == 3, r.stderr
        parks.append(json_lines(r.stdout)[0]["park_id"])
    assert starts(probe) == 1
    served = start_serve(butler_home, workdir)
    try:
        for park in parks:
            status, answer = served.decide(park, "approve")
            assert status == 200 and answer["ok"], answer
        eventually(lambda: (workdir / "a.txt").exists() and (workdir / "b.txt").exists())
    finally:
        served.stop()
    assert (workdir / "a.txt").read_text() == "a" and (workdir / "b.txt").read_text() == "b"
    assert starts(probe) == 2


def test_a_failed_start_is_remembered_for_a_short_back_off(
    butler, script, butler_home, tmp_path
) -> None:
    """Issue 32, story 7: a server that failed to start is not started again by the next runs
    (each paid its start_timeout and the kill again); they go on without it at once, saying so.
    `butler mcp list` always tries and says how long runs leave it alone; a start that works,
    or another config, ends the back-off."""
    log, broken = tmp_path / "starts", tmp_path / "broken"
    broken.write_text("")
    configure(
        butler_home, server_table("flaky", {"PROBE_LOG": str(log), "PROBE_DIE_IF": str(broken)})
    )
    model = script({"text": "fine"}, {"text": "fine"}, {"text": "fine"})
    first = butler("run", "--model", model, "one")
    assert first.returncode == 0, first.stderr
    assert starts(log) == 1 and "MCP server 'flaky' did not start" in first.stderr

    second = butler("run", "--model", model, "two")
    assert second.returncode == 0, second.stderr
    assert starts(log) == 1  # not started again: no second wait
    [said] = [ln for ln in second.stderr.splitlines() if "flaky" in ln]
    assert "failed to start" in said and "not tried again for" in said
    assert "butler mcp list" in said

    listed = butler("mcp", "list", "--json")  # the diagnosis always tries
    assert listed.returncode == 1 and starts(log) == 2
    [state] = json.loads(listed.stdout)["servers"]
    assert state["state"].startswith("failed: ") and state["retry_after"]
    text = butler("mcp", "list")
    assert starts(log) == 3 and "runs go on without it until" in text.stdout

    broken.unlink()  # fixed: `mcp list` finds it running, and runs use it again
    fixed = butler("mcp", "list", "--json")
    assert fixed.returncode == 0, fixed.stdout
    assert json.loads(fixed.stdout)["servers"][0]["retry_after"] is None
    broken.write_text("")
    assert butler("mcp", "list").returncode == 1  # broken again: remembered again
    configure(  # another config is another server: tried at once
        butler_home,
        server_table("flaky", {"PROBE_LOG": str(log), "PROBE_DIE_IF": str(broken), "X": "1"}),
    )
    before = starts(log)
    butler("run", "--model", model, "three")
    assert starts(log) == before + 1
