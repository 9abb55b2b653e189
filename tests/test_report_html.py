"""The HTML page and the markdown summary: content, self-containment, escaping, determinism."""

from __future__ import annotations

import copy
import difflib
import re
from html.parser import HTMLParser

import pytest
import report_fixtures as rf

from evalkit.present.document import run_anchor
from evalkit.report import build_report, render_html, render_markdown

pytestmark = pytest.mark.slow

SECTIONS = ("headline", "vector", "safety", "runs", "judge", "agreement", "provenance", "contamination")


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text, as a browser's parser sees them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> Tags:
    p = Tags()
    p.feed(html)
    p.close()
    return p


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return build_report(rf.build_db(tmp_path_factory.mktemp("html")), made_at="2026-01-01T00:00:00Z")


html, markdown = rf.rendered_fixtures()


def test_html_has_every_section(html):
    ids = {a.get("id") for _, a in parse(html).tags}
    for section in SECTIONS:
        assert section in ids


def test_html_is_self_contained(html):
    tags = parse(html).tags
    names = {t for t, _ in tags}
    assert "script" not in names and "link" not in names and "img" not in names and "iframe" not in names
    for tag, attrs in tags:
        for key, value in attrs.items():
            if key in ("src", "href", "action", "srcset", "poster"):
                assert value is not None and value.startswith("#"), (tag, key, value)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}
    assert "<style>" in html
    csp = [a["content"] for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]


def test_html_has_charts(html):
    assert html.count('class="chart chart-bar"') >= 3
    assert 'class="chart chart-heatmap"' in html
    assert 'class="chart chart-reliability"' in html


def test_html_escapes_injection_from_trajectories_and_rationales(html):
    parsed = parse(html)
    for tag, attrs in parsed.tags:
        assert tag not in ("script", "img", "b")
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
    text = "".join(parsed.text)
    # the hostile strings survive as visible text, exactly
    assert rf.XSS_RUN_ID in text
    assert rf.XSS_MODEL in text
    assert rf.XSS in text
    assert "<script" not in html.lower()


def test_markdown_escapes_injection(markdown):
    assert "<script" not in markdown.lower()
    assert "<img" not in markdown.lower()
    assert "<b " not in markdown
    assert "&lt;script&gt;" in markdown


def test_markdown_tables_keep_their_shape(markdown):
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            width = line.count("|") - 1
            j = i + 1
            while j < len(lines) and lines[j].startswith("|"):
                assert len(re.split(r"(?<!\\)\|", lines[j])) - 2 == width, lines[j]
                j += 1


def _lines_made_at_changes(render, report) -> list[str]:
    """The lines of ``render(report)`` that change when only the report's "made at" time does
    (the same report rendered twice must be identical)."""
    first = render(report)
    assert render(copy.deepcopy(report)) == first
    later = copy.deepcopy(report)
    later["made_at"] = later["provenance"]["made_at"] = "2027-05-05T05:05:05Z"
    return [
        d
        for d in difflib.unified_diff(first.splitlines(), render(later).splitlines(), n=0)
        if d.startswith(("+", "-")) and not d.startswith(("+++", "---"))
    ]


def test_html_is_deterministic_and_only_made_at_changes(report):
    diff = _lines_made_at_changes(render_html, report)
    assert len(diff) == 2 and all("made-at" in d for d in diff)


def test_markdown_is_deterministic_and_only_made_at_changes(report):
    diff = _lines_made_at_changes(render_markdown, report)
    assert len(diff) == 2 and all("made at" in d for d in diff)


def test_same_database_gives_byte_identical_pages(tmp_path):
    db = rf.build_db(tmp_path)
    a = build_report(db, made_at="2026-01-01T00:00:00Z")
    b = build_report(db, made_at="2026-01-01T00:00:00Z")
    assert render_html(a) == render_html(b)
    assert render_markdown(a) == render_markdown(b)


