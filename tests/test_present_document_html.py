"""The document model's HTML writer (evalkit.present.document.html_blocks), beside its text and
markdown writers: headings by level, the intro, run-id cells linked only where the caller has an
anchor, the judge's words quoted, every chart drawn by the function the caller gives, all text
escaped. The report page writes the audit's sections through it."""

from __future__ import annotations

from evalkit.present import Table
from evalkit.present.document import Chart, Charts, Section, ViewTable, html_blocks

HOSTILE = '<script>alert("x")</script>'


def _sections() -> list[Section]:
    table = Table(["run", "rationale"], [["run-a", "because <b>"], [HOSTILE, ""]], title="Disagreements")
    chart = Chart("bars", "Rates", f"caption {HOSTILE}", bars=[{"label": "a", "value": 0.5, "low": 0.2, "high": 0.8}])
    return [
        Section(
            f"Heading {HOSTILE}",
            [ViewTable(table, "disagreements", run_column=0, quote_column=1), Charts("Charts", [chart])],
            intro="An intro & more",
        )
    ]


def test_headings_follow_the_level_and_text_is_escaped():
    out = html_blocks(_sections(), lambda chart: "<svg></svg>", level=2)
    assert out.startswith("<h2>Heading &lt;script&gt;")
    assert '<p class="lede">An intro &amp; more</p>' in out
    assert "<h3>Disagreements</h3>" in out and "<h3>Charts</h3>" in out
    assert "<script>" not in out


def test_run_cells_link_only_where_the_caller_gives_an_anchor():
    out = html_blocks(_sections(), lambda chart: "", lambda run_id: "run-1" if run_id == "run-a" else None)
    assert '<a href="#run-1">run-a</a>' in out
    assert out.count("<a href=") == 1  # the hostile run id has no anchor: plain, escaped text
    assert html_blocks(_sections(), lambda chart: "").count("<a href=") == 0  # no links by default


def test_the_judges_words_are_quoted_and_empty_ones_left_empty():
    out = html_blocks(_sections(), lambda chart: "")
    assert "<blockquote>because &lt;b&gt;</blockquote>" in out
    assert out.count("<blockquote>") == 1


def test_each_chart_is_drawn_by_the_given_function_in_a_captioned_figure():
    drawn = []
    out = html_blocks(_sections(), lambda chart: drawn.append(chart.title) or f"<svg>{len(drawn)}</svg>")
    assert drawn == ["Rates"]
    assert '<div class="charts"><figure><svg>1</svg><figcaption>caption &lt;script&gt;' in out


def test_the_report_page_writes_the_audit_sections_through_it():
    import evalkit.report.html as page

    assert page.html_blocks is html_blocks
    assert "<blockquote>" not in page.__loader__.get_source(page.__name__)
