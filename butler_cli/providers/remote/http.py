"""The remote models' requests, sent with Python's own HTTP client (http.client, routed as
urllib.request routes it): no SDK and no third-party client (issue 34). Importing ``openai``
cost ~290 ms of CPU a start, and httpx2 with httpcore2 — the client the SDKs are built on,
~150 modules with h2, anyio and socksio — still cost the whole import floor of our other
dependencies again, for requests the adapters build and streams they read themselves.

What the SDKs' client did, and this keeps: proxies from the environment, read by the same
function httpx2 reads them with (``urllib.request.getproxies``: HTTP_PROXY, HTTPS_PROXY,
ALL_PROXY, with NO_PROXY skipping them; an https server through an http proxy by CONNECT), TLS
roots from SSL_CERT_FILE or SSL_CERT_DIR, else the system's (OpenSSL's on Linux, as httpx2's;
the system trust store on macOS and Windows through truststore, as httpx2's), two minutes a
connect or a read, no redirect followed (the key goes to the URL it is for only), no retries of
its own (``common.with_retries`` retries a rate limit, bounded), an error status raised with
the server's own words (:class:`~.common.StatusError`) and a request that got no answer at all
raised as :class:`~.common.Unreachable`, and a connection kept alive between requests (HTTP/1.1:
a chat turn's model calls share one TCP+TLS connection; :class:`Wire` says when a request is
sent again — only when a reused connection ended before a byte of its answer came).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import select
import socket
import ssl
import sys
import threading
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from butler_cli import __version__
from butler_cli.providers.remote.common import StatusError, StreamCut, Unreachable
from butler_cli.tools.redact import mask_text

#: Seconds a request may take to connect, and between any two reads of its answer.
TIMEOUT_S = 120.0
#: Idle connections a Wire keeps (more are closed): one per thread that used it at once.
IDLE_MAX = 4
#: Bytes read after a stream's last event to reach its end (the last chunk's marker).
DRAIN_MAX = 65536
#: Seconds the next use waits for them: a server that sends its body's end with its last
#: event (uvicorn, nginx, Go's: TCP_NODELAY) has long sent it; one that holds it back (Nagle's
#: delay, up to 40 ms on Linux) gets a new connection instead of being waited for.
DRAIN_S = 0.01


class _Response(http.client.HTTPResponse):
    """A response that tells "not a byte of an answer came" apart from any later failure: the
    one case a request on a reused connection is sent again (see :class:`Wire`)."""

    def begin(self) -> None:
        try:
            heard = self.fp.peek(1)
        except (ConnectionResetError, ConnectionAbortedError) as exc:
            raise _Unheard(_said(exc)) from exc
        if not heard:
            raise _Unheard("Remote end closed connection without response")
        super().begin()


class _Unheard(http.client.RemoteDisconnected):
    """The connection ended before a single byte of the response arrived."""


@dataclass(frozen=True)
class _Route:
    """Where a Wire's connections go: straight to the server, or through an HTTP proxy (a
    CONNECT tunnel for an https server; the absolute URL for an http one), as urllib's
    ProxyHandler routed them."""

    scheme: str
    host: str
    port: int | None
    #: The server's host:port a CONNECT tunnel goes to; "" when there is none.
    tunnel: str = ""
    #: The prefix a request's path gets: the absolute form a plain proxy needs, else "".
    prefix: str = ""
    #: Proxy-Authorization's value, from the proxy URL's user:password; "" without one.
    auth: str = ""


class Wire:
    """One server's client: its base URL, the headers every request carries (the key), and
    its kept-alive connections.

    A connection whose answer was read to its end (and the server did not say
    ``Connection: close``) is kept and used by the next request: a chat turn's model calls
    share one TCP+TLS connection, as the SDKs' client shared it. A stream left early (an
    error, Ctrl-C) closes its connection. Each request takes an idle connection or opens its
    own, so two threads never share one mid-request.

    Sending again: a POST that reached a model costs money and may act, so a request is sent
    a second time in one case only — it went out on a REUSED connection and the connection
    ended (closed or reset, or the sending itself broke) before one byte of the answer
    arrived. That is a server closing an idle kept-alive connection while the request was on
    its way (RFC 9112 §9.3.1); the request is then sent once more, on a new connection. A
    failure on a new connection, a timeout, or anything after the first byte of an answer is
    never sent again (it is reported, as before). An idle connection the server has already
    closed is seen before use and replaced, so that case is rare.
    """

    def __init__(self, base_url: str, headers: Mapping[str, str]) -> None:
        self._base = base_url.rstrip("/") + "/"
        self._path = urlsplit(self._base).path
        self._headers = {"User-Agent": f"butler-cli/{__version__}", **headers}
        self._route = _route(self._base)
        self._context = _tls() if self._route.scheme == "https" else None
        #: Idle connections, each with the answer whose last bytes (after its last event) are
        #: still to be read before it is used again, or None.
        self._idle: list[tuple[http.client.HTTPConnection, http.client.HTTPResponse | None]] = []
        self._lock = threading.Lock()
        #: Connections opened so far (a figure for the bench and the tests' reading).
        self.opened = 0

    @contextmanager
    def stream(self, path: str, body: dict[str, Any]) -> Iterator[Iterator[str]]:
        """POST ``body`` as JSON and give the answer's lines as they come (an error status
        raises, its body read whole); the connection is kept when the answer was read to its
        end, else closed."""
        conn, response = self._open(path, body)
        through = False
        try:
            yield _lines(response)
            through = True  # read to its last event; what follows is read on the next use
        finally:
            self._done(conn, response, through)

    def post(self, path: str, body: dict[str, Any]) -> str:
        """POST ``body`` as JSON and read the whole answer's text (a success: an error status
        raises)."""
        return self._whole(path, body)

    def get(self, path: str, params: Mapping[str, str]) -> object:
        """GET ``path`` and read its answer as JSON (None when it is not JSON)."""
        query = f"?{urlencode(params)}" if params else ""
        text = self._whole(path + query, None)
        try:
            parsed: object = json.loads(text)
        except ValueError:
            return None
        return parsed

    def _whole(self, path: str, body: dict[str, Any] | None) -> str:
        """Send the request and read its whole answer (GET without ``body``)."""
        conn, response = self._open(path, body)
        whole = False
        try:
            text = _read(response)
            whole = True
        finally:
            self._done(conn, response, whole)
        return text

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    def _open(
        self, path: str, body: dict[str, Any] | None
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self._route.auth and not self._route.tunnel:
            headers["Proxy-Authorization"] = self._route.auth
        method = "GET" if data is None else "POST"
        target = self._route.prefix + self._path + path
        try:
            conn, reused = self._take()
            try:
                conn.request(method, target, body=data, headers=headers)
                response = conn.getresponse()
            except (_Unheard, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                conn.close()
                if not reused:
                    raise
                conn = self._connect()  # the server closed it while idle: once more, anew
                conn.request(method, target, body=data, headers=headers)
                response = conn.getresponse()
        except TimeoutError as exc:
            raise Unreachable(f"no answer in {TIMEOUT_S:.0f} s") from exc
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise Unreachable(_said(exc)) from exc
        if not 200 <= response.status < 300:  # a redirect too: never followed
            error = status_error(response)
            self._done(conn, response, response.isclosed())  # read whole: kept
            raise error
        return conn, response

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection the server has not closed (True: reused), else a new one. The
        previous answer's last bytes are read first: a stream is left at its last event, and
        the end of its body (the last chunk's marker) is read here, by when it has come —
        waiting for it when the stream ended would wait on the server's Nagle delay."""
        while True:
            with self._lock:
                conn, rest = self._idle.pop() if self._idle else (None, None)
            if conn is None:
                return self._connect(), False
            ready = rest is None or _drained(conn, rest)
            if ready and conn.sock is not None and not _hung_up(conn.sock):
                return conn, True
            conn.close()

    def _connect(self) -> http.client.HTTPConnection:
        route = self._route
        conn: http.client.HTTPConnection
        if route.scheme == "https":
            conn = http.client.HTTPSConnection(
                route.host, route.port, timeout=TIMEOUT_S, context=self._context
            )
        else:
            conn = http.client.HTTPConnection(route.host, route.port, timeout=TIMEOUT_S)
        if route.tunnel:
            auth = {"Proxy-Authorization": route.auth} if route.auth else None
            conn.set_tunnel(route.tunnel, headers=auth)
        conn.response_class = _Response
        with self._lock:
            self.opened += 1
        return conn

    def _done(
        self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse, whole: bool
    ) -> None:
        """Keep ``conn`` for the next request when its answer was read through (a stream to its
        last event: the rest is read on the next use) and the server keeps it open; else close
        it."""
        if whole and not response.will_close and conn.sock is not None:
            rest = None if response.isclosed() else response
            with self._lock:
                if len(self._idle) < IDLE_MAX:
                    self._idle.append((conn, rest))
                    return
        response.close()
        conn.close()