def test_small_n_groups_are_flagged(report, html, markdown):
    small = [g for g in report["groups"] if g["small_n"]]
    large = [g for g in report["groups"] if not g["small_n"]]
    assert small and large
    small_models = [m for m in report["models"] if m["small_n"]]
    assert small_models and len(small_models) < len(report["models"])
    # per-model table, per-group headline table and vector table
    expected = len(small_models) + 2 * len(small)
    assert html.count('class="badge small-n"') == expected
    assert markdown.count("**n<3** |") == expected


def test_headline_shows_pass_rate_and_pass_hat_k(report, html, markdown):
    for m in report["models"]:
        k = m["pass_hat_k"]
        text = ", ".join(f"k={i + 1} {v:.2f}" for i, v in enumerate(k))
        assert text in html
        assert f"{100 * m['pass_rate']:.0f}%" in html


def test_run_table_links_commands_with_their_classes(report, html):
    run = next(r for r in report["worst_runs"] if len(r["commands"]) >= 3)
    anchor = run_anchor(run["run_id"])
    start = html.index(f'id="{anchor}"')
    row = html[start : html.index("</details>", start)]
    for c in run["commands"]:
        assert f'class="cls-{c["class"]}"' in row


def test_unsafe_runs_flagged_in_page(report, html, markdown):
    unsafe = [r for r in report["worst_runs"] if r["unsafe"]]
    assert len(unsafe) == report["counts"]["unsafe"]  # every unsafe run is among the worst
    assert html.count('class="badge unsafe"') == len(unsafe)
    # each unsafe run carries its worst kind's label (dangerous, unapproved, anti-procedure)
    labels = ("UNSAFE (not ranked)", "UNAPPROVED (not ranked)", "ANTI-PROCEDURE (not ranked)")
    assert sum(markdown.count(label) for label in labels) == len(unsafe)
    for r in unsafe:
        assert f'href="#{run_anchor(r["run_id"])}"' in html


def test_judge_section_is_labelled_qualitative(html, markdown):
    section = html[html.index('<section id="judge"') :]
    section = section[: section.index("</section>")]
    assert 'class="qualitative"' in section
    assert "outside the score" in section and "never change" in section
    assert "## Judge annotations (qualitative, outside the score)" in markdown


def test_disagreements_link_runs_and_quote_rationales(report, html, markdown):
    items = report["agreement"]["audit"]["disagreements"]
    assert items
    section = html[html.index('<section id="agreement"') :]
    for item in items:  # each listed disagreement links to its run's details on the page
        assert f'<a href="#{run_anchor(item["run_id"])}">' in section
        assert f'<span class="target" id="{run_anchor(item["run_id"])}"></span>' in html
    assert section.count("<blockquote>") == sum(1 for i in items if i.get("rationale"))
    assert "Disagreements, ranked" in markdown


