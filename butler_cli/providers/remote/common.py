"""What the real providers share: keys, base URLs, error mapping and rate-limit retries.

Adapters (wire formats) live in the modules beside this one, their requests in :mod:`.http`;
this holds the provider side — the client's key, base URL and how its failures become one clear
line. Both wire formats fail alike (an error status with the server's words, or no answer at
all), so one mapping serves both. Keys are read from the environment (or the stored keys) and
never written anywhere by the providers.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from butler_cli.core.errors import ModelError, UsageError
from butler_cli.core.notices import notice as say
from butler_cli.core.provider import ModelRequest, ModelResponse
from butler_cli.store.stored_keys import key_from
from butler_cli.tools.redact import mask_text, remember_secret

if TYPE_CHECKING:  # the client's module imports the HTTP client, and this one's errors
    from butler_cli.providers.remote.http import Wire

T = TypeVar("T")
RATE_LIMIT_TRIES = 4
BACKOFF_CAP_S = 8.0


@dataclass(frozen=True)
class Endpoint:
    """Where a provider sends requests and which variable holds its key (never the key)."""

    provider: str
    model: str
    base_url: str | None
    key_env: str | None
    key_required: bool = True
    #: A file holding the key, for people who keep keys out of their environment.
    key_file: str | None = None
    #: Model options (`-o`), checked: (name, value) pairs, sorted.
    options: tuple[tuple[str, int | float], ...] = ()
    #: False: every answer is asked for whole (`--no-stream`), for a server whose streams
    #: go wrong.
    stream: bool = True
    #: False (``providers.NAME.images = false``): an image is refused before it is sent.
    images: bool = True

    def key(self) -> str:
        """The key from the environment, else the one stored under that name (`butler keys
        set`), else the key file; a usage error naming the variable when none has it."""
        value = key_from(self.key_env)
        if value:
            remember_secret(value)  # masked wherever it might be echoed back
            return value
        if self.key_file:
            path = os.path.expanduser(self.key_file)
            try:
                with open(path, encoding="utf-8") as fh:
                    value = fh.read().strip()
            except OSError as exc:
                raise UsageError(f"cannot read the key file {path}: {exc.strerror}") from exc
            if value:
                remember_secret(value)
                return value
            raise UsageError(f"the key file {path} is empty")
        if self.key_required:
            raise UsageError(
                f"no API key for {self.provider}: set {self.key_env} or store it with "
                f"`butler keys set {self.key_env}` (or name another with `butler config set`)",
                code="missing_key",
            )
        return "not-needed"

    @property
    def where(self) -> str:
        return self.base_url or f"the {self.provider} API"


class StatusError(Exception):
    """The server answered with a status that is not a success: its code, its body (parsed
    JSON, else its text) and its Retry-After."""

    def __init__(self, status_code: int, body: object, retry_after: str | None = None) -> None:
        self.status_code = status_code
        self.body = body
        self.retry_after = retry_after
        super().__init__(f"HTTP {status_code}: {server_words(body, status_code)}")


class StreamCut(Exception):
    """The connection closed before the answer's body was whole (a chunked stream without its
    last chunk)."""


class Unreachable(Exception):
    """The request got no answer: no connection, a TLS or proxy failure, a server that hung up
    before answering, or no answer in time."""


class RemoteModel:
    """What both remote models share: the key read once (a missing key stops the build), a
    client made on first use, and bounded retries."""

    def __init__(self, endpoint: Endpoint, notice: Callable[[str], None] | None = None) -> None:
        self.endpoint = endpoint
        self.spec = f"{endpoint.provider}:{endpoint.model}"
        self._key = endpoint.key()
        self._notice = notice or say
        self._client: Wire | None = None

    def client(self) -> Wire:
        if self._client is None:
            self._client = self.new_client(self._key)
        return self._client

    def new_client(self, key: str) -> Wire:
        """The server's client (see :mod:`.http`), its requests carrying ``key``."""
        raise NotImplementedError

    def listed(self) -> list[str]:
        """The ids of the models the server lists."""
        raise NotImplementedError

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The request as this wire format sends it (without ``stream``)."""
        raise NotImplementedError

    def streamed(self, body: dict[str, Any], request: ModelRequest) -> ModelResponse:
        """Send ``body`` streamed and assemble the answer; StreamFailure for what the stream
        said or showed went wrong (``nothing``: it held nothing of an answer)."""
        raise NotImplementedError

    def whole(self, body: dict[str, Any]) -> ModelResponse:
        """Send ``body`` unstreamed and read the answer."""
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> ModelResponse:
        """One request, streamed (unless the endpoint says not to). A stream that held nothing
        of an answer — none at all (llama-cpp-python with tools; llama.cpp past its context),
        or an empty one of 0 or unknown output tokens (LiteLLM's answer to that overflow) —
        is asked again once without streaming, where those servers put the answer, the tool
        calls or their real error; said in the answer's warnings."""
        body = self.body(request)
        if not self.endpoint.stream:
            return self.whole(body)
        try:
            answer = self.streamed(body, request)
        except StreamFailure as exc:
            if not exc.nothing:
                raise stream_failure(exc, self.endpoint) from exc
        else:
            if not holds_nothing(answer):
                return answer
        try:
            again = self.whole(body)
        except Exception as exc:
            if status_of(exc) == 429:
                raise  # retried as a rate limit, like any other request
            error = map_error(exc, self.endpoint)
            raise ModelError(f"{error.message} ({AGAIN_WHOLE})", code=error.code) from exc
        said = ASKED_WHOLE.format(where=self.endpoint.where)
        return replace(again, warnings=(*again.warnings, said))

    def complete(self, request: ModelRequest) -> ModelResponse:
        endpoint = self.endpoint
        if not endpoint.images and any(m.images for m in request.messages):
            raise ModelError(
                f"'{endpoint.model}' at {endpoint.where} takes no images (providers."
                f"{endpoint.provider}.images = false); nothing was sent",
                code="no_images",
            )
        return with_retries(lambda: self.stream(request), self.endpoint, self._notice)

    def offered(self) -> list[str]:
        """The ids of the models the server lists (its ``/models``), sorted; one line for a
        failure."""
        try:
            return sorted(set(self.listed()))
        except Exception as exc:
            raise map_error(exc, self.endpoint) from exc


def holds_nothing(answer: ModelResponse) -> bool:
    """No text, no call, and no output tokens counted (0, or not reported)."""
    empty = not answer.text.strip() and not answer.tool_calls
    return empty and not answer.usage.output_tokens


def with_retries(call: Callable[[], T], endpoint: Endpoint, notice: Callable[[str], None]) -> T:
    """Run ``call``; a 429 before any output is retried with backoff, a bounded number of times.

    ``call`` must raise before yielding anything for a retry to be safe: the adapters consume
    the whole stream inside it and mark a failure after the first token as not retryable.
    """
    for attempt in range(1, RATE_LIMIT_TRIES + 1):
        try:
            return call()
        except Exception as exc:
            if (
                status_of(exc) != 429
                or attempt == RATE_LIMIT_TRIES
                or getattr(exc, "_butler_started", False)
            ):
                raise map_error(exc, endpoint) from exc
            wait = min(BACKOFF_CAP_S, _retry_after(exc) or 0.5 * 2 ** (attempt - 1))
            notice(
                f"{endpoint.provider} rate limited the request; retrying in {wait:.1f} s "
                f"(attempt {attempt + 1} of {RATE_LIMIT_TRIES})"
            )
            time.sleep(wait)
    raise AssertionError("unreachable")


def mark_started(exc: BaseException) -> BaseException:
    """Flag an error raised after the model began answering: it is never retried."""
    exc._butler_started = True  # type: ignore[attr-defined]
    return exc


def map_error(exc: BaseException, endpoint: Endpoint) -> ModelError:
    """One clear line for a failed request. Never includes the key or request headers: a key
    the server echoed back is masked."""
    error = _mapped(exc, endpoint)
    masked = mask_text(error.message)
    return error if masked == error.message else ModelError(masked, code=error.code)


class StreamFailure(Exception):
    """The stream itself said the answer failed: an ``error`` event, or an early end
    (``nothing``: before any event came)."""

    def __init__(self, message: str, *, early_end: bool = False, nothing: bool = False) -> None:
        super().__init__(message)
        self.early_end = early_end
        self.nothing = nothing


#: The one line for a stream that stopped before its answer was whole.
ENDED_EARLY = "the server ended the stream before the answer was complete"
#: A stream with nothing of an answer in it (no text, no call, no finish reason).
SENT_NOTHING = "the server's stream held no answer (no text, no tool call, no finish reason)"
#: Said when such a stream was asked again whole, and that answer is the one used.
ASKED_WHOLE = (
    "{where} streamed no answer, so it was asked again without streaming (--no-stream, or "
    "`stream = false` in the config, asks that way from the start)"
)
#: Added to the error such a request came to.
AGAIN_WHOLE = "asked again without streaming: its stream held no answer"


def cut_off(exc: BaseException) -> bool:
    """Whether ``exc`` is the connection closing before the response body was whole (a
    chunked stream without its last chunk): the same early end, seen one layer down."""
    return isinstance(exc, StreamCut)


def stream_failure(failure: StreamFailure, endpoint: Endpoint) -> ModelError:
    """One line for a failure the stream itself reported (an error event inside a 200
    stream) or showed (it ended before the answer was whole)."""
    message = str(failure)
    if failure.early_end:
        why = (
            "; it sent nothing — llama.cpp's server does this when the conversation is longer "
            "than the model's context"
            if failure.nothing
            else ""
        )
        error = ModelError(f"{message} ({endpoint.where}){why}", code="incomplete")
    elif looks_like_context(message):
        error = ModelError(
            f"the conversation is too long for '{endpoint.model}' ({message})",
            code="context_too_long",
        )
    else:
        error = ModelError(f"{endpoint.provider} failed: {message}", code="provider_error")
    return map_error(error, endpoint)


def same_origin(a: str, b: str) -> bool:
    """Same scheme, host and port (default ports filled in)."""
    return origin(a) == origin(b)


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def _mapped(exc: BaseException, endpoint: Endpoint) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    status = status_of(exc)
    detail = _detail(exc)
    if isinstance(exc, Unreachable):
        return ModelError(f"cannot reach {endpoint.where} ({detail})", code="unreachable")
    if status is not None and 300 <= status < 400:
        return ModelError(
            f"{endpoint.where} answered with a redirect ({status}); redirects are not "
            "followed, so the key never reaches another server",
            code="redirect",
        )
    if status in (401, 403) or status == 400 and NO_KEY_DB in detail:
        return _refused_key(status, detail, endpoint)
    if status == 404:
        return ModelError(
            f"{endpoint.provider} has no model '{endpoint.model}' at {endpoint.where} ({detail})",
            code="model_not_found",
        )
    if status == 429:
        return ModelError(
            f"{endpoint.provider} kept rate limiting the request; try again later",
            code="rate_limited",
        )
    if status in (400, 413) and looks_like_context(detail):
        return ModelError(
            f"the conversation is too long for '{endpoint.model}' ({detail})",
            code="context_too_long",
        )
    if status == 400 and "image" in detail.lower():
        return ModelError(
            f"'{endpoint.model}' at {endpoint.where} does not take this image ({detail})",
            code="no_images",
        )
    if getattr(exc, "_butler_started", False):
        return ModelError(
            f"{endpoint.provider} stopped mid-answer ({detail}); not retried", code="interrupted"
        )
    where = f" ({status})" if status else ""
    return ModelError(f"{endpoint.provider} failed{where}: {detail}", code="provider_error")


#: What LiteLLM's proxy answers (400) to a key that is not its master key when it keeps no
#: database of keys: the butler's ``not-needed`` when no key is configured, say.
NO_KEY_DB = "No connected db"


def _refused_key(status: int, detail: str, endpoint: Endpoint) -> ModelError:
    """One line for a refused key: the variable to check, or — no key configured, so the
    butler sent none of its own — how to name one for this provider."""
    if endpoint.key_env or endpoint.key_file:
        where = endpoint.key_env or endpoint.key_file
        return ModelError(
            f"{endpoint.provider} refused the API key ({status}); check {where}",
            code="auth",
        )
    return ModelError(
        f"{endpoint.where} wants an API key ({status}: {detail}) and none is configured for "
        f"{endpoint.provider} (a gateway such as LiteLLM wants its key): name the variable "
        f"that holds it with `butler config set providers.{endpoint.provider}.api_key_env "
        "VARIABLE`",
        code="auth",
    )


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(exc: BaseException) -> float | None:
    value = exc.retry_after if isinstance(exc, StatusError) else None
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _detail(exc: BaseException) -> str:
    if isinstance(exc, StatusError):
        return server_words(exc.body, exc.status_code)
    text = " ".join(str(exc).split())
    return (text or type(exc).__name__)[:300]


def server_words(body: object, status: int) -> str:
    """What an error body says: its ``error.message`` (OpenAI, Anthropic, LiteLLM), its
    ``error`` when that is text (Ollama), else the body itself; ``HTTP status`` when empty."""
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str):
        message = json.dumps(body, ensure_ascii=False)
    return " ".join(message.split())[:300] or f"HTTP {status}"


def looks_like_context(detail: str) -> bool:
    """Whether a server's message says the conversation does not fit the model's context
    (OpenAI, vLLM and llama.cpp: "maximum context length"; LM Studio: "greater than the
    context length"; Anthropic: "prompt is too long")."""
    lowered = detail.lower()
    return any(w in lowered for w in ("context", "too long", "maximum", "too many tokens"))


def continues_call(prev_id: object, this_id: object, text: str) -> bool:
    """Whether a framing unit (a Chat Completions index, a ``tool_use`` block) carrying
    ``text`` as its arguments is a fragment of the call just before it rather than a call of
    its own. A gateway (LiteLLM's ``/v1/messages`` over a Chat Completions server) splits one
    call into a unit per fragment, all repeating its id; a model may also send two whole calls
    under one id, and those stay two. So a unit continues the call before it only when both
    carry the same non-empty id and its own text is not a whole JSON object by itself."""
    if not isinstance(this_id, str) or this_id == "" or this_id != prev_id:
        return False
    try:
        return not isinstance(json.loads(text), dict)
    except ValueError:
        return True
