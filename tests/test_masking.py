"""One masking step for every line a person or a hook reads: a park's title, the on_park
event, a schedule's records, the server's log, and what a model sends back — each tried with
a secret the butler knows (or an argument named like a credential), through the installed
`butler`, real files, a real `butler serve` and a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conftest import call
from fake_llm import Reply, openai_stream
from serve_support import eventually, start_serve
from test_hooks import configure, events, toml_argv
from test_keys import files_holding

from butler_cli.schedule.store import ScheduleStore

PASSWORD = "hunter2-PWCANARY"
TOKEN = "tok-APITOKENCANARY-0123456789"
LONG = "L0NGSECRET" * 30  # cut in a title past 120 characters: its first part used to show


def test_credential_named_arguments_are_masked_in_every_title(
    butler: Any, butler_home: Path, workdir: Path, script: Any, tmp_path: Path
) -> None:
    """`password`, `api_token` and a long `client_secret` were `****` in the arguments but
    shown whole in the title of the run's report, `pending`, `show`, the inbox card and the
    on_park event (which a URL hook sends off the machine); the long one was cut in the title,
    and its first 60 characters showed. Now the title is made from the masked arguments."""
    recorder = tmp_path / "recorder.py"
    recorder.write_text(
        "import sys\nopen(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')\n", encoding="utf-8"
    )
    out = tmp_path / "events.jsonl"
    configure(butler_home, f"on_park = {toml_argv(sys.executable, str(recorder), str(out))}")
    args = {"path": "notes.txt", "content": "hello", "password": PASSWORD}
    args |= {"api_token": TOKEN, "client_secret": LONG}
    model = script({"tool_calls": [call("write_file", "c1", **args)]}, {"text": "ok"})
    ran = butler("run", "--model", model, "write the notes", "--json")
    assert ran.returncode == 3, ran.stderr
    pid = json.loads(ran.stdout)["park_id"]
    title = json.loads(ran.stdout)["approval"]["title"]
    assert title == f"write_file: {workdir / 'notes.txt'} (5 characters, 1 line)", title
    # The exact call stays in the park and in `show --json`'s messages (it is what runs);
    # every title, and every line a person reads, is masked.
    shown = [title, ran.stderr, out.read_text()]
    for argv in (("pending",), ("show", pid)):
        done = butler(*argv)
        assert done.returncode == 0, done.stderr
        shown += [done.stdout, done.stderr]
    shown += [p["title"] for p in json.loads(butler("pending", "--json").stdout)]
    shown.append(json.loads(butler("show", pid, "--json").stdout)["approval"]["title"])
    served = start_serve(butler_home, workdir, "--no-scheduler")
    try:
        shown += [served.request("/")[1], served.request(f"/park/{pid}")[1]]
    finally:
        shown.append(served.stop())
    assert [e["title"] for e in events(out)] == [title]
    everything = "\n".join(shown)
    assert f"park {pid}" in everything or pid in everything  # the surfaces were read at all
    for secret in (PASSWORD, TOKEN, LONG[:20]):
        assert secret not in everything, secret


HOOK_LEAK = (
    "import sys\n"
    "sys.stderr.write('cannot notify: key ' + open(sys.argv[1]).read().strip())\n"
    "sys.exit(1)\n"
)


def test_a_schedules_hook_failure_is_masked_wherever_it_is_kept_or_shown(
    butler: Any, butler_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """A schedule's --on-park hook fails quoting a key the butler knows (a configured key
    file): `schedule run` (text and --json), schedule.db, the inbox page and `butler serve`'s
    own log all showed it whole, while the same failure from a [hooks] hook was masked."""
    canary = "sk-canary-SCHEDULEHOOK-0123456789"
    key_file = tmp_path / "key.txt"
    key_file.write_text(canary + "\n")
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK_LEAK)
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "config.toml").write_text(
        f'[providers.openai]\napi_key_file = "{key_file}"\n', encoding="utf-8"
    )
    plan = Path(__file__).resolve().parent.parent / "examples" / "plan.json"
    added = butler(
        "schedule", "add", "@hourly", "plan", "--model", f"scripted:{plan}",
        "--folder", str(workdir), "--on-park", f"{sys.executable} {hook} {key_file}",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    job_id = added.stdout.split()[1].rstrip(":")
    text = butler("schedule", "run", job_id)
    as_json = butler("schedule", "run", job_id, "--json")
    assert text.returncode == 3 and "exited 1" in text.stderr, text.stderr
    assert json.loads(as_json.stdout)["hook"].startswith("on-park hook")
    shown = [text.stdout, text.stderr, as_json.stdout, as_json.stderr]
    for park in json.loads(butler("pending", "--json").stdout):  # a schedule whose last run
        assert butler("resume", park["id"], "--deny").returncode == 0  # waits is not run again
    store = ScheduleStore(butler_home)
    store.set_next_due(job_id, datetime.now(UTC))
    served = start_serve(butler_home, workdir)
    try:
        eventually(lambda: len([r for r in store.runs() if r.hook]) == 3)
        shown.append(served.request("/")[1])
    finally:
        shown.append(served.stop())
    everything = "\n".join(shown)
    assert everything.count("****") >= 4, everything  # each surface showed the masked line
    assert canary not in everything
    assert files_holding(butler_home, canary) == []  # schedule.db (and its WAL) included


KEY = "sk-live-ECHOCANARY-0123456789abcdef"


def test_a_key_the_model_server_echoes_is_masked_before_anything_keeps_or_shows_it(
    butler: Any, butler_home: Path, workdir: Path, fake: Any
) -> None:
    """A model server that echoes the key it was sent — in its streamed text (split across
    chunks) and in a tool call's arguments: the screen, the --json report, the park,
    conversations.db and memory.db all held it. Now it is masked as it arrives."""
    args = json.dumps({"path": "k.txt", "content": f"the key is {KEY}"})
    fake.replies = [
        Reply(events=openai_stream(f"Sure. Your key is {KEY}, remember it.")),
        Reply(events=openai_stream(f"Writing {KEY}", [("c1", "write_file", [args])])),
        Reply(events=openai_stream(f"Streamed: {KEY} again")),  # split inside the key
    ]
    flags = ["--model", "openai:gpt-test", "--base-url", fake.url + "/v1"]
    env = {"OPENAI_API_KEY": KEY}
    first = butler("run", *flags, "what is my key", env=env)
    second = butler("run", *flags, "write it down", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 3, second.stderr
    assert "Your key is ****" in first.stdout, first.stdout
    streamed = butler("run", *flags, "once more", "--output", "stream-json", env=env)
    deltas = [
        e["delta"] for e in map(json.loads, streamed.stdout.splitlines()) if e["type"] == "text"
    ]
    assert "".join(deltas) == "Streamed: **** again", deltas  # each piece masked, none cut
    assert KEY[:12] not in streamed.stdout
    pid = json.loads(second.stdout)["park_id"]
    shown = [first.stdout, first.stderr, second.stdout, second.stderr]
    for argv in (("pending",), ("show", pid, "--json"), ("log",), ("memory", "list")):
        done = butler(*argv)
        shown += [done.stdout, done.stderr]
    assert KEY not in "\n".join(shown)
    assert files_holding(butler_home, KEY) == []
    assert files_holding(workdir, KEY) == []
