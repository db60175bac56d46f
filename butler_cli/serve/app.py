"""The inbox as a Starlette app: who may ask (the token), what may change state (the CSRF
token, same origin), and what the page may load (a strict Content-Security-Policy).

- Every request needs the token `butler serve` printed, bound to this origin: in the URL
  (``?token=``: the printed address, and every link and script the pages hold) or as
  ``Authorization: Bearer`` (what the page's script sends, reading it from the page). Never a
  cookie: a browser sends 127.0.0.1's cookies to every port on it, so any other local server
  would receive one; a cookie authenticates nothing here. Without the token: 403, nothing read.
- A request whose ``Host`` is not this loopback address and port is refused (DNS rebinding),
  unless the server was deliberately exposed.
- A POST needs the page's CSRF token (header ``X-CSRF-Token`` or form field ``csrf``) and, when
  the browser says where it comes from (``Origin``, ``Sec-Fetch-Site``), this very origin.
- Every answer carries ``Content-Security-Policy: default-src 'none'; script-src 'self'; …``:
  the page sends no request to another origin and runs no inline script.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from butler_cli.app.parks.approvals import keep_shown
from butler_cli.app.parks.decisions import load_park
from butler_cli.app.parks.door import Answer
from butler_cli.app.views import inbox as view
from butler_cli.core.errors import ButlerError
from butler_cli.serve import data, pages
from butler_cli.serve.decide import Decider, Told, each_call
from butler_cli.serve.fresh import Fresh
from butler_cli.serve.static import FAVICON_SVG, INBOX_CSS, INBOX_JS
from butler_cli.serve.watch import Watch, open_watch

#: The files in the home itself whose change the page shows: its outcomes, the schedules.
WATCHED_HOME_FILES = frozenset({view.OUTCOMES_FILE, *data.SCHEDULE_FILES})

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}
NO_TOKEN = (
    "403: this butler inbox needs its token — open the URL `butler serve` printed "
    "(it holds ?token=…)\n"
)


@dataclass
class Settings:
    home: Path
    host: str
    port: int
    exposed: bool = False
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def url(self, host: str | None = None) -> str:
        where = host or self.host
        if ":" in where:
            where = f"[{where}]"
        return f"http://{where}:{self.port}/?token={self.token}"

    def host_ok(self, host: str) -> bool:
        if self.exposed:
            return True
        names = {"127.0.0.1", "localhost", "[::1]", self.host}
        return host in {f"{n}:{self.port}" for n in names}


def _refused(status: int, text: str) -> Response:
    return PlainTextResponse(text, status_code=status, headers=SECURITY_HEADERS)


class Guard:
    """The token, the Host, the origin of a POST; the security headers on every answer.

    A plain ASGI middleware: Starlette's ``BaseHTTPMiddleware`` pipes every answer's body
    through a stream of its own, which for the 1.2 MB page of 1,000 parks cost more than the
    page itself under load.
    """

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    def refusal(self, request: Request) -> Response | None:
        s = self.settings
        if not s.host_ok(request.headers.get("host", "")):
            return _refused(403, "403: unexpected Host header\n")
        given = request.query_params.get("token")
        auth = request.headers.get("authorization", "")
        if given is None and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not given or not secrets.compare_digest(given.encode(), s.token.encode()):
            return _refused(403, NO_TOKEN)
        if request.method not in ("GET", "HEAD"):
            origin = request.headers.get("origin")
            site = request.headers.get("sec-fetch-site")
            if (origin is not None and origin != f"http://{request.headers.get('host')}") or (
                site is not None and site != "same-origin"
            ):
                return _refused(403, "403: a request from another origin is refused\n")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(Request(scope))
        if refused is not None:
            await refused(scope, receive, send)
            return

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(SECURITY_HEADERS)
            await send(message)

        await self.app(scope, receive, send_guarded)


def create_app(settings: Settings, decider: Decider) -> Starlette:
    """The inbox app for one home."""
    home = settings.home
    keys = pages.Keys(settings.token, settings.csrf)
    banner = (
        f"This inbox is exposed on {settings.host}: anyone who can reach it with the token can "
        "read every parked action and approve it."
        if settings.exposed
        else None
    )

    def scanned_version() -> str:
        return f"{data.signature(home)}.{'.'.join(decider.running())}"

    scanned = Fresh(scanned_version).get  # clients asking at once share one scan of the parks
    #: The watch on the home (``serve/watch.py``), opened in the lifespan; None: the scan.
    watching: list[Watch] = []

    def version() -> str:
        """Changes whenever anything the page shows may have: kept by the watch (one read of
        its descriptor, on the event loop) where there is one, else a scan of every park."""
        if not watching:
            return scanned()
        changes = watching[0].drain()
        return f"w{changes}-{view.previews_part(home)}.{'.'.join(decider.running())}"

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watch = open_watch(home, WATCHED_HOME_FILES)
        if watch is not None:
            watch.attach(asyncio.get_running_loop())
            watching.append(watch)
        try:
            yield
        finally:
            watching.clear()
            if watch is not None:
                watch.close()

    # The page as last rendered, under the version it was read at: the version changes
    # whenever anything the page shows may have (it is what tells the page's script "nothing
    # changed"), so while it holds, every client gets those bytes. Rendering 1,000 parks for
    # each of 32 clients at once put the page's p99 at many times a bare page's.
    rendered: dict[str, tuple[bytes, bytes]] = {}  # version → (parts as JSON, the page)
    rendering = threading.Lock()  # one render at a time; the others then find it made

    def render() -> tuple[bytes, bytes]:
        seen = version()  # read before the files: what is rendered is at least this new
        with rendering:
            made = rendered.get(seen)
            if made is None:
                rows, problems = view.waiting(home)
                exact = view.as_read(home, seen)  # the files its previews read, as read
                # the outcomes before what still runs: a decision that ends meanwhile keeps
                # its outcome and leaves the running list in one step (``Decider``), so it
                # is listed once, never twice
                outcomes, trouble = data.outcomes(home)
                running = decider.running()
                parts = {
                    "version": exact,
                    "parks": pages.parks_part(rows, problems, keys),
                    "waiting": str(len(rows)),
                    "outcomes": pages.outcomes_part(outcomes, running, keys, trouble),
                    "schedules": pages.schedules_part(*data.schedules(home)),
                }
                made = (
                    json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode(),
                    pages.inbox(parts, keys, banner).encode(),
                )
                rendered.clear()
                rendered[seen] = made
                rendered[exact] = made
            return made

    async def index(request: Request) -> Response:
        _, page = await run_in_threadpool(render)
        return HTMLResponse(page)

    async def parts(request: Request) -> Response:
        # with the watch the version costs no per-park work: asked on the event loop itself
        now = version() if watching else await run_in_threadpool(version)
        if request.query_params.get("v") == now:
            return Response(status_code=204)
        parts, _ = await run_in_threadpool(render)
        return Response(parts, media_type="application/json")

    async def park(request: Request) -> Response:
        def load() -> str:
            state = load_park(request.path_params["park_id"], home)
            trail = view.audit_trail(home, state.id)
            return pages.park_page(state, trail, view.ledger_events(home, state.id), keys)

        try:
            return HTMLResponse(await run_in_threadpool(load))
        except ButlerError as exc:
            return _refused(404, f"{exc.message}\n")

    async def decide(request: Request) -> Response:
        form = await request.form()
        sent = request.headers.get("x-csrf-token") or str(form.get("csrf") or "")
        if not secrets.compare_digest(sent.encode(), settings.csrf.encode()):
            return JSONResponse(
                {"ok": False, "message": "refused: missing or wrong CSRF token; nothing decided"},
                status_code=403,
            )
        choice = str(form.get("decision") or "")
        if choice not in ("approve", "deny", "keep", "each"):
            return JSONResponse(
                {"ok": False, "message": "decision must be approve, deny, keep or each"},
                status_code=400,
            )
        note = str(form.get("note") or "").strip() or None
        pid = str(request.path_params["park_id"])
        approved = choice in ("approve", "keep")
        # "each": the call:<id> fields as marked; a call left unmarked is denied (R1)
        each = each_call(form.multi_items(), note) if choice == "each" else {}

        def submit() -> Told:
            # "keep": what the card showed it would keep, built from the park as read; the door
            # keeps it only if this decision is the one recorded, never a duplicate
            keep = keep_shown(load_park(pid, home)) if choice == "keep" else {}
            return decider.submit(pid, Answer(approved, note, each, keep))

        try:
            said = await run_in_threadpool(submit)
        except ButlerError as exc:
            said = Told(False, exc.message)
        body = {"ok": said.ok, "message": said.message, "status": said.status}
        return JSONResponse(body, status_code=200 if said.ok else 409)

    def static(text: str, kind: str) -> Any:
        async def serve(request: Request) -> Response:
            return Response(text, media_type=kind)

        return serve

    routes = [
        Route("/", index),
        Route("/parts", parts),
        Route("/park/{park_id}", park),
        Route("/park/{park_id}/decide", decide, methods=["POST"]),
        Route("/static/inbox.js", static(INBOX_JS, "text/javascript")),
        Route("/static/inbox.css", static(INBOX_CSS, "text/css")),
        Route("/static/favicon.svg", static(FAVICON_SVG, "image/svg+xml")),
    ]
    return Starlette(
        routes=routes, middleware=[Middleware(Guard, settings=settings)], lifespan=lifespan
    )
