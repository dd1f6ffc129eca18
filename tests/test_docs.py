"""Reference pages stay in step with the code: every error code, every setting."""

from __future__ import annotations

import re
from pathlib import Path

from ultimat3_jobs.conf import CHECK_CROSS_FIELD, CHECK_NOT_A_MAPPING, CHECK_UNKNOWN_KEY, SPEC
from ultimat3_jobs.errors import all_error_classes

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_errors_page_lists_every_code_exactly_once() -> None:
    page = (DOCS / "reference" / "errors.md").read_text()
    rows = re.findall(r"^\|\s*`(X_[A-Z_]+)`", page, re.MULTILINE)
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes)), "two classes share a code"
    assert sorted(rows) == sorted(codes)


def test_settings_page_lists_every_key_and_check_id() -> None:
    page = (DOCS / "reference" / "settings.md").read_text()
    for key, check_id, _ in SPEC:
        assert f"`{key}`" in page, key
        assert check_id.split(".")[1] in page, check_id
    for check_id in (CHECK_NOT_A_MAPPING, CHECK_UNKNOWN_KEY, CHECK_CROSS_FIELD):
        assert check_id.split(".")[1] in page, check_id


def test_no_page_suggests_installing_from_a_package_index() -> None:
    """The package is not published on an index: the README and the docs say how to install it
    from a checkout or a built wheel, never ``pip install ultimat3-jobs``."""
    pages = [DOCS.parent / "README.md", *sorted(DOCS.rglob("*.md"))]
    published = re.compile(r"pip\s+install\s+(?:-U\s+|--upgrade\s+)?[\"']?ultimat3[-_]jobs\b")
    offenders = [
        str(page.relative_to(DOCS.parent)) for page in pages if published.search(page.read_text())
    ]
    assert offenders == []
    readme = (DOCS.parent / "README.md").read_text()
    assert "pip install /path/to/ultimat3-jobs" in readme
    assert "python -m build" in readme


def test_readme_quickstart_has_two_commands() -> None:
    """One command runs the example project, one runs the tests: nothing else to set up."""
    readme = (DOCS.parent / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", quickstart, re.DOTALL)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["./scripts/demo", "./scripts/test"]


_TREE_LINE = re.compile(r"^((?:[│ ]   )*)(?:[├└]── )?(\w+)(?: \([^)]*\))?\s+(X_[A-Z_]+)$")


def test_errors_page_tree_is_the_class_tree() -> None:
    """The page's tree is the only drawing of the hierarchy: each line names a class with its
    code under a class it derives from, and every class stands in it."""
    page = (DOCS / "reference" / "errors.md").read_text()
    block = page.split("## The tree", 1)[1].split("```", 2)[1]
    classes = {cls.__name__: cls for cls in all_error_classes()}
    parents: list[type] = []
    drawn = set()
    for line in block.splitlines():
        match = _TREE_LINE.match(line)
        if match is None:
            continue
        prefix, name, code = match.groups()
        depth = len(prefix) // 4 + (1 if "──" in line else 0)
        cls = classes[name]
        assert cls.code == code, line
        del parents[depth:]
        if parents:
            assert issubclass(cls, parents[-1]), line
        parents.append(cls)
        drawn.add(name)
    assert drawn == set(classes)
