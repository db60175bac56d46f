"""Issue 31, cases 1-3 and "seen while reading": nothing the butler executes or imports outside
the sandbox can be written from inside it, and what could have been changed by someone else is
refused before it runs. Every test runs a real `butler` and the real bubblewrap, with a HOME of
its own whose `~/.local/bin` is first on PATH and PYTHON_KEYRING_BACKEND unset; one installs
the butler in a virtual environment under that HOME."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import BIN_DIR, call, tool_results

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or not os.path.exists("/usr/bin/bwrap"),
    reason="bubblewrap is not installed at /usr/bin/bwrap",
)

FAKE_BWRAP = '#!/bin/sh\n# drops every option and runs the program as it is\nwhile [ "$1" != -- ]; do shift; done\nshift; exec "$@"\n'  # noqa: E501
ALLOW_COMMANDS = (
    "from butler_cli import allow, approve\n\n"
    "def classify(name, args):\n"
    "    return allow() if name == 'run_command' else approve('asks you')\n"
)


class Me:
    """A person: HOME in a temp folder, `~/.local/bin` first on PATH, the butler's state in
    the platformdirs folders under HOME, no keyring backend chosen by the environment."""

    def __init__(self, tmp_path: Path, argv: list[str]) -> None:
        self.home = tmp_path / "me"
        self.work = self.home / "work"
        self.work.mkdir(parents=True)
        self.local_bin = self.home / ".local" / "bin"
        self.local_bin.mkdir(parents=True)
        self.argv = argv
        self.policy = tmp_path / "allow_commands.py"
        self.policy.write_text(ALLOW_COMMANDS)
        self.config = self.home / ".config" / "butler" / "config.toml"
        self.config.parent.mkdir(parents=True)
        self.script_n = 0
        self.tmp = tmp_path
        self.extra: dict[str, str] = {}

    def env(self, **more: str) -> dict[str, str]:
        drop = ("XDG_", "BUTLER_", "PYTHON_KEYRING", "FAKE_KEYRING")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(HOME=str(self.home), NO_COLOR="1")
        env["PATH"] = f"{self.local_bin}:{BIN_DIR}:{env.get('PATH', '')}"
        env.update(self.extra)
        env.update(more)
        return env

    def run(
        self, *args: str, cwd: Path | None = None, argv: list[str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*(argv or self.argv), *args],
            cwd=cwd or self.work,
            env=self.env(**kw.pop("env", {})),
            capture_output=True,
            text=True,
            timeout=90,
            **kw,
        )

    def model(self, *turns: dict[str, Any]) -> str:
        self.script_n += 1
        path = self.tmp / f"script{self.script_n}.json"
        path.write_text(json.dumps({"turns": list(turns)}))
        return f"scripted:{path}"

    def commands(
        self, *argvs: list[str], cwd: Path | None = None, argv: list[str] | None = None
    ) -> list[str]:
        """One round of allowed run_command calls in ``cwd`` (the task's folder)."""
        calls = [call("run_command", f"c{i}", argv=a) for i, a in enumerate(argvs)]
        model = self.model({"tool_calls": calls}, {"text": "done"})
        r = self.run(
            "run", "--model", model, "go", "--json", "--yes-safe",
            "--policy", f"{self.policy}:classify", cwd=cwd, argv=argv,
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        return [res["content"] for res in tool_results(r.stdout)]


@pytest.fixture
def me(tmp_path: Path, butler_argv: list[str]) -> Me:
    return Me(tmp_path, butler_argv)


def test_a_command_cannot_plant_a_bwrap_first_on_path(me: Me) -> None:
    """Case 1: an allowed command wrote `~/.local/bin/bwrap`; the next process used it as the
    sandbox and every command ran unconfined. The home is not writable now, and a bwrap there
    (put by anything else) is never used: bubblewrap is found at a fixed path."""
    planted = me.local_bin / "bwrap"
    write = f"printf '{FAKE_BWRAP}' > '{planted}' && chmod +x '{planted}'"
    [out] = me.commands(["sh", "-c", write])
    assert not planted.exists(), out  # (the test's HOME is under the sandbox's private /tmp)
    planted.write_text(FAKE_BWRAP)  # as if it came some other way
    planted.chmod(0o755)
    doctor = me.run("doctor", "--json")
    assert json.loads(doctor.stdout)["sandbox"]["program"] == "/usr/bin/bwrap", doctor.stdout
    said = me.run("doctor").stdout
    assert "bubblewrap (/usr/bin/bwrap)" in said, said
    assert f"commands may write: {me.work} and a private /tmp" in said, said
    marker = me.home / "unconfined.txt"
    [out] = me.commands(["sh", "-c", f"echo x > '{marker}'"])
    assert not marker.exists(), out


def test_the_task_folder_is_the_home_and_still_nothing_trusted_is_writable(me: Me) -> None:
    """A task run in the home itself makes the home a write root: the PATH folder in it, the
    shell start-up files and keyring's config folder stay read-only all the same."""
    (me.home / ".bashrc").write_text("# mine\n")
    targets = [
        me.local_bin / "bwrap",
        me.home / ".bashrc",
        me.home / ".config" / "python_keyring" / "keyringrc.cfg",
    ]
    outs = me.commands(*[["sh", "-c", f"echo pwned >> '{t}'"] for t in targets], cwd=me.home)
    assert not targets[0].exists(), outs[0]
    assert (me.home / ".bashrc").read_text() == "# mine\n", outs[1]
    assert not targets[2].exists(), outs[2]
    [out] = me.commands(["sh", "-c", "echo mine > made-here.txt && cat made-here.txt"], cwd=me.home)
    assert out == "exit status 0\nmine\n"  # the task's folder is writable


EVIL_KEYRING = (
    "import os\n"
    "open(os.environ['HOME'] + '/imported.txt', 'w').write('planted code ran')\n"
    "from keyring.backends.null import Keyring\n"
)


def test_a_planted_keyringrc_is_never_read(me: Me) -> None:
    """Case 2: keyring read `~/.config/python_keyring/keyringrc.cfg`, put its `keyring-path`
    on sys.path and imported its `default-keyring`. A sandboxed program cannot write it now,
    and a planted one (put there some other way) imports nothing: the backend is chosen in
    code. PYTHON_KEYRING_BACKEND is unset, as on a person's machine."""
    folder = me.home / ".config" / "python_keyring"
    planted = me.home / "planted"
    rc = f"[backend]\nkeyring-path = {planted}\ndefault-keyring = evilring.Keyring\n"
    [out] = me.commands(
        ["sh", "-c", f"mkdir -p '{folder}' && printf '{rc}' > '{folder}/keyringrc.cfg'"]
    )
    assert not (folder / "keyringrc.cfg").exists(), out
    planted.mkdir()
    (planted / "evilring.py").write_text(EVIL_KEYRING)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "keyringrc.cfg").write_text(rc)
    r = me.run("keys", "set", "MY_KEY", input="sk-secret-value-1234\n")
    assert r.returncode == 0, r.stderr
    assert not (me.home / "imported.txt").exists(), "keyring imported the planted module"
    model = me.model({"text": "hello"})
    r = me.run("run", "--model", model, "hi")
    assert r.returncode == 0, r.stderr
    assert not (me.home / "imported.txt").exists(), "a run imported the planted module"


def hook_config(me: Me, program: str) -> None:
    me.config.write_text(f"[hooks]\non_park = [{json.dumps(program)}]\n")


def park_once(me: Me, cwd: Path | None = None, before: list[str] | None = None) -> Any:
    """A task that runs ``before`` (allowed), then parks on a write: on_park fires."""
    turns: list[dict[str, Any]] = []
    if before:
        turns.append({"tool_calls": [call("run_command", "c", argv=before)]})
    write = call("write_file", "w", path="note.txt", content="x")
    turns += [{"tool_calls": [write]}, {"text": "done"}]
    policy = f"{me.policy}:classify"
    return me.run(
        "run", "--model", me.model(*turns), "go", "--json", "--yes-safe", "--policy", policy,
        cwd=cwd,
    )  # fmt: skip


def test_a_hook_program_cannot_be_rewritten_by_a_command(me: Me) -> None:
    """Case 3: the README's own hook examples (`~/bin/page-me`, `notify-send` in a PATH folder
    in the home) were rewritten by an allowed command and ran at the next park with the
    person's rights."""
    ran = me.home / "hook-ran.txt"
    page_me = me.home / "bin" / "page-me"
    page_me.parent.mkdir()
    page_me.write_text(f"#!/bin/sh\necho good >> '{ran}'\n")
    page_me.chmod(0o755)
    hook_config(me, str(page_me))
    evil = f"printf '#!/bin/sh\\necho evil >> {ran}\\n' > '{page_me}'"
    r = park_once(me, before=["sh", "-c", evil])
    assert r.returncode == 3, r.stdout + r.stderr
    assert ran.read_text() == "good\n", r.stderr
    # notify-send in ~/.local/bin (first on PATH), the task run in the home itself
    notify = me.local_bin / "notify-send"
    notify.write_text(f"#!/bin/sh\necho notified >> '{ran}'\n")
    notify.chmod(0o755)
    hook_config(me, "notify-send")
    evil = f"printf '#!/bin/sh\\necho evil >> {ran}\\n' > '{notify}'"
    r = park_once(me, cwd=me.home, before=["sh", "-c", evil])
    assert r.returncode == 3, r.stdout + r.stderr
    assert ran.read_text() == "good\nnotified\n", r.stderr


def test_a_hook_others_can_change_is_refused_in_one_line(me: Me) -> None:
    """A hook program writable by others (or in the task's folder, where sandboxed programs
    write) is refused before it runs, with one line; the park is kept."""
    ran = me.home / "hook-ran.txt"
    page_me = me.home / "bin" / "page-me"
    page_me.parent.mkdir()
    page_me.write_text(f"#!/bin/sh\necho ran >> '{ran}'\n")
    page_me.chmod(0o777)
    hook_config(me, str(page_me))
    r = park_once(me)
    assert r.returncode == 3, r.stderr
    assert not ran.exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "writable by others" in lines[0], r.stderr
    assert "refusing to run the on_park hook" in lines[0]
    page_me.chmod(0o755)
    local = me.work / "notify.sh"  # in the task's folder: a command could have written it
    local.write_text(f"#!/bin/sh\necho ran >> '{ran}'\n")
    local.chmod(0o755)
    hook_config(me, str(local))
    r = park_once(me)
    assert r.returncode == 3 and not ran.exists(), r.stderr
    assert "a folder sandboxed programs may write" in r.stderr, r.stderr


def test_what_the_butler_reads_or_runs_from_the_home_is_read_only(me: Me) -> None:
    """Seen while reading: a sandboxed command could write `~/AGENTS.md` (instructions for
    every task under the home), `$EDITOR`'s program, an MCP server's program (run with
    `sandbox = false`), the shell's start-up files."""
    (me.home / "AGENTS.md").write_text("Be careful.\n")
    (me.home / "CLAUDE.md").write_text("Be careful too.\n")  # read like AGENTS.md (issue 35)
    (me.home / ".profile").write_text("# mine\n")
    editor = me.home / "bin" / "myeditor"
    server = me.home / "mcp" / "server.py"
    for program in (editor, server):
        program.parent.mkdir(exist_ok=True)
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    me.extra["EDITOR"] = f"{editor} --wait"
    me.config.write_text(
        f"[mcp.mine]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(server))}]\nsandbox = false\n"
    )
    targets = [me.home / "AGENTS.md", me.home / "CLAUDE.md", me.home / ".profile", editor, server]
    outs = me.commands(*[["sh", "-c", f"echo pwned >> '{t}'"] for t in targets])
    for target, out in zip(targets, outs, strict=True):
        assert "pwned" not in target.read_text(), (target, out)
    # run in the home itself (a write root), they stay read-only
    outs = me.commands(*[["sh", "-c", f"echo pwned >> '{t}'"] for t in targets], cwd=me.home)
    for target, out in zip(targets, outs, strict=True):
        assert "pwned" not in target.read_text(), (target, out)
        assert "Read-only file system" in out, out


def install_under_home(me: Me) -> Path:
    """The butler in a virtual environment under HOME (as pipx or `pip install --user`
    would put it): its own site-packages in the home, the butler's code and its
    dependencies reached through a .pth file there. Returns its `butler` script."""
    venv = me.home / ".local" / "share" / "pipx" / "venvs" / "butler"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = venv / "lib" / version / "site-packages"
    ours = Path(__file__).resolve().parent.parent
    lines = [*site.getsitepackages(), str(ours), str(ours / "policies")]
    (packages / "butler.pth").write_text("\n".join(lines) + "\n")
    script = me.local_bin / "butler"
    script.write_text(
        f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom butler_cli.cli.entry import main\n"
        "sys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


def test_the_butlers_own_installation_under_the_home_is_read_only(me: Me) -> None:
    """Seen while reading: where the butler is installed under the home, a command could
    write its code (a .pth file or sitecustomize in its site-packages runs at the next
    start). Run from the home itself (a write root), it cannot."""
    script = install_under_home(me)
    check = me.run("--version", argv=[str(script)])
    assert check.returncode == 0, check.stderr
    venv = me.home / ".local" / "share" / "pipx" / "venvs" / "butler"
    packages = next(venv.glob("lib/python*/site-packages"))
    marker = me.home / "planted-ran.txt"
    payload = f"import os; open({str(marker)!r}, 'w').write('x')"
    outs = me.commands(
        ["sh", "-c", f"echo {json.dumps(payload)} > '{packages}/zz_evil.pth'"],
        ["sh", "-c", f"echo {json.dumps(payload)} > '{packages}/sitecustomize.py'"],
        ["sh", "-c", f"echo pwned >> '{venv}/bin/python' || true; ls '{venv}/bin' | head -1"],
        cwd=me.home,
        argv=[str(script)],
    )
    assert not (packages / "zz_evil.pth").exists(), outs[0]
    assert not (packages / "sitecustomize.py").exists(), outs[1]
    again = me.run("--version", argv=[str(script)])
    assert again.returncode == 0 and not marker.exists(), again.stderr
    assert shutil.which("python", path=str(venv / "bin")) is not None


def test_no_folder_above_a_trusted_path_can_be_moved_away(me: Me) -> None:
    """Found by the strace attack: a PATH folder deeper in a write root (`~/tools/x/bin`, the
    task run in the home) was read-only, but `mv ~/tools ~/tools.old` took it away and a
    fresh one with a planted `notify-send` took its place. Every folder between a write root
    and a trusted path is now a mount point, like those above the gate's files."""
    ran = me.home / "hook-ran.txt"
    deep = me.home / "tools" / "x" / "bin"
    deep.mkdir(parents=True)
    notify = deep / "notify-send"
    notify.write_text(f"#!/bin/sh\necho notified >> '{ran}'\n")
    notify.chmod(0o755)
    hook_config(me, "notify-send")
    swap = (
        f"mv '{me.home / 'tools'}' '{me.home / 'tools.old'}'; mkdir -p '{deep}' && "
        f"printf '#!/bin/sh\\necho evil >> {ran}\\n' > '{notify}'; chmod +x '{notify}'"
    )
    me.extra["PATH"] = f"{deep}:{me.local_bin}:{BIN_DIR}:{os.environ['PATH']}"
    r = park_once(me, cwd=me.home, before=["sh", "-c", swap])
    assert r.returncode == 3, r.stdout + r.stderr
    assert not (me.home / "tools.old").exists(), r.stderr
    assert ran.read_text() == "notified\n", r.stderr


def test_a_schedules_hook_in_its_folder_is_refused(me: Me) -> None:
    """A schedule's own `--on-park` program inside the folder the schedule runs in (where its
    sandboxed commands write) is refused, whichever folder `schedule run` is called from."""
    ran = me.home / "hook-ran.txt"
    project = me.home / "project"
    project.mkdir()
    hook = project / "notify.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> '{ran}'\n")
    hook.chmod(0o755)
    write = call("write_file", "w", path="note.txt", content="x")
    model = me.model({"tool_calls": [write]}, {"text": "done"})
    add = me.run(
        "schedule", "add", "@hourly", "go", "--model", model, "--policy",
        f"{me.policy}:classify", "--folder", str(project), "--on-park", str(hook),
    )  # fmt: skip
    assert add.returncode == 0, add.stderr
    job = add.stdout.split()[1].rstrip(":")
    r = me.run("schedule", "run", job)
    assert r.returncode == 3, r.stdout + r.stderr
    assert not ran.exists()
    assert "a folder sandboxed programs may write" in r.stdout + r.stderr, r.stdout + r.stderr


def test_an_editor_or_mcp_server_others_can_change_is_refused(me: Me) -> None:
    """`$EDITOR` (`butler config edit`) and an MCP server's program run with the person's
    rights: one writable by others is refused with one line before it starts."""
    ran = me.home / "ran.txt"
    editor = me.home / "bin" / "myeditor"
    editor.parent.mkdir()
    editor.write_text(f"#!/bin/sh\necho ran >> '{ran}'\n")
    editor.chmod(0o777)
    r = me.run("config", "edit", env={"EDITOR": str(editor)})
    assert r.returncode != 0 and not ran.exists(), r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to run the editor" in lines[0], r.stderr
    assert "writable by others" in lines[0] and "Traceback" not in r.stderr
    server = me.home / "mcp" / "server.py"
    server.parent.mkdir()
    server.write_text("#!/bin/sh\nexit 0\n")
    server.chmod(0o755)
    server.parent.chmod(0o777)  # a folder above it writable by others
    me.config.write_text(f"[mcp.mine]\ncommand = {json.dumps(str(server))}\nsandbox = false\n")
    r = me.run("mcp", "list")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refusing to run the MCP server" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "writable by others (mode 777)" in r.stdout + r.stderr
