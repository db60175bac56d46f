"""The remote models' requests, sent with Python's own HTTP client (urllib.request): no SDK and
no third-party client (issue 34). Importing ``openai`` cost ~290 ms of CPU a start, and httpx2
with httpcore2 — the client the SDKs are built on, ~150 modules with h2, anyio and socksio —
still cost the whole import floor of our other dependencies again, for requests the adapters
build and streams they read themselves.

What the SDKs' client did, and this keeps: proxies from the environment, read by the same
function httpx2 reads them with (``urllib.request.getproxies``: HTTP_PROXY, HTTPS_PROXY,
ALL_PROXY, with NO_PROXY skipping them; an https server through an http proxy by CONNECT), TLS
roots from SSL_CERT_FILE or SSL_CERT_DIR, else the system's (OpenSSL's on Linux, as httpx2's;
the system trust store on macOS and Windows through truststore, as httpx2's), two minutes a
connect or a read, no redirect followed (the key goes to the URL it is for only), no retries of
its own (``common.with_retries`` retries a rate limit, bounded), an error status raised with
the server's own words (:class:`~.common.StatusError`) and a request that got no answer at all
raised as :class:`~.common.Unreachable`. Not kept: a connection is not reused between requests
(one per model call; a local server does not notice, a remote one costs a TLS handshake a call).
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import urlencode, urlsplit

from butler_cli import __version__
from butler_cli.providers.remote.common import StatusError, StreamCut, Unreachable
from butler_cli.tools.redact import mask_text

#: Seconds a request may take to connect, and between any two reads of its answer.
TIMEOUT_S = 120.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is the server's answer, never followed: it becomes a StatusError (3xx)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Wire:
    """One server's client: its base URL and the headers every request carries (the key)."""

    def __init__(self, base_url: str, headers: Mapping[str, str]) -> None:
        self._base = base_url.rstrip("/") + "/"
        self._headers = {"User-Agent": f"butler-cli/{__version__}", **headers}
        self._opener = urllib.request.build_opener(_proxies(self._base), _tls(), _NoRedirect())

    @contextmanager
    def stream(self, path: str, body: dict[str, Any]) -> Iterator[Iterator[str]]:
        """POST ``body`` as JSON and give the answer's lines as they come (an error status
        raises, its body read whole); the connection is closed after."""
        response = self._open(path, body)
        try:
            yield _lines(response)
        finally:
            response.close()

    def post(self, path: str, body: dict[str, Any]) -> str:
        """POST ``body`` as JSON and read the whole answer's text (a success: an error status
        raises)."""
        with self._open(path, body) as response:
            return _read(response)

    def get(self, path: str, params: Mapping[str, str]) -> object:
        """GET ``path`` and read its answer as JSON (None when it is not JSON)."""
        query = f"?{urlencode(params)}" if params else ""
        with self._open(path + query, None) as response:
            text = _read(response)
        try:
            parsed: object = json.loads(text)
        except ValueError:
            return None
        return parsed

    def _open(self, path: str, body: dict[str, Any] | None) -> http.client.HTTPResponse:
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            request = urllib.request.Request(self._base + path, data=data, headers=headers)
            response: http.client.HTTPResponse = self._opener.open(request, timeout=TIMEOUT_S)
        except urllib.error.HTTPError as exc:
            with exc:
                raise status_error(exc) from None
        except TimeoutError as exc:
            raise Unreachable(f"no answer in {TIMEOUT_S:.0f} s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise Unreachable(f"no answer in {TIMEOUT_S:.0f} s") from exc
            raise Unreachable(_said(exc.reason)) from exc
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise Unreachable(_said(exc)) from exc
        return response


def status_error(error: urllib.error.HTTPError) -> StatusError:
    """The error a status that is not a success raises: its body parsed as JSON when it is
    JSON, else its text, and its Retry-After (a rate limit's wait)."""
    try:
        text = error.read().decode("utf-8", errors="replace").strip()
    except (OSError, http.client.HTTPException):
        text = ""
    body: object = text
    with suppress(ValueError):
        body = json.loads(text)
    return StatusError(error.code, body, error.headers.get("retry-after"))


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


def _proxies(base: str) -> urllib.request.ProxyHandler:
    """The proxies the environment names (ALL_PROXY for a scheme without one of its own);
    NO_PROXY is checked by the handler for each request. A SOCKS proxy for ``base`` is named
    as the reason it cannot be reached: urllib speaks only to HTTP proxies."""
    found = urllib.request.getproxies()
    every = found.get("all")
    chosen = {s: p for s in ("http", "https") if (p := found.get(s) or every)}
    parts = urlsplit(base)
    proxy = chosen.get(parts.scheme, "")
    if proxy.lower().startswith("socks") and not urllib.request.proxy_bypass(parts.netloc):
        raise Unreachable(
            f"the environment names a SOCKS proxy, {mask_text(proxy)}; models are reached "
            "through HTTP proxies only (HTTPS_PROXY, HTTP_PROXY), or directly when NO_PROXY "
            "names the server"
        )
    return urllib.request.ProxyHandler(chosen)


def _tls() -> urllib.request.HTTPSHandler:
    """HTTPS checked against the roots httpx2 picks: SSL_CERT_FILE or SSL_CERT_DIR when set,
    else the system's. On Linux that is Python's default context, made only when an https
    connection is (OpenSSL reads those two variables itself); on macOS and Windows the system
    trust store, through truststore as httpx2 does."""
    named = os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")
    if sys.platform not in ("darwin", "win32") or named:
        return urllib.request.HTTPSHandler()
    import truststore

    return urllib.request.HTTPSHandler(context=truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT))


def _said(exc: object) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
