"""The interactive chat and the demo, driven in a real pseudo-terminal (pexpect)."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pexpect
import pytest
from conftest import bare_prompt_imports, call, imported_before_prompt, spawn_butler

APPROVE = r"Approve\? \[y/n/l/d/s(/w)?(/a)?\]"


def spawn(args: list[str], home, cwd, color: bool = False) -> pexpect.spawn:
    child = spawn_butler(args, home, cwd, color=color)
    child.expect("you ›")
    return child


def leave(child: pexpect.spawn) -> int:
    """Ctrl-D at the main prompt. Wait for the prompt first: a Ctrl-D typed ahead is eaten by
    the terminal's line discipline, never reaching the program."""
    child.sendcontrol("d")
    child.expect("Goodbye")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def parks(butler) -> list[dict]:
    return json.loads(butler("pending", "--json").stdout)


def test_demo_approve_then_deny_with_a_note(butler_home, workdir, butler) -> None:
    child = spawn(["demo"], butler_home, workdir)
    child.sendline("hello")
    child.expect("now")  # the benign tool ran inline
    child.expect(APPROVE)
    assert not (workdir / "butler-demo-note.txt").exists()  # parked before any side effect
    assert len(parks(butler)) == 1  # ... and on disk before the prompt
    child.sendline("")  # Enter alone never approves: the question comes again
    child.expect(APPROVE)
    assert not (workdir / "butler-demo-note.txt").exists()
    child.sendline("y")
    child.expect("That was your call")
    assert (workdir / "butler-demo-note.txt").exists()
    child.expect("you ›")
    child.sendline("and now?")
    child.expect("delete_file")
    child.expect(APPROVE)
    child.sendline("n")
    child.expect("Note for the model")
    child.sendline("keep it")
    child.expect("not run")
    child.expect("Whatever you chose")
    assert (workdir / "butler-demo-note.txt").exists()
    child.expect("you ›")
    assert leave(child) == 0
    assert parks(butler) == []
    history = butler_home / "chat_history"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert "and now?" in history.read_text()


def test_later_then_butler_resume(butler_home, workdir, butler) -> None:
    child = spawn(["demo"], butler_home, workdir)
    child.sendline("hi")
    child.expect(APPROVE)
    child.sendline("l")
    child.expect(r"Decide it later with /resume ([a-z0-9]{8})")
    park_id = child.match.group(1)
    child.expect("you ›")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [p["id"] for p in parks(butler)] == [park_id]
    r = butler("resume", park_id, "--approve")
    assert r.returncode == 0, r.stderr
    assert (workdir / "butler-demo-note.txt").exists()


@pytest.mark.parametrize("key", ["c", "d"])
def test_ctrl_c_or_eof_at_the_prompt_means_later(butler_home, workdir, butler, key) -> None:
    child = spawn(["demo"], butler_home, workdir)
    child.sendline("hi")
    child.expect(APPROVE)
    child.sendcontrol(key)
    child.expect("Left parked")
    child.expect("you ›")
    assert len(parks(butler)) == 1
    assert not (workdir / "butler-demo-note.txt").exists()
    assert leave(child) == 0


def test_pending_and_resume_inside_the_chat(butler_home, workdir, butler, script) -> None:
    model = script(
        {"tool_calls": [call("write_file", "w1", path="out.txt", content="x")]},
        {"text": "Finished the file."},
    )
    assert butler("run", "--model", model, "write out").returncode == 3
    [park] = parks(butler)
    child = spawn(["chat", "--model", model], butler_home, workdir)
    child.sendline("/pending")
    child.expect(park["id"])
    child.expect("you ›")
    child.sendline(f"/resume {park['id'][:4]}")
    child.expect(APPROVE)
    child.sendline("d")  # details, then the question again
    child.expect(APPROVE)
    child.sendline("y")
    child.expect("Finished the file.")
    assert (workdir / "out.txt").read_text() == "x"
    child.expect("you ›")
    child.sendline(f"/resume {park['id']}")
    child.expect("never runs twice")
    child.expect("you ›")
    assert leave(child) == 0
    # decided in chat → the same exactly-once path refuses a second decision
    assert butler("resume", park["id"], "--approve").returncode == 5


