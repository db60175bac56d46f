"""Park save and resume load, MAC check included, at 10, 100 and 1000 messages.

Baseline (same run): a plain ``json.dumps`` + ``json.loads`` of the same state as a dict.
"save + load" is the in-memory part a resume pays (serialise + HMAC, then HMAC check + parse +
model validation). The durable write (temp file, fsync, rename, fsync of the dir) is measured
on its own beside a plain write + fsync of the same bytes, since no JSON baseline touches disk.

Run: python bench/bench_park.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import per_call, sample_state  # noqa: E402
from pydantic_core import from_json  # noqa: E402

from butler_cli.core.park import ParkState  # noqa: E402
from butler_cli.store.parks import ParkStore, _verified_body, encode_park  # noqa: E402


def main() -> None:
    print(
        "| messages | file size | save + load (MAC) | json.dumps + json.loads | ratio | durable save | plain write + fsync |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        store = ParkStore(Path(tmp))
        key = store.key(create=True)
        assert key is not None
        for n in (10, 100, 1000):
            state = sample_state("abcdefgh", n)
            as_dict = state.model_dump(mode="json")
            path = Path(tmp) / "x.json"

            def roundtrip() -> None:
                data = encode_park(key, state)
                ParkState.model_validate(from_json(_verified_body(data, key, path)))

            def baseline() -> None:
                json.loads(json.dumps(as_dict))

            data = encode_park(key, state)
            plain = Path(tmp) / "plain.json"

            def plain_write() -> None:
                fd = os.open(plain, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.write(fd, data)
                os.fsync(fd)
                os.close(fd)

            number = max(3, 3000 // n)
            ours, base = per_call(roundtrip, 5, number), per_call(baseline, 5, number)
            durable = per_call(lambda: store.save(state), 3, 10)
            raw = per_call(plain_write, 3, 10)
            assert store.load("abcdefgh").messages == state.messages
            print(
                f"| {n} | {len(data) / 1024:.0f} KiB | {ours * 1000:.3f} ms | {base * 1000:.3f} ms "
                f"| {ours / base:.2f}x | {durable * 1000:.2f} ms | {raw * 1000:.2f} ms |"
            )


if __name__ == "__main__":
    main()
