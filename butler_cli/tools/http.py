"""``http_request``: governed, because even a GET can send data out.

Redirects to another host are not followed silently: the answer says where it pointed. Secret
headers are masked in what the person is shown (the audit log only ever holds a hash).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from butler_cli.core.gate import Gate, Policy, default_title
from butler_cli.core.toolsets import ToolSpec
from butler_cli.core.verdicts import Verdict, approve, refuse
from butler_cli.tools.redact import redact

BODY_CAP = 64 * 1024
TIMEOUT_S = 30
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
SHOWN_HEADERS = ("content-type", "content-length", "location", "last-modified", "etag")
_SCHEMA = {
    "type": "object",
    "properties": {
        "method": {"type": "string", "enum": list(METHODS)},
        "url": {"type": "string"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "body": {"type": "string"},
    },
    "required": ["method", "url"],
}
_DEFAULT = approve("talks to another machine — asking you first")


def _checked(args: dict[str, Any]) -> tuple[str, str, dict[str, str], bytes | None]:
    method = str(args.get("method", "")).upper()
    if method not in METHODS:
        raise ValueError(f"'method' must be one of {', '.join(METHODS)}")
    url = args.get("url")
    if (
        not isinstance(url, str)
        or urlsplit(url).scheme not in ("http", "https")
        or not urlsplit(url).hostname
    ):
        raise ValueError("'url' must be an http:// or https:// URL")
    headers = args.get("headers") or {}
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ValueError("'headers' must map names to strings")
    body = args.get("body")
    if body is not None and not isinstance(body, str):
        raise ValueError("'body' must be a string")
    return method, url, headers, body.encode("utf-8") if body is not None else None


class _SameHostOnly(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        if urlsplit(newurl).hostname != urlsplit(req.full_url).hostname:
            return None  # not followed: the 3xx comes back to the model as it is
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def guard(name: str, args: dict[str, Any]) -> Verdict | None:
    try:
        _checked(args)
    except ValueError as exc:
        return refuse(str(exc))
    return None


def describe(name: str, args: dict[str, Any]) -> str:
    try:
        method, url, headers, body = _checked(args)
    except ValueError:
        return default_title(name, args)  # the URL first, as given
    extra = f"  headers {json.dumps(redact(headers), ensure_ascii=False)}" if headers else ""
    size = f"  body {len(body)} bytes" if body else ""
    return f"http_request: {method} {url}{extra}{size}"


def execute(name: str, args: dict[str, Any]) -> str:
    method, url, headers, body = _checked(args)
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    opener = urllib.request.build_opener(_SameHostOnly())
    try:
        response = opener.open(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:  # 4xx/5xx and unfollowed redirects: still an answer
        response = exc
    except urllib.error.URLError as exc:
        raise ConnectionError(f"cannot reach {url}: {exc.reason}") from exc
    with response:
        data: bytes = response.read(BODY_CAP + 1)
        status = int(response.status if hasattr(response, "status") else response.code)
        shown = {h: response.headers[h] for h in SHOWN_HEADERS if response.headers.get(h)}
    lines = [f"HTTP {status}"]
    lines += [f"{k}: {v}" for k, v in shown.items()]
    if 300 <= status < 400 and "location" in shown:
        lines.append(f"[butler: redirect to another host not followed: {shown['location']}]")
    text = data[:BODY_CAP].decode("utf-8", errors="replace")
    if len(data) > BODY_CAP:
        text += f"\n[butler: body cut at {BODY_CAP} bytes]"
    return "\n".join(lines) + "\n\n" + text


def http_gate(policy: Policy | None) -> Gate:
    spec = ToolSpec("http_request", "Make an HTTP request.", _SCHEMA, _DEFAULT)
    return Gate([spec], execute, policy=policy, describer=describe, guard=guard)