def test_slash_commands_and_new(butler_home, workdir, script) -> None:
    model = script({"text": "one"}, {"text": "two"}, {"text": "three"})
    child = spawn(["chat", "--model", model], butler_home, workdir)
    child.sendline("/nope")
    # Every command named, however the line wraps (between words, on a terminal).
    child.expect(r"Unknown\s+command\s+/nope\s+—\s+try\s+one\s+of:\s+/help\s+/pending")
    child.expect(r"/continue\s+(/\w+\s+)*/exit")
    child.sendline("/tools")
    child.expect(r"write_file\s+governed \(default approve\)")
    child.sendline("/policy")
    child.expect(r"policy ask — entry point 'ask'")
    child.sendline("first")
    child.expect("one")
    child.sendline("second")  # the conversation carries: the scripted model is on turn 1
    child.expect("two")
    child.sendline("/new")
    child.expect("new conversation")
    child.sendline("again")  # a fresh conversation starts over at turn 0
    child.expect("one")
    child.expect("you ›")
    assert leave(child) == 0


def test_no_color_means_no_colour(butler_home, workdir) -> None:
    def green_seen(color: bool) -> bool:
        child = spawn(["demo"], butler_home, workdir, color=color)
        child.sendline("hi")
        child.expect(APPROVE)
        seen = "\x1b[32m" in child.before
        child.sendline("l")
        child.expect("you ›")
        leave(child)
        return seen

    assert green_seen(color=True)
    assert not green_seen(color=False)


def test_chat_needs_a_terminal(butler) -> None:
    r = butler("chat", "--model", "scripted:/nonexistent.json")
    assert r.returncode == 2 and "needs a terminal" in r.stderr


def test_memory_commands_freeze_within_the_session(butler_home, workdir, butler, script) -> None:
    model = script({"text": "hi"})
    butler("memory", "add", "likes jazz")
    child = spawn(["chat", "--model", model], butler_home, workdir)
    child.sendline("/memory")
    child.expect(r"\] likes jazz")
    child.expect("you ›")
    child.sendline("/remember has a cat called Miso")
    child.expect(r"Remembered as (m[0-9a-z]+); it joins the prompt from the next session on")
    entry_id = child.match.group(1)
    child.expect("you ›")
    child.sendline("/memory")
    child.expect("/butler:memory -->")
    assert "Miso" not in child.before  # frozen for this session
    child.expect("you ›")
    assert leave(child) == 0
    child = spawn(["chat", "--model", model], butler_home, workdir)
    child.sendline("/memory")
    child.expect(f"\\[{entry_id}\\] has a cat called Miso")
    child.expect("you ›")
    child.sendline(f"/forget {entry_id}")
    child.expect(f"Forgot {entry_id}")
    child.expect("you ›")
    assert leave(child) == 0
    assert "Miso" not in butler("memory", "list").stdout


def test_plain_butler_opens_the_chat(butler_home, workdir, butler, script) -> None:
    model = script(
        {"tool_calls": [call("write_file", "w", path="x.txt", content="x")]}, {"text": "ok"}
    )
    child = spawn_butler([], butler_home, workdir, BUTLER_MODEL=model)
    child.expect("you ›")
    child.sendline("write")
    child.expect(r"approval needed · park [a-z0-9]{8}")  # the box, not a progress line too
    child.expect(APPROVE)
    child.sendline("l")
    child.expect("you ›")
    assert leave(child) == 0
    r = butler()  # no terminal: a usage error, nothing starts
    assert r.returncode == 2 and "needs a terminal" in r.stderr


def test_the_plain_chat_takes_its_defaults_from_the_config_file(
    butler_home, workdir, script
) -> None:
    """Model and policy from config.toml (the environment wins over it), named on the first
    line and used by the first turn; the first prompt reads the file without the typed config
    (BENCHMARKS.md, "Chat start")."""
    butler_home.mkdir(parents=True, exist_ok=True)
    from_file = script({"text": "answered from the file's model"})
    (butler_home / "config.toml").write_text(
        f'model = {json.dumps(from_file)}\npolicy = "readonly"\n', encoding="utf-8"
    )
    child = spawn_butler([], butler_home, workdir)
    child.expect(f"model {from_file} · policy readonly")
    child.expect("you ›")
    child.sendline("hello")
    child.expect("answered from the file's model")
    child.expect("you ›")
    assert leave(child) == 0
    from_env = script({"text": "answered from the environment's model"})
    child = spawn_butler([], butler_home, workdir, BUTLER_MODEL=from_env, BUTLER_POLICY="ask")
    child.expect(f"model {from_env} · policy ask")
    child.expect("you ›")
    child.sendline("hello")
    child.expect("answered from the environment's model")
    child.expect("you ›")
    assert leave(child) == 0


