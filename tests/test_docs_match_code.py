"""docs/architecture.md lists every module there is (and none that is gone); docstrings name
concepts, not origin-document numbers (docs/glossary.md maps the concepts to their sources); the
public names the issue found doubled mean one thing each."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ARCH = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
PACKAGES = ("evalkit", "judges")


def _modules() -> set[str]:
    out = set()
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            if f.name != "__init__.py" and "__pycache__" not in f.parts and not f.is_symlink():
                out.add(f.relative_to(ROOT).as_posix())
    return out


def test_architecture_lists_every_module():
    listed = set(re.findall(r"`((?:evalkit|judges)/[\w/]+\.py)`", ARCH))
    assert sorted(_modules() - listed) == [], "add these modules to docs/architecture.md (## Modules)"


def test_architecture_lists_no_module_that_is_gone():
    listed = set(re.findall(r"`((?:evalkit|judges)/[\w/]+\.py)`", ARCH))
    assert sorted(p for p in listed if not (ROOT / p).is_file()) == []


@functools.cache
def _parsed(path: Path) -> tuple[str, ast.Module]:
    """A module's text and syntax tree, read once for all the tests here."""
    text = path.read_text(encoding="utf-8")
    return text, ast.parse(text)


def _docstrings_and_comments(path: Path):
    """(line, text) of every docstring and comment of a module: the prose a newcomer reads."""
    text, tree = _parsed(path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def test_code_names_concepts_not_seed_numbers():
    bare = re.compile(r"\bseeds? ?0\d\d\b", re.IGNORECASE)
    hits = [
        f"{m}:{line}"
        for m in sorted(_modules() | {f"{p}/__init__.py" for p in PACKAGES})
        for line, prose in _docstrings_and_comments(ROOT / m)
        if bare.search(prose)
    ]
    assert hits == [], "name the concept (see docs/glossary.md) instead of the seed number"


def _string_literals(path: Path):
    for node in ast.walk(_parsed(path)[1]):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_printed_text_tests_examples_and_configs_name_concepts_not_seed_numbers():
    """What a user reads (every string evalkit prints, the shipped configs' comments) and what a
    contributor reads (tests, examples) name the concept too. prompts/*.toml keep their wording:
    a rubric's identity is the sha256 of its file's bytes (judges/rubrics.py), so an edit there
    would orphan every cached and stored annotation made with it."""
    bare = re.compile(r"\bseeds? ?0\d\d\b", re.IGNORECASE)
    hits = [f"{m}:{line}" for m in sorted(_modules()) for line, text in _string_literals(ROOT / m) if bare.search(text)]
    for path in sorted((ROOT / "tests").glob("*.py")) + sorted((ROOT / "examples").rglob("*.py")):
        hits += [
            f"{path.relative_to(ROOT)}:{line}"
            for line, prose in _docstrings_and_comments(path)
            if bare.search(prose) and path.name != "test_docs_match_code.py"
        ]
    for path in sorted((ROOT / "configs").glob("*.toml")):
        hits += [
            f"{path.relative_to(ROOT)}:{n}"
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if bare.search(line)
        ]
    assert hits == [], "name the concept (see docs/glossary.md) instead of the seed number"


def test_glossary_maps_every_origin_document():
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    for number in ("000", "001", "002", "003", "004"):
        assert re.search(rf"\|\s*{number}\s*\|", glossary), number


@functools.cache
def _public_functions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for m in sorted(_modules()):
        tree = _parsed(ROOT / m)[1]
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(m)
    return found


@pytest.mark.parametrize(
    "name", ["score_file", "score_paths", "load_config", "render_markdown", "render_table", "render_json"]
)
def test_doubled_names_mean_one_thing(name):
    assert len(_public_functions().get(name, [])) <= 1, _public_functions()[name]
