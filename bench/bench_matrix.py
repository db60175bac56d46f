"""A decision from the Matrix room beside one from the inbox, and a Synapse round trip, in the
same run on the same `butler serve`; then the serve process's memory over 1,000 chat messages.

Needs Synapse (``.ci/run`` installs it in ``.synapse/``, or set ``BUTLER_TEST_SYNAPSE`` to a
python that has it) and matrix-nio. Each sample parks a fresh `write_file` with `butler run` (a
scripted model, one model for all: the server's kept session), then approves it:

- **inbox**: a POST of Approve, until the task's outcome is recorded (as bench_decide.py);
- **matrix**: a reply `approve` to the park's card sent by the person's client (matrix-nio),
  until the butler's answer (which carries the outcome) reaches that client;
- **round trip**: a message from the person to an echo client and its answer back, through
  the same Synapse — what any decision from a phone pays on top of the decision itself.

Run: python bench/bench_matrix.py [RUNS] [MESSAGES]  (default 9 and 1000; Markdown tables)
Target (issue 37): matrix ≤ inbox + round trip; the RSS flat over the messages.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_decide import outcome_of, park, post_decision  # noqa: E402
from bench_inbox import start_serve  # noqa: E402
from common import compile_checkouts  # noqa: E402
from matrix_person import Person  # noqa: E402
from synapse_support import shared_synapse  # noqa: E402

from butler_cli.store.outcomes import OutcomeLog  # noqa: E402

CARD = "🛎 butler: waiting for your decision"


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def echo(url: str, user: str, password: str, room: str, stop: threading.Event) -> None:
    """A second client that answers every message of the person's with "echo"."""
    bot = Person(url, user, password)
    bot.login()
    bot.join(room)
    bot.sync(0)
    done = len(bot.seen)
    while not stop.is_set():
        bot.sync(500)
        for ev in bot.seen[done:]:
            if ev.type == "m.room.message" and ev.body.startswith("ping"):
                bot.say(room, "echo", reply_to=ev.id)
        done = len(bot.seen)
    bot.close()


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    messages = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    compile_checkouts()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = shared_synapse(root)
        tag = uuid.uuid4().hex[:6]
        ids = {n: server.register(f"{n}{tag}", f"pw-{n}") for n in ("butler", "person", "echo")}
        own = Person(server.url, ids["butler"], "pw-butler")
        token = own.login()
        own.close()
        person = Person(server.url, ids["person"], "pw-person")
        person.login()
        room = person.create_room([ids["butler"], ids["echo"]])
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        chat = root / "chat.json"
        turns = [{"text": f"answer {i}"} for i in range(messages + 10)]
        chat.write_text(json.dumps({"turns": turns}))
        (home / "config.toml").write_text(
            f'[matrix]\nhomeserver = "{server.url}"\nuser = "{ids["butler"]}"\n'
            f'person = "{ids["person"]}"\nroom = "{room}"\nfolder = "{work}"\n'
        )
        env = {
            **os.environ,
            "BUTLER_HOME": str(home),
            "NO_COLOR": "1",
            "BUTLER_MATRIX_TOKEN": token,
            "BUTLER_MODEL": f"scripted:{chat}",
        }
        proc, port, inbox_token = start_serve(env, cwd=work)
        assert proc.stdout is not None
        for line in proc.stdout:
            if "matrix: listening in" in line:
                break
        threading.Thread(target=lambda: [None for _ in proc.stdout or []], daemon=True).start()
        stop = threading.Event()
        threading.Thread(
            target=echo, args=(server.url, ids["echo"], "pw-echo", room, stop), daemon=True
        ).start()
        store = OutcomeLog(home)
        base = f"http://127.0.0.1:{port}"
        inbox: list[float] = []
        matrix: list[float] = []
        trip: list[float] = []
        try:
            person.sync(0)
            ping = person.say(room, "ping warm-up")
            person.wait_for(lambda e: e.replying_to == ping and e.body == "echo")
            for _ in range(runs):
                pid = park(root, work, env, "-one")
                start = time.perf_counter()
                answer = post_decision(base, inbox_token, pid)
                while outcome_of(store, pid) is None:
                    time.sleep(0.01)
                inbox.append(time.perf_counter() - start)
                assert answer.get("ok"), answer

                pid = park(root, work, env, "-one")
                card = person.wait_for(lambda e, p=pid: e.body.startswith(CARD) and p in e.body)
                start = time.perf_counter()
                yes = person.say(room, "approve", reply_to=card.id)
                told = person.wait_for(
                    lambda e, y=yes: e.sender == ids["butler"] and e.replying_to == y
                )
                matrix.append(time.perf_counter() - start)
                assert "done" in told.body, told.body

                start = time.perf_counter()
                ping = person.say(room, "ping")
                person.wait_for(lambda e, p=ping: e.replying_to == p and e.body == "echo")
                trip.append(time.perf_counter() - start)
            stop.set()

            i, m, t = (statistics.median(x) * 1000 for x in (inbox, matrix, trip))
            print(f"{runs} approvals of each kind, interleaved, on one `butler serve`\n")
            print("| inbox Approve | Matrix reply `approve` | Synapse round trip | matrix − trip |")
            print("|---|---|---|---|")
            print(f"| {i:.0f} ms | {m:.0f} ms | {t:.0f} ms | {m - t:.0f} ms |\n")

            rows = []
            start = time.perf_counter()
            for n in range(1, messages + 1):
                sent = person.say(room, f"message {n}")
                person.wait_for(lambda e, s=sent: e.sender == ids["butler"] and e.replying_to == s)
                if len(person.seen) > 200:  # the test client keeps only what it still needs
                    del person.seen[:-50]
                if n in (1, messages // 4, messages // 2, 3 * messages // 4, messages):
                    rows.append((n, rss_kb(proc.pid), time.perf_counter() - start))
            print(f"RSS of `butler serve` over {messages} chat messages from the room\n")
            print("| messages answered | RSS | seconds so far |\n|---|---|---|")
            for n, kb, secs in rows:
                print(f"| {n} | {kb / 1024:.1f} MiB | {secs:.0f} s |")

            # Then as many from someone else: each ignored and audited, none answered. A chat
            # turn of the person's after each quarter marks that all before it were read.
            stranger = Person(server.url, ids["echo"], "pw-echo")
            stranger.login()
            rows = []
            for n in range(1, messages + 1):
                stranger.say(room, f"approve {n}")
                if n in (1, messages // 4, messages // 2, 3 * messages // 4, messages):
                    sent = person.say(room, f"after {n}")
                    person.wait_for(
                        lambda e, s=sent: e.sender == ids["butler"] and e.replying_to == s
                    )
                    del person.seen[:-50]
                    rows.append((n, rss_kb(proc.pid)))
            stranger.close()
            print(f"\nRSS over {messages} messages from someone else (ignored, audited)\n")
            print("| messages ignored | RSS |\n|---|---|")
            for n, kb in rows:
                print(f"| {n} | {kb / 1024:.1f} MiB |")
        finally:
            stop.set()
            proc.terminate()
            proc.wait(timeout=60)
            person.close()
            server.stop()


if __name__ == "__main__":
    main()
