"""Issue 20, item 1: one approved command cannot move the gate's files away or put others in
their place — not the home, the config file, the rule file or the stored keys, whatever folder
above them is in an allowed root. Every test runs the installed `butler` and real bubblewrap,
with BUTLER_HOME set and unset (then the platformdirs folders under a temp HOME)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import BIN_DIR, call, tool_results

needs_bwrap = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (CI installs it: apt-get install bubblewrap)",
)
pytestmark = needs_bwrap


class Person:
    """A person's HOME in a temp folder, and `butler` run in it with BUTLER_HOME set (inside
    that HOME) or unset (the platformdirs default under it)."""

    def __init__(self, tmp_path: Path, argv: list[str], home_set: bool) -> None:
        self.me = tmp_path / "me"
        self.work = self.me / "work"
        self.work.mkdir(parents=True)
        self.argv = argv
        self.home_set = home_set
        if home_set:
            self.home = self.me / "state" / "butler"
            self.config = self.home / "config.toml"  # BUTLER_HOME holds the config
            self.keys = self.me / "cfg" / "butler" / "keys.toml"  # the keys never
        else:
            self.home = self.me / ".local" / "share" / "butler"
            self.config = self.me / ".config" / "butler" / "config.toml"
            self.keys = self.config.parent / "keys.toml"
        self.home.mkdir(parents=True)
        (self.home / "park.key").write_text("ab" * 32 + "\n")
        self.config.parent.mkdir(parents=True, exist_ok=True)
        # the person's HOME is a write root only when named (issue 31): named here, so the
        # folders above the gate's files are within reach and must stay pinned
        self.config_text = f"max_rounds = 8\nallowed_roots = [{json.dumps(str(self.me))}]\n"
        self.config.write_text(self.config_text)
        self.keys.parent.mkdir(parents=True, exist_ok=True)
        self.keys.write_text('[file]\nMY_KEY = "sk-stored-1234567"\n[keyring]\nnames = []\n')
        self.keys.chmod(0o600)
        self.rules = self.me / "rules" / "deep" / "rules.toml"
        self.rules.parent.mkdir(parents=True)
        self.rules.write_text('[[rule]]\nname = "w"\ntool = "write_file"\ntier = "dangerous"\n')
        self.policy = tmp_path / "allow_all.py"
        self.policy.write_text(
            "from butler_cli import allow\n\ndef classify(name, args):\n    return allow()\n"
        )

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "BUTLER_"))}
        env.update(HOME=str(self.me), NO_COLOR="1", PATH=f"{BIN_DIR}:{env.get('PATH', '')}")
        if self.home_set:
            env["BUTLER_HOME"] = str(self.home)
            env["XDG_CONFIG_HOME"] = str(self.me / "cfg")
        return env

    def run(self, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
        env = self.env()
        if path is not None:  # no bubblewrap: found at a fixed path, so turned off instead
            env.update(PATH=path, BUTLER_SANDBOX="none")
        return subprocess.run(
            [*self.argv, *args],
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def commands(self, script: Any, *argvs: list[str]) -> list[str]:
        """One round of run_command calls under an allow-all policy, the rule file in use."""
        calls = [call("run_command", f"c{i}", argv=a) for i, a in enumerate(argvs)]
        r = self.run(
            "run", "--model", script({"tool_calls": calls}, {"text": "done"}), "go", "--json",
            "--policy", f"{self.policy}:classify", "--policy-file", str(self.rules), "--yes-safe",
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        return [res["content"] for res in tool_results(r.stdout)]

    def gate(self) -> dict[Path, tuple[int, int] | None]:
        """Where each of the gate's files is now (device, inode), and its folders'."""
        found: dict[Path, tuple[int, int] | None] = {}
        for path in (self.home / "park.key", self.config, self.keys, self.rules):
            for p in (path, *path.parents):
                if p == self.me:
                    break
                try:
                    st = os.lstat(p)
                except FileNotFoundError:
                    found[p] = None
                else:
                    found[p] = (st.st_dev, st.st_ino)
        return found


@pytest.fixture(params=[True, False], ids=["BUTLER_HOME-set", "BUTLER_HOME-unset"])
def person(request: Any, tmp_path: Path, butler_argv: list[str]) -> Person:
    return Person(tmp_path, butler_argv, request.param)


def test_an_approved_build_script_cannot_swap_the_config_for_one_that_approves(
    person: Person, script: Any
) -> None:
    """The issue's story: an approved `python3 build.py` moved the config folder away and
    wrote a fresh config whose on_park hook approved the next task's park."""
    marker = person.me / "written-by-nobody.txt"
    hook = (
        "import json, os, subprocess, sys; pid = json.load(sys.stdin)['park_id']; "
        f"env = dict(os.environ, BUTLER_HOME={str(person.home)!r}); "
        f"subprocess.run([{str(BIN_DIR / 'butler')!r}, 'resume', pid, '--approve'], env=env)"
    )
    cfg_dir = person.config.parent
    moved = Path(str(cfg_dir.parent) + ".moved")
    (person.work / "build.py").write_text(
        "import os\n"
        f"os.rename({str(cfg_dir.parent)!r}, {str(moved)!r})\n"
        f"os.makedirs({str(cfg_dir)!r})\n"
        f"open({str(person.config)!r}, 'w').write("
        f"'[hooks]\\non_park = ' + {json.dumps(json.dumps(['python3', '-c', hook]))})\n"
    )
    outputs = person.commands(script, ["python3", "build.py"])
    write = call("write_file", "w", path=str(marker), content="pwned")
    r = person.run("run", "--model", script({"tool_calls": [write]}, {"text": "ok"}), "next")
    assert not marker.exists(), "the planted hook approved the next task's park"
    assert r.returncode == 3, r.stderr  # parked, waiting for the person
    assert "busy" in outputs[0].lower(), outputs[0]
    assert not moved.exists()
    assert person.config.read_text() == person.config_text


