"""``http_request``: governed, because even a GET can send data out.

Bounded: one overall deadline for the whole exchange (connecting, headers, body, redirects),
enforced by closing the socket when it passes, so a server that drips a byte at a time cannot
hold the butler; the body is capped while it streams. Redirects are followed only within the
same origin (scheme, host and port) — one to another origin is reported, not followed, so a
header (``Authorization``…) never crosses to a server it was not written for. Secret headers
are masked in what the person is shown (the audit log only ever holds a hash).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from butler_cli.api import Classifier, Gate, ToolSpec, Verdict, approve, default_title, refuse
from butler_cli.tools.redact import redact

if TYPE_CHECKING:  # http.client, socket and ssl load when a request is made, not with the tool
    import http.client

BODY_CAP = 64 * 1024
TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 300.0
MAX_REDIRECTS = 5
READ_CHUNK = 16 * 1024
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
SHOWN_HEADERS = ("content-type", "content-length", "location", "last-modified", "etag")
REDIRECTS = (301, 302, 303, 307, 308)
_SCHEMA = {
    "type": "object",
    "properties": {
        "method": {"type": "string", "enum": list(METHODS)},
        "url": {"type": "string"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "body": {"type": "string"},
        "timeout_s": {
            "type": "number",
            "description": "Seconds for the whole exchange, body included (default 30)",
        },
    },
    "required": ["method", "url"],
}
_DEFAULT = approve("talks to another machine — asking you first", ask_always=True)

Origin = tuple[str, str, int]


def origin(url: str) -> Origin:
    """Scheme, host (lower case) and port, the default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def _checked(args: dict[str, Any]) -> tuple[str, str, dict[str, str], bytes | None, float]:
    method = str(args.get("method", "")).upper()
    if method not in METHODS:
        raise ValueError(f"'method' must be one of {', '.join(METHODS)}")
    url = args.get("url")
    if not isinstance(url, str) or not _url_ok(url):
        raise ValueError("'url' must be an http:// or https:// URL")
    headers = args.get("headers") or {}
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ValueError("'headers' must map names to strings")
    body = args.get("body")
    if body is not None and not isinstance(body, str):
        raise ValueError("'body' must be a string")
    timeout = args.get("timeout_s", TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_TIMEOUT_S
    ):
        raise ValueError(f"'timeout_s' must be a number of seconds from 0 to {MAX_TIMEOUT_S:.0f}")
    data = body.encode("utf-8") if body is not None else None
    return method, url, headers, data, float(timeout)


def _url_ok(url: str) -> bool:
    try:
        parts = urlsplit(url)
        _ = parts.port  # a malformed port raises here
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def guard(name: str, args: dict[str, Any]) -> Verdict | None:
    try:
        _checked(args)
    except ValueError as exc:
        return refuse(str(exc))
    return None


def describe(name: str, args: dict[str, Any]) -> str:
    try:
        method, url, headers, body, _ = _checked(args)
    except ValueError:
        return default_title(name, args)  # the URL first, as given
    extra = [f"headers {json.dumps(redact(headers), ensure_ascii=False)}"] if headers else []
    extra += [f"body {len(body)} bytes"] if body else []
    return f"http_request: {method} {url}" + (f" ({', '.join(extra)})" if extra else "")


class _Exchange:
    """One request (and its same-origin redirects) under one deadline."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.expired = False
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.expired = True
            raise TimeoutError
        return left

    def expire(self) -> None:
        """At the deadline: shut the socket so a blocked read returns at once."""
        with self._lock:
            self.expired = True
            conn = self._conn
            sock = conn.sock if conn is not None else None
        if sock is not None:
            import socket

            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def open(self, url: str) -> http.client.HTTPConnection:
        import http.client
        import ssl

        scheme, host, port = origin(url)
        conn: http.client.HTTPConnection
        if scheme == "https":
            conn = http.client.HTTPSConnection(
                host, port, timeout=self.left(), context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.left())
        with self._lock:
            self._conn = conn
        return conn

    def read_body(self, response: http.client.HTTPResponse) -> tuple[bytes, bool]:
        """At most BODY_CAP bytes, read while it streams; True when there was more."""
        data = bytearray()
        while len(data) <= BODY_CAP:
            self.left()
            chunk = response.read1(READ_CHUNK)
            if not chunk:
                if self.expired:  # the watchdog shut the socket: cut, not complete
                    raise TimeoutError
                return bytes(data), False
            data += chunk
        return bytes(data[:BODY_CAP]), True


def execute(name: str, args: dict[str, Any]) -> str:
    import http.client

    method, url, headers, body, timeout = _checked(args)
    exchange = _Exchange(timeout)
    watchdog = threading.Timer(timeout, exchange.expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        return _run(exchange, method, url, headers, body)
    except (TimeoutError, OSError, http.client.HTTPException) as exc:
        if exchange.expired or isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError
            raise ConnectionError(
                f"no complete answer from {url} within {timeout:g} s; stopped"
            ) from exc
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise ConnectionError(f"cannot reach {url}: {reason}") from exc
    finally:
        watchdog.cancel()
        conn = exchange._conn
        if conn is not None:
            conn.close()


def _run(
    exchange: _Exchange, method: str, url: str, headers: dict[str, str], body: bytes | None
) -> str:
    start = origin(url)
    note = ""
    for _ in range(MAX_REDIRECTS + 1):
        conn = exchange.open(url)
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        location = response.headers.get("location")
        if response.status in REDIRECTS and location:
            following = urljoin(url, location)
            if origin(following) != start:
                note = (
                    f"[butler: redirect to another origin not followed (only the same scheme, "
                    f"host and port are): {location}]"
                )
                return _answer(exchange, response, note)
            if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                method, body = "GET", None
            conn.close()
            url = following
            continue
        return _answer(exchange, response, note)
    raise ConnectionError(f"more than {MAX_REDIRECTS} redirects from {url}; stopped")


def _answer(exchange: _Exchange, response: http.client.HTTPResponse, note: str) -> str:
    shown = {h: response.headers[h] for h in SHOWN_HEADERS if response.headers.get(h)}
    data, more = exchange.read_body(response)
    lines = [f"HTTP {response.status}"]
    lines += [f"{k}: {v}" for k, v in shown.items()]
    if note:
        lines.append(note)
    text = data.decode("utf-8", errors="replace")
    if more:
        text += f"\n[butler: body cut at {BODY_CAP} bytes]"
    return "\n".join(lines) + "\n\n" + text


def http_gate(policy: Classifier | None) -> Gate:
    spec = ToolSpec("http_request", "Make an HTTP request.", _SCHEMA, _DEFAULT)
    return Gate([spec], execute, policy=policy, describer=describe, guard=guard)
