"""The config file as a person keeps it: written with tomlkit (comments, unicode, [mcp]
tables survive `config set`), read back by every later command, and `config get / unset /
edit` say where each value comes from and refuse to leave a broken file unreported."""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib

from conftest import json_lines


def test_config_set_writes_unicode_that_toml_accepts(butler, butler_home, script) -> None:
    """Today's writer used json.dumps: an emoji became a surrogate escape TOML forbids, and
    every later command exited 2."""
    r = butler("config", "set", "system", 'Be brief 😀 — ünïcödé "quoted" \\ back')
    assert r.returncode == 0, r.stderr
    text = (butler_home / "config.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text)["system"] == 'Be brief 😀 — ünïcödé "quoted" \\ back'
    shown = butler("config", "show")
    assert shown.returncode == 0, shown.stderr
    model = script({"text": "ok"})
    ran = butler("run", "--model", model, "hi", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json_lines(ran.stdout)[0]["text"] == "ok"


def test_config_set_keeps_comments_and_mcp_tables(butler, butler_home) -> None:
    butler_home.mkdir()
    original = (
        "# my butler\n"
        'model = "scripted:x.json"  # the offline one\n'
        "\n"
        "[mcp.notes]  # my notes server\n"
        f'command = "{sys.executable}"\n'
        'args = ["-c", "pass"]\n'
    )
    (butler_home / "config.toml").write_text(original)
    r = butler("config", "set", "max_rounds", "5")
    assert r.returncode == 0, r.stderr
    text = (butler_home / "config.toml").read_text()
    assert "# my butler" in text and "# the offline one" in text and "# my notes server" in text
    data = tomllib.loads(text)
    assert data["max_rounds"] == 5 and data["mcp"]["notes"]["args"] == ["-c", "pass"]
    assert stat.S_IMODE(os.stat(butler_home / "config.toml").st_mode) == 0o600


def test_config_set_refuses_a_value_that_would_break_the_file(butler, butler_home) -> None:
    assert butler("config", "set", "smtp.tls", "starttls").returncode == 0
    before = (butler_home / "config.toml").read_bytes()
    r = butler("config", "set", "smtp.tls", "carrier-pigeon")
    assert r.returncode == 2 and "smtp.tls" in r.stderr and "Traceback" not in r.stderr
    assert (butler_home / "config.toml").read_bytes() == before


def test_config_get_names_where_each_value_comes_from(butler, butler_home) -> None:
    assert butler("config", "set", "model", "scripted:from-file.json").returncode == 0

    def got(*args: str, env: dict[str, str] | None = None) -> dict:
        r = butler("config", "get", *args, "--json", env=env)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    assert got("model") == {
        "key": "model",
        "value": "scripted:from-file.json",
        "source": f"file {butler_home / 'config.toml'}",
    }
    assert got("model", env={"BUTLER_MODEL": "scripted:env.json"})["source"] == "env BUTLER_MODEL"
    flagged = got("model", "--model", "scripted:flag.json", env={"BUTLER_MODEL": "x:y"})
    assert flagged["value"] == "scripted:flag.json" and flagged["source"] == "flag"
    assert got("max_rounds") == {"key": "max_rounds", "value": 8, "source": "default"}
    assert got("providers.ollama.base_url")["value"] == "http://localhost:11434/v1"
    text = butler("config", "get", "model")
    assert "scripted:from-file.json" in text.stdout and "file" in text.stdout
    bad = butler("config", "get", "nonsense")
    assert bad.returncode == 2 and "unknown key 'nonsense'" in bad.stderr


def test_config_unset_removes_a_key_and_keeps_the_rest(butler, butler_home) -> None:
    butler_home.mkdir()
    (butler_home / "config.toml").write_text(
        '# keep me\nmodel = "scripted:x.json"\nmax_rounds = 3\n\n[aliases]\nfast = "openai:m"\n'
    )
    assert butler("config", "unset", "max_rounds").returncode == 0
    assert butler("config", "unset", "aliases.fast").returncode == 0
    text = (butler_home / "config.toml").read_text()
    assert "# keep me" in text and tomllib.loads(text) == {"model": "scripted:x.json"}
    again = butler("config", "unset", "max_rounds")
    assert again.returncode == 2 and "not set" in again.stderr
    got = json.loads(butler("config", "get", "max_rounds", "--json").stdout)
    assert got["source"] == "default"


def test_config_edit_opens_the_editor_and_reports_a_broken_file(butler, butler_home, tmp_path):
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import os, sys\n"
        "with open(sys.argv[1], 'a', encoding='utf-8') as fh:\n"
        "    fh.write(os.environ['APPEND'])\n"
    )
    env = {"EDITOR": f"{sys.executable} {editor}", "VISUAL": ""}
    ok = butler("config", "edit", env={**env, "APPEND": 'system = "Sé breve 😀"\n'})
    assert ok.returncode == 0, ok.stderr
    assert tomllib.loads((butler_home / "config.toml").read_text())["system"] == "Sé breve 😀"
    broken = butler("config", "edit", env={**env, "APPEND": "max_rounds = = 3\n"})
    assert broken.returncode == 2 and "config.toml" in broken.stderr and "line" in broken.stderr
    assert "Traceback" not in broken.stderr
    assert (butler_home / "config.toml").read_text().endswith("max_rounds = = 3\n")  # as written
    wrong = butler("config", "edit", env={**env, "APPEND": "", "EDITOR": "false"})
    assert wrong.returncode == 2 and "exited with 1" in wrong.stderr


def test_the_sandbox_table_is_a_section_like_a_plug_ins(butler, butler_home) -> None:
    """[sandbox] is read as a section of declared rows, as [smtp] is (issue 33): `config show`
    lists its keys in effect — it did not before — and what `config set` writes reaches
    `doctor` (and run_command) through that one section."""
    shown = json.loads(butler("config", "show", "--json").stdout)
    assert shown["sections"]["sandbox"] == {"network": True}  # the default, in effect
    assert butler("config", "set", "sandbox.network", "false").returncode == 0
    shown = json.loads(butler("config", "show", "--json").stdout)
    assert shown["sections"]["sandbox"] == {"network": False}
    doctor = json.loads(butler("doctor", "--json").stdout)
    assert doctor["sandbox"]["network"] is False
    (butler_home / "config.toml").write_text('[sandbox]\nnetwork = "no"\n', encoding="utf-8")
    bad = butler("doctor")
    assert bad.returncode == 2 and "sandbox.network must be true or false" in bad.stderr