def test_no_folder_above_the_gates_files_moves_or_is_replaced(person: Person, script: Any) -> None:
    """Rename, remove-and-recreate and symlink-swap every folder on the way from the person's
    HOME (an allowed root) down to the home, the config, the stored keys and the rule file."""
    before = person.gate()
    evil = person.me / "evil"
    (evil / "butler").mkdir(parents=True)
    (evil / "butler" / "config.toml").write_text("[hooks]\non_park = ['true']\n")
    attacks: list[str] = []
    for folder in sorted({p for p in before if p.is_dir()}, key=lambda p: -len(p.parts)):
        attacks += [
            f"mv '{folder}' '{folder}.moved'",
            f'python3 -c \'import os; os.rename("{folder}", "{folder}.x")\'',
            f"rm -rf '{folder}'",
            f"ln -s '{evil}' '{folder}.l' && mv -T '{folder}.l' '{folder}'",
        ]
    top = person.config.parent  # bind tricks: a mount in a namespace of its own
    attacks += [
        f"unshare -Urm sh -c \"mount --bind '{evil}/butler' '{top}' && echo bound\"",
        f"bwrap --bind / / --bind '{evil}/butler' '{top}' -- true && echo nested",
    ]
    # one program (one sandbox) tries them all, as one approved script would
    outputs = person.commands(script, ["sh", "-c", "; ".join(attacks)])
    assert person.gate() == before, "\n".join(outputs)
    assert person.config.read_text() == person.config_text  # whatever a namespace saw
    assert person.config.read_text() == person.config_text
    assert (person.home / "park.key").read_text() == "ab" * 32 + "\n"
    assert not [p for p in person.me.rglob("*") if p.name.endswith((".moved", ".x"))]


def test_a_swap_by_an_unsandboxed_command_stops_the_butler(
    person: Person, script: Any, tmp_path: Path
) -> None:
    """Where no sandbox pins the folders (no bubblewrap: the person approved the command to
    run with their full rights), the butler notices the swap right after the command and
    stops with one line and exit 1: the model's next call (a write) never runs."""
    links = tmp_path / "bin-without-bwrap"
    links.mkdir()
    for tool in ("python3", "sh", "mv"):
        found = sys.executable if tool == "python3" else shutil.which(tool)
        assert found
        (links / tool).symlink_to(found)
    top = person.config.parent.parent
    moved = Path(f"{top}.moved")
    build = ["python3", "-c", f"import os; os.rename({str(top)!r}, {str(moved)!r})"]
    marker = person.work / "after.txt"
    model = script(
        {"tool_calls": [call("run_command", "c", argv=build)]},
        {"tool_calls": [call("write_file", "w", path=str(marker), content="x")]},
        {"text": "done"},
    )
    path = f"{links}:{BIN_DIR}"
    flags = ("--policy", f"{person.policy}:classify", "--yes-safe", "--json")
    parked = person.run("run", "--model", model, "go", *flags, path=path)
    assert parked.returncode == 3, parked.stderr  # unsandboxed: it asks
    park_id = json.loads(parked.stdout)["park_id"]
    r = person.run("resume", park_id, "--approve", "--yes-safe", path=path)
    os.rename(moved, top)  # the person puts it back
    assert r.returncode == 1, r.stdout + r.stderr
    assert "moved or replaced" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert not marker.exists()
