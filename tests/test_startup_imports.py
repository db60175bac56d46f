"""What a `butler` command loads: only what it uses. Only the command being run is imported and
built (not the other commands' modules); a tool's heavy modules (TLS, SMTP, the HTTP client) load
when that tool is called, not when its plug-in is described."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import butler_exe, call

UNUSED_BY_CLOCK = {"ssl", "_ssl", "smtplib", "http.client"}
#: The modules of commands that `pending`, `run` and `--help` do not run.
OTHER_COMMANDS = {
    "butler_cli.cli.serve",
    "butler_cli.cli.schedule",
    "butler_cli.cli.mcp",
    "butler_cli.cli.memory",
    "butler_cli.cli.config",
    "butler_cli.cli.keys",
    "butler_cli.cli.chat",
}


#: Runs the installed `butler` script (argv: OUT, SCRIPT, ARGS...) and writes every module it
#: imported to OUT when it exits. (``-X importtime`` misses a module loaded by
#: ``importlib.import_module``, the way commands and plug-ins are.)
PROBE = """
import atexit, runpy, sys
out, script = sys.argv[1:3]
atexit.register(lambda: open(out, "w", encoding="utf-8").write("\\n".join(sys.modules)))
sys.argv = [script, *sys.argv[3:]]
runpy.run_path(script, run_name="__main__")
"""


def imported_by(args: list[str], home, cwd, **more_env: str) -> set[str]:
    """Every module the installed `butler` imported while running ``args``."""
    out = cwd.parent / "imported.txt"
    env = {**os.environ, "BUTLER_HOME": str(home), **more_env}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), butler_exe(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(out.read_text(encoding="utf-8").splitlines())


def test_a_run_that_reads_the_clock_loads_no_network_or_mail_code(
    butler_home, workdir, script
) -> None:
    model = script({"tool_calls": [call("now")]}, {"text": "It is late."})
    loaded = imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    assert "butler_cli.tools.clock" in loaded  # the check sees the imports at all
    assert loaded & UNUSED_BY_CLOCK == set()


def test_calling_the_http_tool_still_loads_its_client(
    butler_home, workdir, script, allow_all
) -> None:
    """The other side: the deferred imports happen when the tool runs (the connection is
    refused; the call's error result is all the model gets)."""
    model = script(
        {"tool_calls": [call("http_request", method="GET", url="http://127.0.0.1:9/x")]},
        {"text": "k"},
    )
    loaded = imported_by(["run", "--model", model, "fetch", *allow_all], butler_home, workdir)
    assert "http.client" in loaded


def test_pending_imports_no_other_command(butler_home, workdir) -> None:
    loaded = imported_by(["pending"], butler_home, workdir)
    assert "butler_cli.cli.parks" in loaded  # the check sees the imports at all
    others = {"butler_cli.cli.run", "butler_cli.cli.resume", "butler_cli.cli.show"}
    assert loaded & (OTHER_COMMANDS | others) == set()


def test_run_imports_no_other_command(butler_home, workdir, script) -> None:
    model = script({"tool_calls": [call("now")]}, {"text": "done"})
    loaded = imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    assert "butler_cli.cli.run" in loaded
    assert loaded & (OTHER_COMMANDS | {"butler_cli.cli.parks", "butler_cli.cli.policy"}) == set()


def test_help_lists_every_command_and_imports_none(butler_home, workdir) -> None:
    from butler_cli.cli.commands import COMMANDS

    loaded = imported_by(["--help"], butler_home, workdir)
    assert {COMMANDS[name].module for name in COMMANDS} & loaded == set()
    env = {**os.environ, "BUTLER_HOME": str(butler_home), "COLUMNS": "200"}
    out = subprocess.run([butler_exe(), "--help"], env=env, capture_output=True, text=True)
    listed = out.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.strip()] == list(COMMANDS)


def test_each_commands_listed_help_is_its_own() -> None:
    """The table's help (what `butler --help` lists) is the first sentence of the command's own
    help: a docstring changed without the table fails here."""
    from butler_cli.cli.commands import COMMANDS, load

    for name, entry in COMMANDS.items():
        assert load(name, entry).get_short_help_str(10**6) == entry.help, name


def test_a_round_that_never_parks_loads_no_pydantic(butler_home, workdir, script) -> None:
    """Issue 14: the loop's messages are plain dataclasses and the scripted model's script is
    checked by hand; pydantic (with pydantic-core and its plug-in scan) loads only where a
    park is built, saved or read."""
    model = script({"tool_calls": [call("now")]}, {"text": "It is late."})
    loaded = imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    assert "butler_cli.core.loop" in loaded  # the check sees the imports at all
    heavy = {m for m in loaded if m.split(".")[0] in {"pydantic", "pydantic_core"}}
    assert heavy == set()


def test_listing_commands_load_neither_rich_nor_the_message_models(butler_home, workdir) -> None:
    """`pending` (no parks) writes plain text; `policy list` and `memory list --json` read no
    conversation: none of them needs rich, pydantic or OpenSSL's hashes."""
    heavy = {"rich.console", "pydantic", "pydantic_core", "secrets", "_hashlib"}
    for args in (["pending"], ["policy", "list"], ["memory", "list", "--json"]):
        loaded = imported_by(args, butler_home, workdir)
        assert "butler_cli.cli.options" in loaded, args
        assert loaded & heavy == set(), args


