"""Image attachments (issue 32, story 9): `run -f shot.png` and the chat's `@shot.png` send
the image as an image — Chat Completions' ``image_url`` part, Anthropic's ``image`` block —
to a real HTTP server on 127.0.0.1 (tests/fake_llm.py), never its bytes as text; a model
that does not take images is said in one line."""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import spawn_butler
from fake_llm import FakeLLM, Reply, anthropic_stream, openai_stream

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "output.schema.json").read_text())
ANTHROPIC_KEY = {"ANTHROPIC_API_KEY": "sk-test-images"}


def png(width: int = 16, height: int = 16) -> bytes:
    """A real PNG (noise, so it does not compress away): what a screenshot is."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def flags(fake: FakeLLM, provider: str) -> list[str]:
    if provider == "anthropic":
        return ["--model", "anthropic:local", "--base-url", fake.url]
    return ["--model", "openai-compatible:local", "--base-url", fake.url + "/v1"]


def image_parts(body: dict[str, Any], provider: str) -> list[tuple[str, str]]:
    """(media type, base64) of each image the request's last user message carries."""
    content = body["messages"][-1]["content"]
    assert isinstance(content, list), f"no content parts: {content!r:.200}"
    found = []
    for part in content:
        if provider == "anthropic" and part["type"] == "image":
            assert part["source"]["type"] == "base64"
            found.append((part["source"]["media_type"], part["source"]["data"]))
        elif part["type"] == "image_url":
            url = part["image_url"]["url"]
            head, _, data = url.partition(",")
            assert head.startswith("data:") and head.endswith(";base64")
            found.append((head[5:-7], data))
    return found


def texts(body: dict[str, Any]) -> str:
    """Every text the request carries, joined: where bytes sent as text would show."""
    out = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "text":
                out.append(part["text"])
    return "\n".join(out)


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_run_f_sends_a_png_as_an_image(
    provider: str, fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    data = png()
    (workdir / "shot.png").write_bytes(data)
    stream = anthropic_stream if provider == "anthropic" else openai_stream
    fake.replies = [Reply(events=stream("a red square"))]
    env = ANTHROPIC_KEY if provider == "anthropic" else {}
    r = butler("run", *flags(fake, provider), "-f", "shot.png", "what is this?", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert "a red square" in r.stdout
    body = fake.requests[0]["body"]
    assert image_parts(body, provider) == [("image/png", base64.b64encode(data).decode())]
    sent = texts(body)
    assert "what is this?" in sent and "PNG" not in sent and "\ufffd" not in sent
    result = json.loads(r.stdout.strip().splitlines()[-1])
    jsonschema.validate(result, SCHEMA)
    (image,) = [b for m in result["messages"] for b in m["content"] if b["type"] == "image"]
    assert image["source"]["media_type"] == "image/png"


def test_the_type_is_known_by_its_bytes_never_its_name(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    """A JPEG named .png goes as image/jpeg; text named .png goes as text."""
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + os.urandom(64)
    (workdir / "photo.png").write_bytes(jpeg)
    (workdir / "notes.png").write_text("just words\n")
    fake.replies = [Reply(events=openai_stream("ok"))]
    r = butler("run", *flags(fake, "openai"), "-f", "photo.png", "-f", "notes.png", "look")
    assert r.returncode == 0, r.stderr
    body = fake.requests[0]["body"]
    assert image_parts(body, "openai") == [("image/jpeg", base64.b64encode(jpeg).decode())]
    assert "just words" in texts(body)


def test_an_image_past_the_cap_is_refused_in_one_line(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    (workdir / "huge.png").write_bytes(png()[:16] + b"\0" * (5 * 1024 * 1024))
    r = butler("run", *flags(fake, "openai"), "-f", "huge.png", "look")
    assert r.returncode != 0
    assert "huge.png is an image past 5 MB; not attached" in r.stderr
    assert "Traceback" not in r.stderr and fake.requests == []


def test_a_server_refusing_image_content_is_one_line(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    """What a text-only model behind an OpenAI-compatible server answers (a 400 about the
    image content) is one line naming the model, never a traceback."""
    (workdir / "shot.png").write_bytes(png())
    error = {"error": {"message": "Image input is not supported for this model", "code": 400}}
    fake.replies = [Reply(status=400, body=error)]
    r = butler("run", *flags(fake, "openai"), "-f", "shot.png", "look")
    assert r.returncode != 0
    assert "'local' at" in r.stderr and "does not take this image" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_scripted_model_refuses_an_image_in_one_line(
    butler: Any, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "shot.png").write_bytes(png())
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "never"}]}))
    r = butler("run", "--model", f"scripted:{script}", "-f", "shot.png", "look")
    assert r.returncode != 0
    assert "the scripted model does not take images" in r.stderr
    assert "never" not in r.stdout and "Traceback" not in r.stderr


def chat_at(fake: FakeLLM, home: Path, cwd: Path, name: str, data: bytes) -> dict[str, Any]:
    """``data`` as the file ``name``, attached by one chat line on a pty: the request sent."""
    (cwd / name).write_bytes(data)
    fake.replies = [Reply(events=openai_stream("an answer"))]
    child = spawn_butler(["chat", *flags(fake, "openai")], home, cwd)
    child.expect("you ›")
    child.sendline(f"what is in @{name}?")
    child.expect(f"attached @{name}")
    child.expect("an answer")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect("Goodbye")
    body: dict[str, Any] = fake.requests[0]["body"]
    return body