def status_error(response: http.client.HTTPResponse) -> StatusError:
    """The error a status that is not a success raises: its body parsed as JSON when it is
    JSON, else its text, and its Retry-After (a rate limit's wait)."""
    try:
        text = response.read().decode("utf-8", errors="replace").strip()
    except (OSError, http.client.HTTPException):
        text = ""
    body: object = text
    with suppress(ValueError):
        body = json.loads(text)
    return StatusError(response.status, body, response.headers.get("retry-after"))


def _lines(response: http.client.HTTPResponse) -> Iterator[str]:
    """The answer's lines, without their line ends; a body cut short (a chunked stream without
    its last chunk) raises StreamCut."""
    try:
        for raw in response:
            yield raw.decode("utf-8", errors="replace").rstrip("\r\n")
    except http.client.IncompleteRead as exc:
        raise StreamCut("the connection closed before the answer was whole") from exc


def _read(response: http.client.HTTPResponse) -> str:
    try:
        return response.read().decode("utf-8", errors="replace")
    except http.client.IncompleteRead as exc:
        raise StreamCut("the connection closed before the answer was whole") from exc


def _drained(conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> bool:
    """True when a stream read up to its last event reaches its end: the few bytes after
    ``[DONE]`` (the last chunk's marker) are read — at most DRAIN_MAX bytes, waited for
    DRAIN_S at most — so the connection can be used again. A server still sending after
    that, or not yet: False, and the connection is closed (a timeout mid-read leaves it
    unusable anyway)."""
    if response.isclosed():
        return True
    if conn.sock is not None:
        conn.sock.settimeout(DRAIN_S)
    try:
        response.read(DRAIN_MAX)
    except (OSError, http.client.HTTPException):
        return False
    if conn.sock is not None:
        conn.sock.settimeout(TIMEOUT_S)
    return response.isclosed()


def _hung_up(sock: socket.socket) -> bool:
    """Whether an idle connection has something to read: the server closed it (or sent what
    no request asked for); either way it is not used again."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _route(base: str) -> _Route:
    """How ``base`` is reached: the proxies the environment names (ALL_PROXY for a scheme
    without one of its own) unless NO_PROXY names its host, as urllib's ProxyHandler chose.
    A SOCKS proxy for ``base`` is named as the reason it cannot be reached: only HTTP proxies
    are spoken to."""
    found = urllib.request.getproxies()
    every = found.get("all")
    parts = urlsplit(base)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise Unreachable(f"unknown url type: {scheme or base}")
    direct = _Route(scheme, parts.hostname, parts.port)
    proxy = found.get(scheme) or every or ""
    if not proxy or urllib.request.proxy_bypass(parts.netloc):
        return direct
    if proxy.lower().startswith("socks"):
        raise Unreachable(
            f"the environment names a SOCKS proxy, {mask_text(proxy)}; models are reached "
            "through HTTP proxies only (HTTPS_PROXY, HTTP_PROXY), or directly when NO_PROXY "
            "names the server"
        )
    via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if not via.hostname:
        raise Unreachable(f"the proxy {mask_text(proxy)} names no host")
    auth = ""
    if via.username is not None and via.password is not None:
        pair = f"{unquote(via.username)}:{unquote(via.password)}".encode()
        auth = "Basic " + base64.b64encode(pair).decode("ascii")
    if scheme == "https":  # a tunnel: TLS with the server itself, through the proxy
        return _Route("https", via.hostname, via.port, tunnel=parts.netloc, auth=auth)
    origin = f"{scheme}://{parts.netloc}"
    return _Route(via.scheme.lower(), via.hostname, via.port, prefix=origin, auth=auth)


def _tls() -> ssl.SSLContext | None:
    """HTTPS checked against the roots httpx2 picks: SSL_CERT_FILE or SSL_CERT_DIR when set,
    else the system's. On Linux that is Python's default context (None: http.client makes
    it when a connection is made; OpenSSL reads those two variables itself); on macOS and
    Windows the system trust store, through truststore as httpx2 does."""
    named = os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")
    if sys.platform not in ("darwin", "win32") or named:
        return None
    import truststore

    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _said(exc: object) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