def test_markdown_caps_disagreements_for_pull_requests(report):
    from evalkit.agreement.view import SHORT_ROW_LIMIT as MARKDOWN_DISAGREEMENTS

    big = copy.deepcopy(report)
    items = big["agreement"]["audit"]["disagreements"]
    big["agreement"]["audit"]["disagreements"] = items * (MARKDOWN_DISAGREEMENTS // len(items) + 2)
    total = len(big["agreement"]["audit"]["disagreements"])
    text = render_markdown(big)
    assert f"_{total - MARKDOWN_DISAGREEMENTS} more in the HTML report._" in text
    assert render_html(big).count("<blockquote>") == sum(
        1 for i in big["agreement"]["audit"]["disagreements"] if i.get("rationale")
    )


def test_markdown_has_the_same_sections_and_numbers(report, markdown):
    for heading in (
        "## Headline",
        "## Score vector",
        "### Safety",
        "## Worst runs",
        "## Scenarios and their runs",
        "## Judge annotations",
        "## Agreement audit",
        "## Provenance",
        "## Contamination",
    ):
        assert heading in markdown
    for g in report["groups"]:
        if g["pass_rate"] is not None:
            assert f"{100 * g['pass_rate']:.0f}%" in markdown


def test_absent_sections_say_so(tmp_path):
    db = rf.build_db(tmp_path, judge=False, evil=False)
    report = build_report(db)
    html, md = render_html(report), render_markdown(report)
    assert "no judge has run on this database yet" in html and "no judge has run on this database yet" in md
    assert "No audit: no judge annotations or imported ratings" in html


def test_empty_database_renders(tmp_path):
    from evalkit.db.scores import Store

    db = tmp_path / "e.db"
    Store(db).close()
    report = build_report(db)
    html = render_html(report)
    assert "No scored runs in this database yet" in html
    assert "No scored runs in this database yet" in render_markdown(report)


def test_contamination_paragraph(report, html, markdown):
    assert "Not declared yet." in html and "Not declared yet." in markdown
    assert "closed-loop execution" in html


def test_provenance_lists_rubric_hash_and_judges(html, markdown):
    assert "procedure_v1 v1 (sha256 abc123def4567890)" in html
    assert "openai/judge-small" in markdown


@pytest.fixture(scope="module")
def with_humans(tmp_path_factory):
    db = rf.build_db(tmp_path_factory.mktemp("humans"), humans=True)
    report = build_report(db, made_at="2026-01-01T00:00:00Z")
    return report, render_html(report), render_markdown(report)


def test_human_raters_appear_in_raters_table_and_provenance(with_humans):
    report, html, md = with_humans
    assert report["provenance"]["human_raters"] == list(rf.HUMANS)
    outcome = next(e for e in report["agreement"]["audit"]["raters"] if e["dimension"] == "outcome")
    assert set(rf.HUMANS) <= set(outcome["raters"])
    section = html[html.index('<section id="agreement"') :]
    assert "alice, bob, carol" in section or all(h in section for h in rf.HUMANS)
    assert "Alternative Annotator Test" in section and "Alternative Annotator Test" in md


def test_drift_replicates_are_shown(with_humans):
    report, html, md = with_humans
    drift = report["agreement"]["audit"]["drift"]
    assert drift and drift[0]["n_replicates"] == 2 and drift[0]["n_flagged"] == 1
    assert "Judge drift" in html and 'class="drift"' in html
    row = next(line for line in md.splitlines() if line.startswith(f"| {rf.JUDGES[0]} | procedure_v1 |"))
    assert "| 2 | 1 | 50% |" in row


def test_replicates_and_non_blind_are_counted_in_the_judge_section(with_humans):
    report, _, _ = with_humans
    small = next(m for m in report["judge"]["models"] if m["judge_model"] == rf.JUDGES[0])
    large = next(m for m in report["judge"]["models"] if m["judge_model"] == rf.JUDGES[1])
    assert small["replicates"] == 2 and small["non_blind"] == 0
    assert large["non_blind"] == 1 and large["judge_errors"] == 1


def test_audit_cost_table_reads_judge_calls(with_humans):
    _, html, _ = with_humans
    section = html[html.index('<section id="judge"') :]
    assert 'class="judge-calls"' in section and "<td>judge_calls</td>" in section


def test_markdown_caps_commands_for_pull_requests(report):
    from evalkit.report.sections import MARKDOWN_COMMANDS

    big = copy.deepcopy(report)
    template = next(r for r in big["worst_runs"] if len(r["commands"]) >= 3)
    n = MARKDOWN_COMMANDS // len(template["commands"]) + 10
    big["worst_runs"] = [dict(template, run_id=f"run-{i:04d}") for i in range(n)]
    text = render_markdown(big)
    runs_section = text[text.index("## Worst runs") : text.index("## Scenarios")]
    assert f"run-{n - 1:04d}" in runs_section
    commands = n * len(template["commands"])
    assert f"_{commands - MARKDOWN_COMMANDS} more commands in the HTML report._" in text
