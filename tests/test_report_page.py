"""The report's document model (evalkit.report.page) and its two emitters: each block and mark is
written one way per format, text from a database is escaped in both, evalkit's own words as they
are, and what one format alone shows is stated in the document (Only), not chosen by an emitter."""

from __future__ import annotations

import dataclasses

import pytest

from evalkit.report import html, markdown
from evalkit.report import page as p

EVIL = "<b onclick=\"x\">*bold* [l](http://e.com) 'q'</b>"


def test_data_text_is_escaped_in_both_formats():
    assert html.inline(EVIL) == "&lt;b onclick=&quot;x&quot;&gt;*bold* [l](http://e.com) &#x27;q&#x27;&lt;/b&gt;"
    assert "<b" not in markdown.inline(EVIL) and "\\*bold\\*" in markdown.inline(EVIL)


def test_own_words_keep_quotes_the_page_sets_backticked_commands_as_code_and_escapes_angle_brackets():
    words = p.Lit("run's `evalkit score` n<3 & more")
    assert html.inline(words) == "run's <code>evalkit score</code> n&lt;3 &amp; more"
    assert html.inline(p.Lit("one ` alone")) == "one ` alone"
    assert markdown.inline(words) == "run's `evalkit score` n<3 & more"


def test_a_value_that_is_not_text_is_escaped_as_its_text():
    assert html.inline(None) == "None" and markdown.inline(3) == "3"


def test_only_shows_its_content_in_its_own_format():
    content = [p.Lit("both"), p.Only(p.HTML, p.Lit(" page")), p.Only(p.MARKDOWN, p.Lit(" summary"))]
    assert html.inline(content) == "both page"
    assert markdown.inline(content) == "both summary"
    blocks = [p.Only(p.HTML, [p.Para(p.Lit("page"))]), p.Only(p.MARKDOWN, [p.Para(p.Lit("summary"))])]
    assert html.block(blocks) == "<p>page</p>"
    assert markdown.lines(blocks) == ["summary", ""]


def test_marks_are_written_one_way_per_format():
    badge = p.Badge(p.Lit("n<3"), kind="small-n", title="fewer 'than' 3")
    assert html.inline(badge) == '<span class="badge small-n" title="fewer &#x27;than&#x27; 3">n&lt;3</span>'
    assert markdown.inline(badge) == "**n<3**"
    link = p.Link("run <1>", p.run_anchor("run <1>"))
    assert html.inline(link) == f'<a href="#{p.run_anchor("run <1>")}">run &lt;1&gt;</a>'
    assert markdown.inline(link) == "run &lt;1&gt;"  # the summary has no anchors: the text alone
    assert html.inline(p.Term(p.Lit("n<3"))) == "n&lt;3" and markdown.inline(p.Term(p.Lit("x"))) == "**x**"
    assert html.inline(p.Styled("a", cls='cls-"x"')) == '<span class="cls-&quot;x&quot;">a</span>'


def test_every_paragraph_kind_is_written_in_both_formats():
    for kind in p.PARAGRAPH_KINDS:
        assert html.block(p.Para(p.Lit("x"), kind)).endswith(">x</p>")
        assert "x" in markdown.lines(p.Para(p.Lit("x"), kind))[0]
    assert markdown.lines(p.Para(p.Lit("none here"), "absent")) == ["_none here_", ""]
    assert markdown.lines(p.Para(p.Lit("careful"), "banner")) == ["> **careful**", ""]


def test_an_unknown_paragraph_kind_is_refused_when_built():
    with pytest.raises(ValueError, match="paragraph kind 'loud'"):
        p.Para(p.Lit("x"), "loud")


def _block_types() -> list[type]:
    inline_only = {p.Lit, p.Mark, p.Break, p.Only}
    return [
        t
        for t in vars(p).values()
        if isinstance(t, type) and dataclasses.is_dataclass(t) and t.__module__ == p.__name__
        if t not in inline_only and not issubclass(t, p.Mark) and t is not p.Page
    ]


def test_every_block_type_has_an_html_emitter():
    assert set(_block_types()) == set(html.BLOCKS)


def test_the_summary_emits_every_block_but_the_page_only_ones():
    assert set(_block_types()) - set(markdown.BLOCKS) == {p.Figure, p.Figures, p.RunDetails, p.RunTable}


def test_a_chart_outside_only_html_is_a_clear_error_in_the_summary():
    figure = p.Figure("bar_chart", {"items": [("a", 0.5)], "title": "t"}, "caption")
    assert "<figure><svg" in html.block(figure)
    with pytest.raises(TypeError, match=r"wrap it in Only\(HTML"):
        markdown.lines([figure])


def test_a_collapsed_block_inside_a_summary_line_is_a_clear_error():
    with pytest.raises(TypeError, match="collapsed block"):
        markdown.inline(p.Details(p.Lit("s"), []))
