"""The remote models' requests, sent over httpx2: the HTTP client both official SDKs are built
on, without the SDKs (issue 34: importing ``openai`` cost ~290 ms of CPU a start and
``anthropic`` more, for requests the adapters build and streams they read themselves).

What the SDKs did here, and this keeps: the same client (proxies and TLS roots read from the
environment as httpx2 reads them: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY, SSL_CERT_FILE,
SSL_CERT_DIR), two minutes a request, no redirect followed (the key goes to the URL it is for
only), no retries of its own (``common.with_retries`` retries a rate limit, bounded), an error
status raised with the server's own words (:class:`~.common.StatusError`) and a request that got
no answer at all raised as :class:`~.common.Unreachable`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import httpx2

from butler_cli.providers.remote.common import StatusError, Unreachable

#: Seconds a request may take to connect, and between any two reads of its answer.
TIMEOUT_S = 120.0


class Wire:
    """One server's client: its base URL and the headers every request carries (the key)."""

    def __init__(self, base_url: str, headers: Mapping[str, str]) -> None:
        self._client = httpx2.Client(
            base_url=base_url, headers=dict(headers), timeout=TIMEOUT_S, follow_redirects=False
        )

    @contextmanager
    def stream(self, path: str, body: dict[str, Any]) -> Iterator[httpx2.Response]:
        """POST ``body`` as JSON and give the answer unread, for its stream to be read as it
        comes; an error status is raised with its body read whole first."""
        response = self._send("POST", path, body, stream=True)
        try:
            if not response.is_success:
                response.read()
                raise status_error(response)
            yield response
        finally:
            response.close()

    def post(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        """POST ``body`` as JSON and read the whole answer (a success: an error status raises)."""
        return _checked(self._send("POST", path, body, stream=False))

    def get(self, path: str, params: Mapping[str, str]) -> httpx2.Response:
        """GET ``path`` (a success: an error status raises)."""
        return _checked(self._send("GET", path, None, stream=False, params=params))

    def _send(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        stream: bool,
        params: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        try:
            request = self._client.build_request(method, path, json=body, params=params)
            return self._client.send(request, stream=stream)
        except httpx2.TimeoutException as exc:
            raise Unreachable(f"no answer in {TIMEOUT_S:.0f} s: {_said(exc)}") from exc
        except (httpx2.RequestError, httpx2.InvalidURL) as exc:
            raise Unreachable(_said(exc)) from exc


def _checked(response: httpx2.Response) -> httpx2.Response:
    if not response.is_success:
        raise status_error(response)
    return response


def status_error(response: httpx2.Response) -> StatusError:
    """The error a status that is not a success raises: its body parsed as JSON when it is
    JSON, else its text, and its Retry-After (a rate limit's wait)."""
    text = response.text.strip()
    body: object = text
    with suppress(ValueError):
        body = json.loads(text)
    return StatusError(response.status_code, body, response.headers.get("retry-after"))


def _said(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
