"""The evalkit report: an HTML page, a page per scenario beside it, and a markdown summary, made
from the SQLite database.

Python API::

    from evalkit.report import build_report, render_html, render_markdown, write_report
    report = build_report("evalkit.db", title="nightly")   # a plain dict, the summary
    html = render_html(report)                              # the main page alone
    text = render_markdown(report)                          # for a pull request
    write_report("evalkit.db", html="report.html", markdown="report.md")  # + report-scenarios/

See docs/report.md for the sections and their sources.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote

from evalkit.output.atomic import output_error, write_text_atomic
from evalkit.report.contamination import load_contamination
from evalkit.report.data import ReportError, build_report, made_at_now
from evalkit.report.render import render_html, render_markdown

__all__ = [
    "ReportError",
    "build_report",
    "load_contamination",
    "made_at_now",
    "pages_clash",
    "pages_dir",
    "render_html",
    "render_markdown",
    "write_html",
    "write_text_atomic",
    "write_report",
]


def pages_dir(html: str | os.PathLike[str]) -> Path:
    """The directory of scenario pages beside the main page ``html``: ``NAME-scenarios``."""
    path = Path(html)
    return path.with_name(f"{path.stem}-scenarios")


def pages_clash(html: str | os.PathLike[str] | None, database=None, inputs=()) -> str | None:
    """Why the scenario pages of ``html`` cannot be written (the directory is replaced whole, so
    it must not hold the database or an input), as one line, or None."""
    if html is None or os.fspath(html) == "-":
        return None
    directory = os.path.realpath(pages_dir(html))
    for label, path in [("the database", database), *(("the input", p) for p in inputs)]:
        if path is None:
            continue
        real = os.path.realpath(path)
        if real == directory or real.startswith(directory + os.sep):
            return f"--html {os.fspath(html)}: its scenario pages {pages_dir(html)} would overwrite {label} {path}"
    return None


def write_html(db_path: str | os.PathLike[str], report: dict, html: str | os.PathLike[str]) -> None:
    """Write the main page ``html`` and its scenario pages (:func:`pages_dir`): the pages into a
    temporary directory beside it, which then replaces the old one by a rename; then the page
    through a temporary file and a rename. The pages list the runs ``report`` kept when it was
    built from ``db_path`` (:class:`evalkit.report.data.ScenarioRuns`), else the runs read from
    ``db_path``. Raises OutputError naming the path that failed."""
    from evalkit.db import open_readonly
    from evalkit.report.data import iter_scenarios
    from evalkit.report.render import render_scenario_page

    html = Path(html)
    final = pages_dir(html)
    entries = {s["scenario_id"]: s for s in report.get("scenarios") or []}
    counts = report.get("disagreement_counts") or {}
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    except OSError as exc:  # the directory the page goes into: said of the page asked for
        raise output_error(html, exc) from None

    def write_pages(scenarios) -> None:
        """Each scenario's page into ``staging``, one at a time, from (scenario id, its runs)."""
        for scenario_id, runs in scenarios:
            entry = entries.get(scenario_id)
            if entry is None:
                continue
            text = render_scenario_page(report, entry, runs, home)
            (staging / entry["file"]).write_text(text, encoding="utf-8", newline="\n")

    home = "../" + quote(html.name)
    try:
        kept = getattr(report, "scenario_runs", None)  # the runs as build_report read them
        if kept is not None and kept.db_path == os.fspath(db_path):
            write_pages(kept)
        else:
            with open_readonly(db_path) as db:
                write_pages(
                    (scenario_id, [run for run, _ in batch]) for scenario_id, batch in iter_scenarios(db, counts)
                )
        os.chmod(staging, 0o755)
        if final.is_dir() and not final.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old.", dir=final.parent))
            os.replace(final, old / final.name)
            os.replace(staging, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, final)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise output_error(final, exc) from None
    write_text_atomic(html, render_html(report, pages=quote(final.name)))


def write_report(
    db_path: str | os.PathLike[str],
    *,
    html: str | os.PathLike[str] | None = None,
    markdown: str | os.PathLike[str] | None = None,
    title: str | None = None,
    contamination: str | os.PathLike[str] | None = None,
    made_at: str | None = None,
    all_runs: bool = False,
) -> dict:
    """Build the report once and write the requested files; returns the report dict. An output
    that is the database or the contamination file raises evalkit.output.paths.OutputClash first."""
    from evalkit.output.paths import OutputClash, check_outputs

    inputs = [contamination] if contamination else []
    check_outputs([("html", html), ("markdown", markdown)], database=db_path, inputs=inputs)
    if problem := pages_clash(html, db_path, inputs):
        raise OutputClash(problem)
    report = build_report(db_path, title=title, made_at=made_at, contamination_path=contamination, all_runs=all_runs)
    if html is not None:
        write_html(db_path, report, html)
    if markdown is not None:
        write_text_atomic(markdown, render_markdown(report))
    return report