@pytest.mark.parametrize(
    ("config", "env", "said"),
    [
        ("model = [1\n", {}, "is malformed"),
        ('modle = "x"\n', {}, "unknown setting 'modle'"),
        ("[providers.openai]\napi_key = 'k'\n", {}, "[providers.openai] takes only"),
        ("", {"BUTLER_MAX_ROUNDS": "many"}, "BUTLER_MAX_ROUNDS must be a whole number"),
        ("", {}, "no model chosen"),
    ],
    ids=["malformed", "unknown", "provider", "max-rounds", "no-model"],
)
def test_a_broken_config_stops_the_plain_chat_before_its_prompt(
    butler_home, workdir, config, env, said
) -> None:
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(config, encoding="utf-8")
    child = spawn_butler([], butler_home, workdir, **env)
    child.expect(pexpect.EOF)
    child.close()
    assert said in child.before and "you ›" not in child.before
    assert child.exitstatus == 2


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ('[smtp]\nport = "x"\n', "smtp.port must be a whole number"),
        ("[smpt]\nport = 1\n", "unknown setting 'smpt'"),
    ],
    ids=["section", "typo"],
)
def test_a_bad_plugin_section_stops_the_chat_before_any_turn(
    butler_home, workdir, script, config, said
) -> None:
    """The chat's first line reads no plug-in, so a plug-in's section ([smtp] is send_email's)
    is checked by the full read that follows: still before a turn runs, one line, exit 2."""
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(config, encoding="utf-8")
    child = spawn_butler([], butler_home, workdir, BUTLER_MODEL=script({"text": "hi there"}))
    child.sendline("hello")
    child.expect(pexpect.EOF)
    child.close()
    assert said in child.before and "hi there" not in child.before
    assert child.exitstatus == 2 and "Traceback" not in child.before


def test_leaving_a_chat_whose_butler_cannot_be_built_says_why(butler_home, workdir, script) -> None:
    """Ctrl-D right after the first prompt waits for the build, and a build that failed stops
    the chat as a first line would: one line naming the problem, exit 2 — not a goodbye that
    blames memory consolidation with exit 0."""
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text('[smtp]\nport = "x"\n', encoding="utf-8")
    child = spawn_butler([], butler_home, workdir, BUTLER_MODEL=script({"text": "hi there"}))
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert "smtp.port must be a whole number" in child.before
    assert "consolidation" not in child.before and "Traceback" not in child.before
    assert child.exitstatus == 2


def test_every_listed_slash_command_does_something() -> None:
    """The completer's list (made before the first prompt) and what runs (after it) are two
    tables: a command listed but not run, or run but never listed, fails here."""
    from butler_cli.repl.commands import RUN
    from butler_cli.repl.slash import LISTED

    assert list(RUN) == list(LISTED)


def test_multi_line_entry_and_slash_completion(butler_home, workdir, script) -> None:
    child = spawn(["chat", "--model", script({"text": "got both lines"})], butler_home, workdir)
    child.send("line one")
    child.send("\x1b\r")  # Esc then Enter adds a line instead of sending
    child.send("line two\r")
    child.expect("got both lines")
    child.expect("you ›")
    child.send("/pen")
    child.expect("/pending")  # the completion menu offers the command
    child.send("\t")  # Tab takes it
    child.expect("/pending")
    child.send("\r")
    child.expect("No parks awaiting a decision")
    child.expect("you ›")
    assert leave(child) == 0
    history = (butler_home / "chat_history").read_text()
    assert "+line one\n+line two" in history


