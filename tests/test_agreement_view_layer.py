"""One view layer: the document model lives in evalkit.present.document and every view builds on
it; the verdicts report escapes its text with the presentation kit's ASCII rule (one sanitizer
module), byte for byte as before."""

from __future__ import annotations

import ast
from pathlib import Path

import evalkit.present.document as document
from evalkit.present.safe import ascii_text

ROOT = Path(__file__).resolve().parent.parent
MODEL = (
    "Notes",
    "ViewTable",
    "Chart",
    "Charts",
    "Section",
    "text_lines",
    "markdown_lines",
    "html_blocks",
    "stat_text",
    "num",
)


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}


def test_the_document_model_is_defined_in_present_document_only():
    assert set(MODEL) <= _defined(ROOT / "evalkit" / "present" / "document.py")
    for view in (
        "evalkit/agreement/view.py",
        "evalkit/probes/view.py",
        "evalkit/report/html.py",
        "evalkit/report/markdown.py",
    ):
        assert not set(MODEL) & _defined(ROOT / view), view


def test_the_audit_probe_and_report_views_share_the_model():
    import evalkit.agreement.audit_output as audit_output
    import evalkit.probes.view as probe_view
    import evalkit.report.html as html

    assert probe_view.Section is document.Section and html.html_blocks is document.html_blocks
    assert audit_output.text_lines is document.text_lines


def test_ascii_text_escapes_like_unicode_escape():
    hostile = "caf\u00e9 \u202eevil\x1b[2J\\n\ttab \U0001f600"
    assert ascii_text(hostile) == "caf\\xe9 \\u202eevil\\x1b[2J\\\\n\\ttab \\U0001f600"
    assert ascii_text(3.5) == "3.5"


def test_verdicts_use_the_kits_ascii_rule():
    from evalkit.verdicts import analysis

    assert analysis.ascii_text is ascii_text
    assert "ascii_text" not in _defined(ROOT / "evalkit" / "verdicts" / "analysis.py")
