"""The layout page (docs/project/layout.md) names every module of the library and of the cross-check, and no other."""

from __future__ import annotations

from tests.conftest import ROOT

LAYOUT = ROOT / "docs" / "project" / "layout.md"


def test_the_layout_page_lists_exactly_the_modules_there_are():
    block = LAYOUT.read_text().split("<!-- layout -->\n```\n")[1].split("```\n<!-- /layout -->")[0]
    listed, folders = set(), []
    for line in block.splitlines():
        indent = (len(line) - len(line.lstrip())) // 2
        name = line.split()[0]
        folders = folders[:indent]
        if name.endswith("/"):
            folders.append(name)
        else:
            listed.add("".join(folders) + name)
    actual = {
        path.relative_to(ROOT).as_posix()
        for top in ("idempotent_constructs", "crosscheck")
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert listed == actual, {"missing from the layout page": sorted(actual - listed), "gone": sorted(listed - actual)}
