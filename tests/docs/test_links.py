"""Every relative link in the project's Markdown points at a file that exists, and every `#anchor` at a heading there.

The README, docs/, the model card and the experiments' and results' READMEs link into one another by path and by
heading; a moved section or a renamed folder breaks them silently, so this walks them all (no network: web links
are not checked)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", ".git", "runs", ".pytest_cache", "node_modules"}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def markdown_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.md") if not SKIP & set(p.relative_to(ROOT).parts[:-1]))


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (links there are examples, not links)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    heading = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip())
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            a = anchor(m.group(1))
            found.add(a if a not in seen else f"{a}-{seen[a]}")
            seen[a] = seen.get(a, 0) + 1
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target} (no such path)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    return broken


def test_anchor_follows_github():
    assert anchor("Verify mode with folding: the paper's KV saving, every token the base's choice") == \
        "verify-mode-with-folding-the-papers-kv-saving-every-token-the-bases-choice"
    assert anchor("The default model v2 (2026-11-24)") == "the-default-model-v2-2026-11-24"
    assert anchor("`hamburger serve` and *chat*") == "hamburger-serve-and-chat"


def test_checker_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Real heading\n")
    page.write_text("# Top\n[ok](#top) [ok](other.md#real-heading) [bad](#nowhere) [bad](gone.md)\n"
                    "```\n[not a link](gone2.md)\n```\n`[code](gone3.md)` [web](https://example.com/x)\n")
    assert broken_links(page) == ["#nowhere (no such heading)", "gone.md (no such path)"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(path):
    assert broken_links(path) == []
