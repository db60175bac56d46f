"""The inbox's version is shared by clients asking at once, but never one read before a client
asked: a park written just before a request must be in the version that request gets."""

from __future__ import annotations

import itertools
import threading
import time

from butler_cli.serve.fresh import Fresh


def _until(cond: object, what: str) -> None:
    deadline = time.monotonic() + 10
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.001)


def test_a_caller_gets_a_computation_begun_after_it_asked_and_callers_share_it() -> None:
    count = itertools.count(1)
    first_began, release_first = threading.Event(), threading.Event()

    def compute() -> int:
        n = next(count)
        if n == 1:
            first_began.set()
            release_first.wait(10)
        return n

    fresh = Fresh(compute)
    got: dict[str, int] = {}
    first = threading.Thread(target=lambda: got.__setitem__("first", fresh.get()))
    first.start()
    assert first_began.wait(10)
    # Three more ask while the first computation runs (it began before they asked).
    late = [
        threading.Thread(target=lambda i=i: got.__setitem__(f"late{i}", fresh.get()))
        for i in range(3)
    ]
    for t in late:
        t.start()
    _until(lambda: len(fresh._cond._waiters) == 3, "the late callers never waited")  # type: ignore[attr-defined]
    release_first.set()
    for t in [first, *late]:
        t.join(10)
    assert got["first"] == 1
    # Not the computation in flight when they asked, and one shared computation, not three.
    assert {got[f"late{i}"] for i in range(3)} == {2}
    assert fresh.get() == 3


def test_a_failed_computation_fails_its_caller_only() -> None:
    calls = itertools.count(1)

    def compute() -> int:
        n = next(calls)
        if n == 1:
            raise OSError("gone")
        return n

    fresh = Fresh(compute)
    try:
        fresh.get()
    except OSError:
        pass
    else:
        raise AssertionError("the failure was swallowed")
    assert fresh.get() == 2
