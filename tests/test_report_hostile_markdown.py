"""The markdown report and audit cannot link or mention: a bare URL, ``www.``, an e-mail address
or ``@team`` in a rationale, a run id, a model name or a title is shown as a code span, which
GitHub links in neither of its passes (the parse-time GFM autolink and the later pass over the
rendered text that finds mentions and addresses after escapes are resolved).

Checked two ways: outside code spans the markdown holds none of ``://``, ``www.``, ``@``; and
markdown-it (GFM tables, linkify on) renders no ``<a`` and leaves none of them in the text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import report_fixtures as rf
from markdown_it import MarkdownIt

from evalkit.agreement.audit import build_audit
from evalkit.agreement.audit_output import audit_markdown
from evalkit.present import md_text
from evalkit.report import build_report, render_markdown
from evalkit.trajectory.builders import cmd, read

LINKY = "ping @team and @octo-org/admins, see https://evil.example/p?q=1 or www.evil.example or mail a@b.example"
RUN_ID = "run-https://evil.example/r"
MODEL = "model@evil.example"
TITLE = "nightly www.evil.example @team"
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
TRIGGERS = ("://", "www.", "@")


def _outside_code(markdown: str) -> str:
    return CODE_SPAN.sub("", markdown)


def _assert_inert(markdown: str) -> None:
    rest = _outside_code(markdown)
    for trigger in TRIGGERS:
        assert trigger not in rest.lower(), (
            trigger,
            [line for line in rest.splitlines() if trigger in line.lower()][:3],
        )
    html = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "linkify", "strikethrough"]).render(markdown)
    assert "<a " not in html
    text = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    for trigger in TRIGGERS:
        assert trigger not in text.lower()


@pytest.fixture(scope="module")
def linky_db(tmp_path_factory) -> Path:
    return rf.hostile_db(
        tmp_path_factory.mktemp("linky"),
        "linky",
        title=TITLE,
        calls=[read("get_ecam"), cmd("ext_pwr", 1), cmd("bat_1", 0)],
        run_id=RUN_ID,
        model=MODEL,
        rationale=LINKY,
    )


@pytest.mark.parametrize(
    "text",
    [
        "https://evil.example",
        "HTTP://EVIL.EXAMPLE",
        "see:https://x.y",
        "www.evil.example",
        "WWW.Evil.Example",
        "@team",
        "@octo-org/admins",
        "a@b.example",
        "(https://x.y)",
        "mailto:a@b.example",
    ],
)
def test_md_text_linkable_word_is_a_code_span(text):
    out = md_text(f"before {text} after")
    assert out.startswith("before ") and out.endswith(" after")
    assert _outside_code(out) == "before  after"
    _assert_inert(out)


def test_md_text_keeps_the_characters_of_a_linkable_word():
    assert md_text("ping @team now") == "ping `@team` now"
    assert md_text("a `@x` b") == "a `` `@x` `` b"  # a backtick inside: a longer fence, padded
    assert md_text("x|@y") == "`x\\|@y`"  # still one table cell


def test_md_text_without_links_is_unchanged():
    assert md_text("plain words, end_state and [x](y)") == "plain words, end_state and \\[x\\](y)"


def test_report_markdown_rationale_run_id_model_title_cannot_link_or_mention(linky_db):
    report = build_report(linky_db, title=TITLE, made_at="2026-01-01T00:00:00Z")
    markdown = render_markdown(report)
    assert "`@team`" in markdown and f"`{RUN_ID}`" in markdown and f"`{MODEL}`" in markdown
    _assert_inert(markdown)


def test_audit_markdown_cannot_link_or_mention(linky_db):
    markdown = audit_markdown(build_audit(linky_db, n_resamples=0))
    assert "`@team`" in markdown
    _assert_inert(markdown)
