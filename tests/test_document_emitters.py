"""The one document model (evalkit.present.document) and its three emitters (text, markdown,
HTML): each block and mark is written one way per format, text from a database is escaped in each,
evalkit's own words as they are, what one format alone shows is stated in the document (Only), a
section inside a section is one heading level down, and run-id cells link only to runs the page
holds."""

from __future__ import annotations

import pytest

from evalkit.present import Table
from evalkit.present import document as d
from evalkit.present.to_html import Writer, html_page
from evalkit.present.to_markdown import inline as md_inline
from evalkit.present.to_markdown import markdown_lines
from evalkit.present.to_text import text_lines

EVIL = "<b onclick=\"x\">*bold* [l](http://e.com) 'q'</b>"
HOSTILE = '<script>alert("x")</script>'
html = Writer()


def test_data_text_is_escaped_in_every_format():
    assert html.inline(EVIL) == "&lt;b onclick=&quot;x&quot;&gt;*bold* [l](http://e.com) &#x27;q&#x27;&lt;/b&gt;"
    assert "<b" not in md_inline(EVIL) and "\\*bold\\*" in md_inline(EVIL)
    assert text_lines(d.Para("\x1b[2Jgone"))[0] == "\\x1b[2Jgone"


def test_own_words_keep_quotes_the_page_sets_backticked_commands_as_code_and_escapes_angle_brackets():
    words = d.Lit("run's `evalkit score` n<3 & more")
    assert html.inline(words) == "run's <code>evalkit score</code> n&lt;3 &amp; more"
    assert html.inline(d.Lit("one ` alone")) == "one ` alone"
    assert md_inline(words) == "run's `evalkit score` n<3 & more"


def test_a_value_that_is_not_text_is_escaped_as_its_text():
    assert html.inline(None) == "None" and md_inline(3) == "3"


def test_only_shows_its_content_in_its_own_format():
    content = [d.Lit("both"), d.Only(d.HTML, d.Lit(" page")), d.Only(d.MARKDOWN, d.Lit(" summary"))]
    assert html.inline(content) == "both page"
    assert md_inline(content) == "both summary"
    blocks = [
        d.Only(d.HTML, [d.Para(d.Lit("page"))]),
        d.Only(d.MARKDOWN, [d.Para(d.Lit("summary"))]),
        d.Only(d.TEXT, [d.Para(d.Lit("terminal"))]),
    ]
    assert html.block(blocks) == "<p>page</p>"
    assert markdown_lines(blocks) == ["summary", ""]
    assert text_lines(blocks) == ["terminal"]


def test_marks_are_written_one_way_per_format():
    badge = d.Badge(d.Lit("n<3"), kind="small-n", title="fewer 'than' 3")
    assert html.inline(badge) == '<span class="badge small-n" title="fewer &#x27;than&#x27; 3">n&lt;3</span>'
    assert md_inline(badge) == "**n<3**"
    link = d.Link("run <1>", d.run_anchor("run <1>"))
    assert html.inline(link) == f'<a href="#{d.run_anchor("run <1>")}">run &lt;1&gt;</a>'
    assert md_inline(link) == "run &lt;1&gt;"  # markdown has no anchors: the text alone
    assert html.inline(d.Term(d.Lit("n<3"))) == "n&lt;3" and md_inline(d.Term(d.Lit("x"))) == "**x**"
    assert html.inline(d.Styled("a", cls='cls-"x"')) == '<span class="cls-&quot;x&quot;">a</span>'


def test_every_paragraph_kind_is_written_in_every_format():
    for kind in d.PARAGRAPH_KINDS:
        assert html.block(d.Para(d.Lit("x"), kind)).endswith(">x</p>")
        assert "x" in markdown_lines(d.Para(d.Lit("x"), kind))[0]
        assert text_lines(d.Para(d.Lit("x"), kind)) == ["x"]
    assert markdown_lines(d.Para(d.Lit("none here"), "absent")) == ["_none here_", ""]
    assert markdown_lines(d.Para(d.Lit("careful"), "banner")) == ["> **careful**", ""]


def test_an_unknown_paragraph_kind_is_refused_when_built():
    with pytest.raises(ValueError, match="paragraph kind 'loud'"):
        d.Para(d.Lit("x"), "loud")


