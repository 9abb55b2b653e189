"""The CLI is thin: each command module parses options, calls evalkit.api, prints through the view
layer. Every import a command module makes (at module level and inside functions) is checked,
as is the CLI kit's."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

COMMANDS = Path(__file__).resolve().parent.parent / "evalkit" / "commands"
SHELL = {"kit", "exitcodes", "stdio", "__init__"}  # the shell itself, not a command
# what a command module may import from evalkit: the public surface, the error tree, the view
# layer and the shell's own modules
COMMAND_MAY_IMPORT = ("evalkit.api", "evalkit.errors", "evalkit.present", "evalkit.commands")
# the kit also writes files (atomic writes, the output-path rule); nothing heavier
KIT_MAY_IMPORT = (*COMMAND_MAY_IMPORT, "evalkit.output")


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, with its line: ``import a.b`` is ``a.b``, ``from a import b``
    is ``a.b`` when ``a.b`` could be a module (the check then holds for both readings)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside evalkit.commands
                base = ".".join(["evalkit", "commands"][: 3 - node.level] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if base == "evalkit"]
    return found


def _refused(name: str, allowed: tuple[str, ...]) -> bool:
    top = name.split(".")[0]
    if top == "click" or (top != "evalkit" and top in sys.stdlib_module_names) or top == "__future__":
        return False
    if name == "evalkit":  # `from evalkit import x`: x is checked on its own
        return False
    return not any(name == a or name.startswith(a + ".") for a in allowed)


def _violations(path: Path, allowed: tuple[str, ...]) -> list[str]:
    return [f"{path.name}:{line}: imports {name}" for line, name in _imports(path) if _refused(name, allowed)]


def _command_modules() -> list[Path]:
    return sorted(p for p in COMMANDS.glob("*.py") if p.stem not in SHELL)


@pytest.mark.parametrize("path", _command_modules(), ids=lambda p: p.stem)
def test_a_command_module_imports_only_click_the_stdlib_the_api_and_the_view_layer(path):
    assert _violations(path, COMMAND_MAY_IMPORT) == []


def test_the_kit_imports_only_the_above_and_the_output_helpers():
    assert _violations(COMMANDS / "kit.py", KIT_MAY_IMPORT) == []


def test_every_command_module_is_checked():
    assert len(_command_modules()) >= 12
    assert {"score", "judge", "audit", "report", "imports", "probe", "view"} <= {p.stem for p in _command_modules()}


def test_an_import_inside_a_function_is_named_with_its_module_and_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import click\nfrom evalkit import api, present\n\n\ndef command():\n"
        "    from evalkit.db import open_readonly\n    from evalkit import engines\n    import numpy\n"
    )
    assert _violations(bad, COMMAND_MAY_IMPORT) == [
        "bad.py:6: imports evalkit.db",
        "bad.py:7: imports evalkit.engines",
        "bad.py:8: imports numpy",
    ]


def test_the_kit_may_write_files_and_a_command_may_not(tmp_path):
    writes = tmp_path / "writes.py"
    writes.write_text("def f():\n    from evalkit.output.atomic import write_text_atomic\n")
    assert _violations(writes, KIT_MAY_IMPORT) == []
    assert _violations(writes, COMMAND_MAY_IMPORT) == ["writes.py:2: imports evalkit.output.atomic"]


def test_a_relative_import_is_read_as_the_module_it_names(tmp_path):
    rel = tmp_path / "rel.py"
    rel.write_text("from .kit import fail\nfrom ..db import open_readonly\n")
    assert _violations(rel, COMMAND_MAY_IMPORT) == ["rel.py:2: imports evalkit.db"]
