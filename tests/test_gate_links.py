"""Issue 20, item 2: the gate's files are protected by what they are, not only by their path.
A hard link to the park key (or the stored keys, the config, the rule file) has another path
and the same inode: no file tool reads or writes it, and a sandboxed program cannot make one.
Every test runs the installed `butler` (and real bubblewrap where a program runs)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import call, tool_results

KEY = "ab" * 32 + "\n"


def gate_files(butler_home: Path, tmp_path: Path) -> dict[str, Path]:
    butler_home.mkdir()
    (butler_home / "park.key").write_text(KEY)
    (butler_home / "config.toml").write_text("max_rounds = 8\n")
    keys = tmp_path / "xdg-config" / "butler" / "keys.toml"
    keys.parent.mkdir(parents=True)
    keys.write_text('[file]\nMY_KEY = "sk-stored-LINKED-99"\n[keyring]\nnames = []\n')
    return {
        "park.key": butler_home / "park.key",
        "config": butler_home / "config.toml",
        "keys": keys,
    }


def test_a_hard_link_to_a_gate_file_is_refused_by_every_file_tool(
    butler: Any, script: Any, allow_all: list[str], butler_home: Path, workdir: Path, tmp_path
) -> None:
    files = gate_files(butler_home, tmp_path)
    calls = []
    for name, target in files.items():
        os.link(target, workdir / f"{name}.link")
        calls += [
            call("read_file", f"r-{name}", path=f"{name}.link"),
            call("write_file", f"w-{name}", path=f"{name}.link", content="pwned"),
        ]
    model = script({"tool_calls": calls}, {"text": "done"})
    r = butler("run", "--model", model, "go", "--json", *allow_all)
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    for res in results:
        assert "another name" in res["content"], res
    joined = r.stdout + r.stderr
    assert "abababab" not in joined and "LINKED" not in joined and "max_rounds" not in joined
    assert files["park.key"].read_text() == KEY
    assert files["config"].read_text() == "max_rounds = 8\n"


@pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("bwrap") is None, reason="bubblewrap is not installed"
)
def test_a_sandboxed_program_cannot_link_a_gate_file(
    butler: Any, script: Any, allow_all: list[str], butler_home: Path, workdir: Path, tmp_path
) -> None:
    """It cannot see them to link them: the home is an empty folder, a file is /dev/null on
    another mount (EXDEV)."""
    files = gate_files(butler_home, tmp_path)
    argvs = [["ln", str(p), str(workdir / f"{n}.l")] for n, p in files.items()]
    calls = [call("run_command", f"c{i}", argv=a) for i, a in enumerate(argvs)]
    r = butler("run", "--model", script({"tool_calls": calls}, {"text": "k"}), "go", "--json",
               *allow_all)  # fmt: skip
    assert r.returncode == 0, r.stderr
    for name, path in files.items():
        made = workdir / f"{name}.l"
        assert not made.exists() or not os.path.samefile(made, path), name
