"""The documentation's shape: a short README, pages of bounded size, every module named in
docs/architecture.md, and relative links that reach their files (issue 49)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
ARCHITECTURE = DOCS / "architecture.md"
PACKAGES = ("robot_rl", "sim", "controllers", "hardware")

README_MAX_BYTES = 8 * 1024
PAGE_MAX_BYTES = 40 * 1024

FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[^\n]*$", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`]*`")
# [text](target) or ![alt](target), the target possibly on the next line, an optional title.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _modules() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__init__.py" or "__pycache__" in path.parts:
                continue
            found.append(path.relative_to(ROOT).as_posix())
    return found


def _relative_links(text: str) -> list[str]:
    text = INLINE_CODE.sub("", FENCE.sub("", text))
    links = []
    for target in LINK.findall(text):
        if SCHEME.match(target) or target.startswith("#"):
            continue
        links.append(target.split("#", 1)[0])
    return links


def test_readme_is_a_front_door() -> None:
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes, over {README_MAX_BYTES}"


def test_no_docs_page_over_40_kb() -> None:
    big = {
        p.relative_to(ROOT).as_posix(): p.stat().st_size
        for p in DOCS.rglob("*.md")
        if p.stat().st_size > PAGE_MAX_BYTES
    }
    assert not big, f"pages over {PAGE_MAX_BYTES} bytes (split their history off): {big}"


def test_every_module_is_named_in_architecture() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    modules = _modules()
    assert len(modules) > 100, "the package folders were not found"
    missing = [m for m in modules if m not in text]
    assert not missing, "modules not named in docs/architecture.md:\n" + "\n".join(missing)


def test_relative_links_reach_their_files() -> None:
    broken = []
    for page in _pages():
        for target in _relative_links(page.read_text(encoding="utf-8")):
            if target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT).as_posix()}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_link_finder_sees_what_it_should() -> None:
    text = (
        "[a](docs/x.md#y) [b](\nz.md) ![c](img.png) [d](https://e.org/f.md) [g](#h)\n"
        "`[i](j.md)`\n```\n[k](l.md)\n```\n"
    )
    assert _relative_links(text) == ["docs/x.md", "z.md", "img.png"]