def test_a_json_run_of_a_benign_call_loads_no_rich_and_no_hashes(
    butler_home, workdir, script
) -> None:
    """`--output json` prints nothing through rich; a round of `now` signs and hashes nothing
    (no park, no governed call)."""
    model = script({"tool_calls": [call("now")]}, {"text": "done"})
    args = ["run", "--output", "json", "--model", model, "what time is it?"]
    loaded = imported_by(args, butler_home, workdir)
    assert "butler_cli.tools.clock" in loaded
    assert loaded & {"rich", "rich.console", "secrets", "hmac", "_hashlib"} == set()


#: What a round of `now` with nothing attached, no [hooks] and no park does not use.
UNUSED_BY_ONE_ROUND = {
    "butler_cli.hooks",  # only with a [hooks] section
    "butler_cli.app.chat.attach",  # only with --file or piped input
    "butler_cli.store.parks",  # only when a round parks or a park is read
    "butler_cli.store.key",
    "butler_cli.tools.sandbox",  # only when run_command is judged or runs
    "butler_cli.core.grants",  # only in the chat, or when a grant is bound
    "rich._emoji_codes",  # the model's words are shown as written
}


def test_a_round_loads_nothing_it_does_not_use(butler_home, workdir, script) -> None:
    """Issue 14: `butler run` of one round within 1.5x of the dependency floor — no hooks, no
    attaching, no park store, no sandbox probe, no grants, no emoji table."""
    model = script({"tool_calls": [call("now")]}, {"text": "It is late."})
    out = workdir.parent / "imported.txt"
    env = {**os.environ, "BUTLER_HOME": str(butler_home)}
    args = ["run", "--model", model, "what time is it?"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), butler_exe(), *args],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,  # nothing piped in: nothing to attach
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "It is late." in done.stdout
    loaded = set(out.read_text(encoding="utf-8").splitlines())
    assert "butler_cli.tools.command" in loaded  # described, as a plug-in is
    assert loaded & UNUSED_BY_ONE_ROUND == set()


def test_a_round_with_the_entry_points_kept_loads_no_package_metadata(
    butler_home, workdir, script
) -> None:
    """Issue 14: once a run has kept the entry-point scan in the home, the next one finds the
    policies and tool plug-ins without importlib.metadata (and the email, zipfile and csv
    modules it imports); see tests/test_entry_point_cache.py for when the files win."""
    butler_home.mkdir()
    model = script({"tool_calls": [call("now")]}, {"text": "It is late."})
    imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    loaded = imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    assert "butler_cli.tools.clock" in loaded and "butler_policies.ask" in loaded
    heavy = {"importlib.metadata", "email", "email.message", "zipfile", "csv"}
    assert loaded & heavy == set()


def test_a_round_with_mcp_tools_from_the_cache_loads_no_event_loop(
    butler_home, workdir, script, tmp_path
) -> None:
    """Issue 23: MCP's one lazy point is its client (tools/mcp_client.py). Once a server's tool
    list is in the cache, a round that calls none of its tools starts nothing and imports no
    event loop, no anyio and no SDK — though the server's tools are offered to the model."""
    import json

    server = os.path.join(os.path.dirname(__file__), "mcp_notes_server.py")
    folder = tmp_path / "notes"
    folder.mkdir()
    butler_home.mkdir()
    (butler_home / "config.toml").write_text(
        "[mcp.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(server)}]\n"
        f"env = {{ NOTES_DIR = {json.dumps(str(folder))} }}\n"
        "start_timeout = 120\n"  # a loaded test machine starts Python slowly
    )
    model = script({"tool_calls": [call("now")]}, {"text": "It is late."})
    first = imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    assert "mcp" in first  # no cache yet: the server was started to list its tools
    loaded = imported_by(["run", "--model", model, "what time is it?"], butler_home, workdir)
    assert "butler_cli.tools.mcp_hub" in loaded  # the check sees MCP configured at all
    heavy = {"asyncio", "anyio", "mcp", "butler_cli.tools.mcp_client"}
    assert loaded & heavy == set()


#: The official SDKs and what they alone bring (their ~470 type modules, pydantic, jiter), and
#: their HTTP client with its own (~150 modules): a real model's request is sent with Python's
#: urllib (issue 34).
SDKS = {"openai", "anthropic", "jiter", "pydantic", "pydantic_core"}
SDKS |= {"httpx2", "httpcore2", "h11", "h2", "anyio", "socksio", "sniffio"}


def test_a_real_models_run_imports_no_sdk(butler_home, workdir, fake) -> None:
    """Issue 34: a `run` of one prompt to an OpenAI-compatible server and to an Anthropic
    one sends it with urllib and imports neither SDK (openai alone was ~290 ms of CPU) nor
    their client."""
    from fake_llm import Reply, anthropic_stream, openai_stream

    fake.replies = [Reply(events=openai_stream("local answer"))]
    local = ["--model", "openai-compatible:local", "--base-url", fake.url + "/v1"]
    loaded = imported_by(["run", *local, "hi"], butler_home, workdir)
    assert {"urllib.request", "butler_cli.providers.remote.openai_chat"} <= loaded  # it was asked
    assert {m.split(".")[0] for m in loaded} & SDKS == set()
    fake.replies = [Reply(events=anthropic_stream("claude answer"))]
    remote = ["--model", "anthropic:claude-test", "--base-url", fake.url]
    loaded = imported_by(["run", *remote, "hi"], butler_home, workdir, ANTHROPIC_API_KEY="k")
    assert "butler_cli.providers.remote.anthropic_messages" in loaded
    assert {m.split(".")[0] for m in loaded} & SDKS == set()
    assert len(fake.requests) == 2