def test_chat_at_png_sends_the_image(fake: FakeLLM, butler_home: Path, workdir: Path) -> None:
    data = png()
    body = chat_at(fake, butler_home, workdir, "shot.png", data)
    assert image_parts(body, "openai") == [("image/png", base64.b64encode(data).decode())]
    assert "\ufffd" not in texts(body) and "PNG" not in texts(body)


def test_chat_knows_a_webp_by_its_bytes_whatever_its_size_field_decodes_to(
    fake: FakeLLM, butler_home: Path, workdir: Path
) -> None:
    """A WebP whose RIFF size bytes happen to be valid UTF-8 (here "é") was taken for a binary
    file by a check on its decoded text; its bytes say it is an image."""
    data = b"RIFF\xc3\xa9\x00\x00WEBPVP8 " + os.urandom(200)
    body = chat_at(fake, butler_home, workdir, "pic.webp", data)
    assert image_parts(body, "openai") == [("image/webp", base64.b64encode(data).decode())]


def test_a_park_holding_an_image_loads_and_its_resume_sends_the_image_again(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    """The run parks on a write; the park file holds the image block, passes the park's own
    checks when resumed, and the resumed request carries the same image (never as text)."""
    data = png()
    (workdir / "shot.png").write_bytes(data)
    args = json.dumps({"path": "seen.txt", "content": "red"})
    fake.replies = [
        Reply(events=openai_stream(calls=[("c1", "write_file", [args])])),
        Reply(events=openai_stream("written")),
    ]
    r = butler("run", *flags(fake, "openai"), "-f", "shot.png", "note what it shows")
    assert r.returncode == 3, r.stderr
    [park] = json.loads(butler("pending", "--json").stdout)
    r = butler("resume", park["id"], "--approve", *flags(fake, "openai"))
    assert r.returncode == 0, r.stderr
    assert (workdir / "seen.txt").read_text() == "red"
    body = fake.requests[-1]["body"]
    first_user = {**body, "messages": [m for m in body["messages"] if m["role"] == "user"][:1]}
    assert image_parts(first_user, "openai") == [("image/png", base64.b64encode(data).decode())]
    assert "\ufffd" not in texts(body)


def test_an_image_weighs_as_an_image_not_as_its_base64_text(
    fake: FakeLLM, butler_home: Path, workdir: Path
) -> None:
    """The chat compacts before a request would pass the model's window, weighing messages by
    their characters: an image counted as its base64 (~170,000 tokens for this one) made every
    later turn of a 100,000-token model "too long". An image is sent as an image, weighed as
    one (a fixed share), and the next turn goes as it is."""
    data = png(360, 360)  # noise: ~390 KB, ~520,000 characters of base64
    (workdir / "shot.png").write_bytes(data)
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "context_windows.json").write_text(
        json.dumps({"openai-compatible:local": 100_000})
    )
    fake.respond = lambda body: Reply(events=openai_stream(f"reply-{len(body['messages'])}"))
    child = spawn_butler(["chat", *flags(fake, "openai")], butler_home, workdir)
    child.expect("you ›")
    for line in ("what is in @shot.png?", "thanks", "and the colours?", "one more"):
        child.sendline(line)
        child.expect("reply-")
        child.expect("you ›")
        assert "compact" not in child.before
    assert len(fake.requests) == 4
    assert not any("Summarise" in json.dumps(q["body"]) for q in fake.requests)
    assert all(
        image_parts({"messages": q["body"]["messages"][1:2]}, "openai") for q in fake.requests
    )
    child.sendcontrol("d")
    child.expect("Goodbye")


def test_a_provider_set_to_take_no_images_refuses_one_before_sending(
    fake: FakeLLM, butler: Any, butler_home: Path, workdir: Path
) -> None:
    """`providers.NAME.images = false` (set with `butler config set`): an image is refused in
    one line and nothing reaches the server; text still goes; a value that is not true or
    false is refused by the config check."""
    (workdir / "shot.png").write_bytes(png())
    r = butler("config", "set", "providers.openai-compatible.images", "false")
    assert r.returncode == 0, r.stderr
    assert "images = false" in (butler_home / "config.toml").read_text()
    r = butler("run", *flags(fake, "openai"), "-f", "shot.png", "look")
    assert r.returncode != 0
    assert "'local' at" in r.stderr and "takes no images" in r.stderr
    assert "Traceback" not in r.stderr and fake.requests == []
    fake.replies = [Reply(events=openai_stream("words only"))]
    r = butler("run", *flags(fake, "openai"), "just words")
    assert r.returncode == 0 and "words only" in r.stdout, r.stderr
    (butler_home / "config.toml").write_text('[providers.openai-compatible]\nimages = "no"\n')
    r = butler("run", *flags(fake, "openai"), "just words")
    assert r.returncode == 2 and "images = true or false" in r.stderr


def test_the_log_names_an_image_never_prints_its_base64(
    fake: FakeLLM, butler: Any, workdir: Path
) -> None:
    data = png()
    (workdir / "shot.png").write_bytes(data)
    fake.replies = [Reply(events=openai_stream("a square"))]
    assert butler("run", *flags(fake, "openai"), "-f", "shot.png", "what?").returncode == 0
    [listed] = json.loads(butler("log", "--json").stdout)
    text = butler("log", "show", listed["id"]).stdout
    assert "you: [an image, image/png, ~" in text
    assert base64.b64encode(data).decode()[:40] not in text
