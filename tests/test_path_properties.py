"""Property test: rules, grants and the allowed roots judge the file a path names.

Random paths built from ``..``, ``.``, empty segments (``//``), symlinks (inside the tree, out
of it, to the butler's home), unicode names and ``~`` are judged by the real gate (the file
tools' resolver, the ``tiered`` policy, a widened grant) and by a reference written here on
``os.path.realpath`` alone. They must agree on every path.

In process (no subprocess per example), on a real directory tree with real symlinks.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from butler_cli.core.grants import Grant
from butler_cli.tools.files import FileTools

#: Same knob as tests/test_properties.py: BUTLER_PROPERTY_EXAMPLES=5000 for a longer soak.
EXAMPLES = int(os.environ.get("BUTLER_PROPERTY_EXAMPLES", "150"))
STATS: Counter[str] = Counter()

RULES = """
[[rule]]
name = "notes are mine"
tool = "write_file"
tier = "safe"
args = { path = "glob:~/notes/**" }

[[rule]]
name = "keep important"
tool = "write_file"
tier = "forbidden"
args = { path = "glob:~/important/*" }
"""

SEGMENTS = [
    "..", ".", "", "notes", "important", "drafts", "work", "a", "keep.txt", "x.txt",
    "ünï", "日本.txt", "to-notes", "to-important", "out", "to-home", "to-butler", "dangling",
    "drafts/x.txt", "work/drafts/日本.txt", "drafts/a/x.txt", "notes/x.txt", "important/keep.txt",
]  # fmt: skip
STARTS = ["", "", "~/", "/", "{work}/", "./", "~//", "{me}/", "{work}/drafts/", "drafts/"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """HOME (``me``) with notes/, important/, work/drafts/ and links in and out of them."""
    root = tmp_path_factory.mktemp("paths")
    me, outside, butler = root / "me", root / "outside", root / "me" / ".butler"
    work = me / "work"
    for d in (me / "notes" / "a", me / "important", work / "drafts" / "a", outside, butler):
        d.mkdir(parents=True, exist_ok=True)
    (me / "important" / "keep.txt").write_text("k")
    links = {
        work / "to-notes": me / "notes",
        me / "notes" / "to-important": me / "important",
        work / "drafts" / "out": outside,
        work / "to-home": me,
        me / "notes" / "to-butler": butler,
        work / "dangling": me / "nowhere",
        me / "to-important": me / "important",
    }
    for link, target in links.items():
        link.symlink_to(target)
    return {"root": root, "me": me, "work": work, "butler": butler, "outside": outside}


def reference_path(work: Path, me: Path, raw: str) -> str:
    expanded = str(me) + raw[1:] if raw == "~" or raw.startswith("~/") else raw
    return os.path.realpath(os.path.join(work, expanded))


def inside(path: str, folder: Path) -> bool:
    real = os.path.realpath(folder)
    return path == real or path.startswith(real + os.sep)


paths_st = st.builds(
    lambda start, segs: start + "/".join(segs),
    st.sampled_from(STARTS),
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=7),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(raw_template=paths_st)
# one sure case of each kind, so the run below always reaches all of them
@example(raw_template="drafts/x.txt")  # approve, covered by the grant
@example(raw_template="~/notes/x.txt")  # allow
@example(raw_template="~/important/keep.txt")  # refuse
def rules_grants_and_roots_agree_with_realpath(
    raw_template: str, tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from butler_policies.tiered import TieredPolicy, parse_rules

    me, work, butler = tree["me"], tree["work"], tree["butler"]
    monkeypatch.setenv("HOME", str(me))
    raw = raw_template.format(work=work, me=me)
    policy = TieredPolicy(parse_rules(RULES, Path("rules.toml")), Path("rules.toml"))
    tools = FileTools(work, butler, protected=[], roots=[work, me / "notes", me / "important"])
    gate = tools.governed(policy.classify)
    verdict = gate.classify("write_file", {"path": raw, "content": ""})

    ref = reference_path(work, me, raw)
    full = Path(work) / Path(raw.replace("~", str(me), 1) if raw.startswith("~") else raw)
    last_link = os.path.islink(os.path.join(os.path.realpath(full.parent), full.name))
    if not raw.strip():
        expected = "refuse"
    elif last_link or inside(ref, butler) or inside(os.path.realpath(butler), Path(ref)):
        expected = "refuse"  # through a link, or the butler's own files
    elif not any(inside(ref, r) for r in (work, me / "notes", me / "important")):
        expected = "refuse"  # outside the allowed roots
    elif os.path.dirname(ref) == os.path.realpath(me / "important"):
        expected = "refuse"  # forbidden: ~/important/* (one level, `*` never crosses `/`)
    elif ref.startswith(os.path.realpath(me / "notes") + os.sep):
        expected = "allow"  # safe: ~/notes/** (anything below notes/)
    else:
        expected = "approve"  # no rule: write_file's default
    STATS[expected] += 1
    assert verdict.decision == expected, (raw, ref, verdict)

    if expected == "refuse":
        return
    judged = gate.judged("write_file", {"path": raw, "content": ""})
    assert judged["path"] == ref
    grant = Grant("write_file", patterns=(("path", "glob:drafts/*.txt"),))
    covered = grant.covers("write_file", {"path": raw}, judged)
    drafts = os.path.realpath(work / "drafts")
    assert covered == (os.path.dirname(ref) == drafts and ref.endswith(".txt")), (raw, ref)
    STATS["covered" if covered else "not covered"] += 1


def test_rules_grants_and_roots_agree_with_realpath(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every random path holds; then the run must have reached every verdict and both sides of
    the grant, or it proved nothing. (The check is in the same test: split in two, xdist could
    run it on a worker that saw no case.)"""
    STATS.clear()
    rules_grants_and_roots_agree_with_realpath(tree=tree, monkeypatch=monkeypatch)
    print(f"\npath property cases: {dict(STATS)}")
    for kind in ("allow", "approve", "refuse", "covered", "not covered"):
        assert STATS[kind] > 0, (kind, dict(STATS))
