"""``butler --version`` and shell completion (bash, zsh, fish), through the installed `butler`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import butler_exe, call


def test_version(butler) -> None:
    for flag in ("--version", "-V"):
        r = butler(flag)
        assert r.returncode == 0 and r.stdout == f"butler {version('butler-cli')}\n", r.stderr
    assert "--version" in butler("--help").stdout


def test_version_stays_off_the_heavy_imports() -> None:
    probe = (
        "import sys; sys.argv = ['butler', '--version']\n"
        "from butler_cli.cli.entry import main\n"
        "main()\n"
        "heavy = sorted(m for m in ('typer', 'click', 'rich', 'prompt_toolkit', 'pydantic') "
        "if m in sys.modules)\n"
        "print(heavy)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]"


def complete(shell: str, words: str, home: Path) -> list[str]:
    """What the completion scripts ask `butler` for, the way each shell asks it."""
    env = {**os.environ, "BUTLER_HOME": str(home), "_BUTLER_COMPLETE": f"complete_{shell}"}
    if shell == "bash":
        parts = words.split(" ")
        env |= {"COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    else:
        env |= {"_TYPER_COMPLETE_ARGS": words, "_TYPER_COMPLETE_FISH_ACTION": "get-args"}
    r = subprocess.run(
        [butler_exe()],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


@pytest.fixture
def parked(butler, script) -> list[str]:
    model = script({"tool_calls": [call("write_file", "w1", path="p.txt", content="x")]})
    for _ in range(2):
        assert butler("run", "--model", model, "park it").returncode == 3
    return sorted(p["id"] for p in json.loads(butler("pending", "--json").stdout))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_offers_commands_options_and_park_ids(shell, parked, butler_home) -> None:
    commands = complete(shell, "butler re", butler_home)
    assert any("resume" in line for line in commands) and not any("run" in c for c in commands)
    assert any("--output" in line for line in complete(shell, "butler run --ou", butler_home))
    ids = "\n".join(complete(shell, "butler resume ", butler_home))
    assert all(park_id in ids for park_id in parked)
    first = parked[0]
    narrowed = "\n".join(complete(shell, f"butler show {first[:5]}", butler_home))
    assert first in narrowed and parked[1] not in narrowed.replace(first, "")


def test_a_decided_park_is_offered_by_show_not_by_resume(butler, parked, butler_home) -> None:
    assert butler("resume", parked[0], "--deny").returncode in (0, 1)
    assert parked[0] not in complete("bash", "butler resume ", butler_home)
    assert parked[0] in complete("bash", "butler show ", butler_home)


def test_the_bash_script_completes_in_a_real_bash(butler, parked, butler_home) -> None:
    script = butler("completion", "bash").stdout
    assert "_BUTLER_COMPLETE=complete_bash" in script
    probe = (
        f"{script}\n"
        'COMP_WORDS=(butler resume ""); COMP_CWORD=2\n'
        "_butler_completion butler\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {
        **os.environ,
        "BUTLER_HOME": str(butler_home),
        "PATH": f"{Path(butler_exe()).parent}:{os.environ['PATH']}",
    }
    r = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == parked


def test_completion_scripts_for_each_shell_and_a_refusal(butler) -> None:
    for shell, marker in [
        ("bash", "complete -o default"),
        ("zsh", "compdef"),
        ("fish", "complete --command butler"),
    ]:
        r = butler("completion", shell)
        assert r.returncode == 0 and marker in r.stdout and "_BUTLER_COMPLETE" in r.stdout
    r = butler("completion", "tcsh")
    assert r.returncode == 2 and "bash, zsh, fish" in r.stderr
    assert "--install-completion" in butler("--help").stdout


def test_a_completion_request_never_opens_the_chat(butler_home) -> None:
    # the shell runs plain `butler` with the variable set: the chat's fast path must step aside
    out = complete("bash", "butler ", butler_home)
    assert "run" in out and "resume" in out