def _sections() -> list[d.Section]:
    table = Table(["run", "rationale"], [["run-a", "because <b>"], [HOSTILE, ""]], title="Disagreements")
    chart = d.Chart("bars", "Rates", f"caption {HOSTILE}", bars=[{"label": "a", "value": 0.5, "low": 0.2, "high": 0.8}])
    return [
        d.Section(
            f"Heading {HOSTILE}",
            [d.ViewTable(table, "disagreements", run_column=0, quote_column=1), d.Charts("Charts", [chart])],
            intro="An intro & more",
        )
    ]


def test_headings_follow_the_level_and_text_is_escaped():
    out = html.block(_sections(), 2)
    assert out.startswith("<h2>Heading &lt;script&gt;")
    assert '<p class="lede">An intro &amp; more</p>' in out
    assert "<h3>Disagreements</h3>" in out and "<h3>Charts</h3>" in out
    assert "<script>" not in out
    lines = markdown_lines(_sections(), level=2)
    assert lines[0].startswith("## Heading &lt;script&gt;") and "### Disagreements" in lines
    assert text_lines(_sections())[:3] == ["", f"== Heading {HOSTILE} ==", "An intro & more"]


def test_a_section_inside_a_section_is_one_level_down_and_a_part_is_a_page_section():
    part = d.Section(d.Lit("Agreement"), [d.Para(d.Lit("lede"), "lede"), *_sections()], anchor="agreement", cls="q")
    out = html.block(part, 2)
    assert out.startswith('<section id="agreement" class="q"><h2>Agreement</h2><p class="lede">lede</p><h3>Heading')
    assert "<h4>Disagreements</h4>" in out and out.endswith("</section>")
    lines = markdown_lines(part, level=2)
    assert lines[0] == "## Agreement" and any(line.startswith("### Heading") for line in lines)
    assert "#### Disagreements" in lines


def test_run_cells_link_only_to_runs_the_page_holds():
    out = Writer(runs={"run-a"}).block(_sections())
    assert f'<a href="#{d.run_anchor("run-a")}">run-a</a>' in out
    assert out.count("<a href=") == 1  # the hostile run id is not on the page: plain, escaped text
    assert html.block(_sections()).count("<a href=") == 0  # no runs: no links


def test_the_judges_words_are_quoted_in_html_and_excerpted_in_a_terminal():
    out = html.block(_sections())
    assert "<blockquote>because &lt;b&gt;</blockquote>" in out and out.count("<blockquote>") == 1
    long = Table(["run", "rationale"], [["r", "x" * 200]])
    (row,) = [line for line in text_lines(d.ViewTable(long, "t", quote_column=1)) if line.startswith("r ")]
    assert row.rstrip().endswith("x...") and len(row.rstrip()) < 100


def test_a_chart_is_drawn_in_html_and_a_table_elsewhere():
    chart = _sections()[0].blocks[1]
    out = html.block(chart)
    assert '<div class="charts"><figure><svg' in out and "<figcaption>caption &lt;script&gt;" in out
    assert "| a | 0.500 \\[0.200, 0.800\\] |" in markdown_lines(chart, level=3)
    assert any("0.500 [0.200, 0.800]" in line for line in text_lines(chart))


def test_a_long_view_table_is_cut_only_where_asked():
    table = d.ViewTable(Table(["n"], [[str(i)] for i in range(30)]), "t", short_limit=5)
    assert "_25 more in the HTML report._" in markdown_lines(table, short=True)
    assert not any("more in the HTML" in line for line in markdown_lines(table))


def test_a_block_a_format_cannot_show_is_a_clear_error():
    class Custom:
        pass

    with pytest.raises(TypeError, match=r"wrap it in Only\(HTML"):
        markdown_lines([Custom()])
    with pytest.raises(TypeError, match="not a block"):
        html.block(Custom())
    assert Writer(custom={Custom: lambda b: "<custom>"}).block([Custom()]) == "<custom>"


def test_a_collapsed_block_inside_a_line_is_a_clear_error():
    with pytest.raises(TypeError, match="collapsed block"):
        md_inline(d.Details(d.Lit("s"), []))


def test_a_page_is_self_contained_and_escapes_its_title():
    page = d.Page(f"title {HOSTILE}", "0.1", [("a", "A")], [d.Section(d.Lit("A"), [], anchor="a")], "foot")
    out = html_page(page)
    assert out.startswith("<!DOCTYPE html>") and "default-src 'none'" in out
    assert "<script>" not in out and '<nav><a href="#a">A</a></nav>' in out
