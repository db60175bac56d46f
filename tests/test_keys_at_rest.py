"""Issue 20, item 3: keys at rest. A file keyring that keeps a key readable (keyrings.alt's
PlaintextKeyring, which keyring picks by itself on a headless machine) is never used; its
folder is off limits to tools and hidden from programs; a secret is masked in its common
encodings too; the park key is a secret like any other. Through the installed `butler`."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import call, tool_results

CANARY = "sk-stored-CANARY/+&=?4b1"
PLAINTEXT = "keyrings.alt.file.PlaintextKeyring"


def forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [
        secret,
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        quote(secret, safe=""),
        raw.hex(),
    ]


@pytest.fixture
def person(tmp_path: Path) -> dict[str, str]:
    """A temp HOME whose config and data dirs are inside it, a plaintext keyring selected."""
    pytest.importorskip("keyrings.alt")
    home = tmp_path / "person"
    home.mkdir()
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PYTHON_KEYRING_BACKEND": PLAINTEXT,
    }


def holding(root: Path, needles: list[str]) -> list[Path]:
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and any(n.encode() in p.read_bytes() for n in needles)
    ]


def test_a_plaintext_keyring_is_never_used(butler: Any, person: dict[str, str]) -> None:
    r = butler("keys", "set", "ANTHROPIC_API_KEY", input=CANARY + "\n", env=person)
    assert r.returncode == 0, r.stderr
    assert "system keyring" not in r.stdout
    keyring_dir = Path(person["XDG_DATA_HOME"]) / "python_keyring"
    assert not keyring_dir.exists() or holding(keyring_dir, forms(CANARY)[:3]) == []
    keys_file = Path(person["XDG_CONFIG_HOME"]) / "butler" / "keys.toml"
    assert stat.S_IMODE(os.stat(keys_file).st_mode) == 0o600
    assert CANARY in keys_file.read_text()
    got = butler("keys", "list", env=person)
    assert got.stdout.split() == ["ANTHROPIC_API_KEY"]


def test_a_keyring_file_is_off_limits_and_encoded_secrets_are_masked(
    butler: Any, script: Any, allow_all: list[str], person: dict[str, str]
) -> None:
    """A keyring file an earlier version left (the key base64-encoded in it): read_file is
    refused and a program sees nothing there. A known secret printed base64-, URL- or
    hex-encoded by a program, or echoed so by the model, is masked in what is shown."""
    keyring_dir = Path(person["XDG_DATA_HOME"]) / "python_keyring"
    keyring_dir.mkdir(parents=True)
    cfg = keyring_dir / "keyring_pass.cfg"
    cfg.write_text(f"[butler]\nmy_key = {base64.b64encode(b'sk-OLD-KEY-in-keyring').decode()}\n")
    env = {**person, "SOME_SERVICE_TOKEN": CANARY}
    printed = "; ".join(f"print({f!r}[::-1][::-1])" for f in forms(CANARY)[1:])
    model = script(
        {
            "tool_calls": [
                call("read_file", "a", path=str(cfg)),
                call("run_command", "b", argv=["cat", str(cfg)]),
                call("run_command", "c", argv=["python3", "-c", printed]),
            ]
        },
        {"text": "echoed: " + " ".join(forms(CANARY)[1:])},
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all, env=env)
    assert r.returncode == 0, r.stderr
    results = [res["content"] for res in tool_results(r.stdout)]
    assert "off limits" in results[0], results[0]
    assert "c2stT0xE" not in r.stdout  # the old keyring's base64
    for form in forms(CANARY):
        assert form not in r.stdout + r.stderr, form
    assert results[2].count("****") == 4, results[2]


def test_the_park_key_is_masked_in_every_result(
    butler: Any, script: Any, allow_all: list[str], butler_home: Path
) -> None:
    """Whatever brings the park key back (a server that could read the home, a model that
    echoes it) shows it as ****."""
    butler_home.mkdir()
    key = "0123456789abcdef" * 4
    (butler_home / "park.key").write_text(key + "\n")
    model = script(
        {"tool_calls": [call("run_command", "a", argv=["python3", "-c", f"print({key!r})"])]},
        {"text": f"the key is {key}"},
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all)
    assert r.returncode == 0, r.stderr
    assert key not in r.stdout + r.stderr
    assert "****" in tool_results(r.stdout)[0]["content"]


def test_a_key_dumped_wrapped_is_masked(
    butler: Any, script: Any, allow_all: list[str], workdir: Path, butler_home: Path
) -> None:
    """Issue 31, case 8: `base64` wraps at 76 columns, `base64 -w 16` at 16, `xxd -p` at 60,
    so a known key a program dumped so reached the model, the screen and the park whole. It is
    masked across the line breaks, at whatever offset the file holds it."""
    key = "sk-proj-" + "Zq3_wX9-mT" * 9  # long enough to wrap even at 76 columns
    (workdir / "key.txt").write_text(key + "\n")
    (workdir / ".env").write_text(f"SOME_SERVICE_TOKEN={key}\n")  # at offset 19: 1 mod 3
    (workdir / "k2").write_text(f"K={key}\n")  # 2 mod 3
    dump = "base64 key.txt; base64 -w 16 .env; base64 k2; xxd -p key.txt; xxd -p .env"
    model = script(
        {"tool_calls": [call("run_command", "d", argv=["sh", "-c", dump])]}, {"text": "dumped"}
    )
    r = butler("run", "--model", model, "go", "--json", *allow_all, env={"SOME_SERVICE_TOKEN": key})
    assert r.returncode == 0, r.stderr
    (result,) = tool_results(r.stdout)
    assert result["content"].startswith("exit status 0") and result["content"].count("****") == 5
    raw = key.encode()
    pieces = [raw.hex()[8:40]]
    for shift in (0, 1, 2):
        core = base64.b64encode(bytes(shift) + raw).decode()[4:-8]
        pieces += [core[:16], core[-16:]]
    kept = b"".join(p.read_bytes() for p in butler_home.rglob("*") if p.is_file())
    for text in (r.stdout, kept.decode("utf-8", "replace")):
        compact = "".join(text.replace("\\n", "\n").split())
        for piece in pieces:
            assert piece not in compact, piece