def test_the_first_prompt_needs_neither_rich_nor_pydantic() -> None:
    """The chat draws its prompt before loading them (see BENCHMARKS.md): keep it that way."""
    import subprocess
    import sys

    code = (
        "import sys, butler_cli.cli.entry, butler_cli.repl.start, butler_cli.repl.session\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'pydantic', 'typer'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


HEAVY = {"rich", "pydantic", "pydantic_core", "typer", "click", "openai", "anthropic", "httpx"}
#: Not heavy, but not needed to draw the prompt, and each once made it later (BENCHMARKS.md,
#: "Chat start"): the stored-keys lookup (the build reads them, before any turn), pathlib (and
#: the urllib.parse and ipaddress it loads), dataclasses (making one costs a millisecond: the
#: typed config and options are made after the prompt), the butler, the provider table, the
#: slash commands' bodies and the verdicts the package re-exports.
DEFERRED = {
    "platformdirs",
    "keyring",
    "tomlkit",
    "pathlib",
    "urllib.parse",
    "ipaddress",
    "dataclasses",
    "butler_cli.store.stored_keys",
    "butler_cli.app.config.config",
    "butler_cli.app.config.options",
    "butler_cli.app.run.butler",
    "butler_cli.providers",
    "butler_cli.repl.comforts",
    "butler_cli.repl.commands",
    "butler_cli.repl.turns",
    "butler_cli.core.verdicts",
}


@pytest.mark.parametrize(
    ("args", "config"),
    [(["demo"], True), ([], True), (["demo"], False)],
    ids=["demo", "plain", "demo-no-config"],
)
def test_nothing_heavy_is_imported_before_the_first_prompt_is_drawn(
    butler_home, workdir, script, args, config, tmp_path
) -> None:
    """The whole start on a real terminal, config file and a stored key included: Python
    reports each import as it finishes (-X importtime, on stderr, the same pty), so every module
    named before the prompt's text was loaded before the prompt was drawn. The butler's build
    starts after. Without a config file, no TOML parser either. Judged against a bare
    prompt-toolkit prompt measured in the same environment (a third party's new release may
    import more; that is not the butler's start getting heavier)."""
    butler_home.mkdir(parents=True, exist_ok=True)
    if config:
        (butler_home / "config.toml").write_text(
            '[providers.openai]\napi_key_env = "MY_KEY"\n', encoding="utf-8"
        )
    keys = tmp_path / "xdg" / "butler"
    keys.mkdir(parents=True)
    (keys / "keys.toml").write_text('[file]\nOPENAI_API_KEY = "sk-stored-1234567"\n')
    child = spawn_butler(
        args,
        butler_home,
        workdir,
        PYTHONPROFILEIMPORTTIME="1",
        BUTLER_MODEL=script({"text": "hi"}),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
    )
    # What a bare prompt-toolkit prompt loads here is prompt-toolkit's choice, not the
    # butler's: only what the butler's start adds to it is judged.
    bare = bare_prompt_imports()
    assert "prompt_toolkit" in bare  # the baseline sees the imports at all
    added = imported_before_prompt(child) - bare
    assert "butler_cli.repl.start" in added  # the check sees the butler's own imports
    assert {name.split(".")[0] for name in added} & HEAVY == set()
    assert added & DEFERRED == set()
    if not config:
        assert "tomllib" not in added


def test_a_chat_turn_that_never_parks_loads_no_pydantic(butler_home, workdir, script) -> None:
    """The chat past its first prompt (repl/turns.py) imports the approval prompt at its top:
    the park's pydantic models still load only when a turn parks, as for `butler run`."""
    child = spawn_butler(
        [],
        butler_home,
        workdir,
        PYTHONPROFILEIMPORTTIME="1",
        BUTLER_MODEL=script({"text": "quokka"}),
    )
    seen = io.StringIO()
    child.logfile_read = seen
    child.expect("you ›")
    child.sendline("hello")
    child.expect("quokka")
    child.expect("you ›")
    leave(child)
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in seen.getvalue().splitlines()
        if line.startswith("import time:")
    }
    assert "butler_cli.repl.turns" in imported  # the check sees the build's imports
    assert {m for m in imported if m.split(".")[0] in {"pydantic", "pydantic_core"}} == set()


def test_leaving_shows_each_new_fact_consolidation_wrote(
    butler_home, workdir, butler, script
) -> None:
    """Issue 36: the chat said only "Folded N older turns into your profile memory" and the
    fact the model wrote joined every prompt unseen. Each new fact is shown, with its id."""
    butler_home.mkdir(parents=True, exist_ok=True)
    old = Path(__file__).parent / "old_stores" / "profile_memory.db"
    (butler_home / "memory.db").write_bytes(old.read_bytes())  # 34 captured turns: due
    model = script({"text": "- moved to Porto [5, 6]\n- likes oat milk"})  # the summarizer
    child = spawn_butler([], butler_home, workdir, BUTLER_MODEL=model)
    child.logfile_read = screen = io.StringIO()
    child.expect("you ›")
    assert leave(child) == 0
    said = screen.getvalue()
    [fact] = json.loads(butler("memory", "list", "--new", "--json").stdout)[:1]
    assert fact["text"] == "moved to Porto", said
    assert "1 new fact about you" in said and f"- [{fact['id']}] moved to Porto" in said
    assert "oat milk" not in said.split("new fact")[1]
