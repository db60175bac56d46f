"""The inbox's live update knows what changed without looking at every park: a watch on the
folders (inotify, inside the app's lifespan) — and it sees what a look at names and times
misses: a park file rewritten in place with its time put back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from serve_support import park_writing, served_fixture  # noqa: F401 (a fixture)


def parked_write(butler: Any, script: Any) -> str:
    return park_writing(butler, script, "out.txt", "ok", content="v1", task="write the report")


def version_of(s: Any) -> str:
    status, body = s.request("/parts?v=")
    assert status == 200, body
    return str(json.loads(body)["version"])


def rewrite_in_place_keeping_its_time(path: Path) -> None:
    """The park's task changed, in the same file, at the same size, its time put back."""
    before = os.stat(path)
    data = path.read_bytes()
    tampered = data.replace(b"write the report", b"wipe  the report", 1)
    assert len(tampered) == len(data) and tampered != data
    fd = os.open(path, os.O_WRONLY)  # the same file, the same size, written in place
    try:
        os.write(fd, tampered)
    finally:
        os.close(fd)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # ...its time put back
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def test_a_park_rewritten_in_place_with_its_time_put_back_is_seen(
    served: Any, butler: Any, script: Any, butler_home: Path
) -> None:
    park_id = parked_write(butler, script)
    s = served("--no-scheduler")
    seen = version_of(s)
    if sys.platform == "linux":
        assert seen.startswith("w"), "the version is the watch's, not a scan's"
    assert s.request(f"/parts?v={seen}")[0] == 204
    rewrite_in_place_keeping_its_time(butler_home / "parks" / f"{park_id}.json")
    status, body = s.request(f"/parts?v={seen}")
    assert status == 200, "the live update said nothing changed"
    parks = json.loads(body)["parks"]
    assert "authenticity" in parks and "wipe  the report" not in parks


def test_the_live_update_sees_a_new_park_a_decision_and_an_outcome(
    served: Any, butler: Any, script: Any, butler_home: Path
) -> None:
    s = served("--no-scheduler")
    empty = version_of(s)
    park_id = parked_write(butler, script)
    status, body = s.request(f"/parts?v={empty}")
    assert status == 200 and park_id in json.loads(body)["parks"]
    one = json.loads(body)["version"]
    assert s.request(f"/parts?v={one}")[0] == 204
    assert butler("resume", park_id, "--deny").returncode == 0  # decided in a terminal
    status, body = s.request(f"/parts?v={one}")
    assert status == 200 and park_id not in json.loads(body)["parks"]


def test_without_a_watch_the_scan_sees_the_rewrite_too(
    butler: Any, script: Any, butler_home: Path
) -> None:
    """Where there is no watch (not Linux) the page looks at every park: by its change time
    too. The real app, in process, without its lifespan — so without the watch."""
    from starlette.testclient import TestClient

    from butler_cli.serve.app import Settings, create_app
    from butler_cli.serve.decide import Decider

    park_id = parked_write(butler, script)
    settings = Settings(butler_home, "127.0.0.1", 8080)
    client = TestClient(
        create_app(settings, Decider(butler_home)), base_url="http://127.0.0.1:8080"
    )
    auth = {"Authorization": f"Bearer {settings.token}"}
    seen = client.get("/parts?v=", headers=auth).json()["version"]
    assert not seen.startswith("w")
    assert client.get(f"/parts?v={seen}", headers=auth).status_code == 204
    rewrite_in_place_keeping_its_time(butler_home / "parks" / f"{park_id}.json")
    answer = client.get(f"/parts?v={seen}", headers=auth)
    assert answer.status_code == 200 and "authenticity" in answer.json()["parks"]
