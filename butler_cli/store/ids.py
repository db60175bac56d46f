"""Random ids and tokens from the operating system's source, as ``secrets`` makes them.

``secrets`` is ``random.SystemRandom`` and ``os.urandom`` underneath, but importing it loads
hmac and OpenSSL's hashlib too (about 3.5 ms): a command that signs nothing need not pay that.
"""

from __future__ import annotations

import os
from random import SystemRandom

_system = SystemRandom()


def random_string(alphabet: str, length: int) -> str:
    """``length`` characters, each drawn from ``alphabet`` (``secrets.choice`` for each)."""
    return "".join(_system.choice(alphabet) for _ in range(length))


def random_below(n: int) -> int:
    """A random int in ``[0, n)`` (``secrets.randbelow``)."""
    return _system.randrange(n)


def token_hex(nbytes: int) -> str:
    """``nbytes`` random bytes as hex (``secrets.token_hex``)."""
    return os.urandom(nbytes).hex()
