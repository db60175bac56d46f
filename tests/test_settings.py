"""Every setting is declared once (butler_cli/app/config/settings.py, or a plug-in's section in the
``butler.settings`` entry points) and every reader derives from that row: the file check,
`config set`/`get`, the environment and the defaults. A new row is tested here without another
line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from butler_cli.app.config.config import plugin_sections
from butler_cli.app.config.settings import SETTINGS, Setting

#: The butler's own rows and every installed plug-in section's (send_email's [smtp] among them).
ALL = [*SETTINGS, *(row for rows in plugin_sections().values() for row in rows)]

SAMPLES: dict[type[Any], tuple[str, Any]] = {
    str: ("sample-value", "sample-value"),
    int: ("17", 17),
    float: ("2.5", 2.5),
    bool: ("false", False),
    list: ("/tmp/a, /tmp/b", ["/tmp/a", "/tmp/b"]),
}


def get(butler: Any, key: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    r = butler("config", "get", key, "--json", env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("setting", [s for s in ALL if s.settable], ids=lambda s: s.key)
def test_each_declared_setting_is_read_set_and_defaulted_from_its_row(
    butler: Any, setting: Setting
) -> None:
    before = get(butler, setting.key)
    assert (before["value"], before["source"]) == (
        (setting.default, "default") if setting.default is not None else (None, "default")
    )
    text, typed = SAMPLES[setting.kind]
    if setting.choices:
        text = typed = setting.choices[-1]
    r = butler("config", "set", setting.key, text)
    assert r.returncode == 0, r.stderr
    after = get(butler, setting.key)
    assert after["value"] == typed and after["source"].startswith("file ")
    if setting.env:
        over = get(butler, setting.key, env={setting.env: text})
        assert over["value"] == typed and over["source"] == f"env {setting.env}"


@pytest.mark.parametrize(
    "setting", [s for s in ALL if s.kind in (int, float, bool) or s.choices], ids=lambda s: s.key
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_key(butler: Any, setting: Setting) -> None:
    r = butler("config", "set", setting.key, "not-a-value")
    assert r.returncode == 2 and setting.key in r.stderr and "Traceback" not in r.stderr
