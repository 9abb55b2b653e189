"""`evalkit view` and `evalkit report` against hostile input: a rationale citing a step number of
thousands of digits, every query parameter the viewer accepts given hostile values, and the option
tables of docs/view.md checked against what the server accepts."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("starlette")

import judge_helpers as jh
import view_helpers as vh

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
HUGE_STEP = "step " + "9" * 5000
RUN = "run-001"


def annotate(db: str, run_id: str, rationale: str, outcome: str = "fail") -> None:
    """A stored ok annotation of ``run_id`` whose rationale is ``rationale``."""
    conn = sqlite3.connect(db)
    bundle_hash = conn.execute("SELECT bundle_hash FROM scorecards WHERE run_id = ?", (run_id,)).fetchone()[0]
    conn.execute(
        "INSERT INTO annotations (annotation_id, run_id, bundle_hash, judge_model, rubric_id, rubric_version, "
        "blind, replicate, status, annotation, rationale, created_at) VALUES "
        "(?, ?, ?, 'openai/judge', 'procedure_v1', 1, 1, 0, 'ok', '{}', ?, '2026-01-01T00:00:00.000Z')",
        (f"a-{run_id}", run_id, bundle_hash, rationale),
    )
    conn.execute(
        "INSERT INTO annotation_values (annotation_id, run_id, judge_model, rubric_id, dimension, value, "
        "confidence, blind, replicate) VALUES (?, ?, 'openai/judge', 'procedure_v1', 'outcome', ?, 0.9, 1, 0)",
        (f"a-{run_id}", run_id, f'"{outcome}"'),
    )
    conn.commit()
    conn.close()


@pytest.fixture(scope="module")
def cited(tmp_path_factory):
    """Two scored runs, one judged with a rationale citing a 5,000-digit step and step 1."""
    db = jh.scored_db(tmp_path_factory.mktemp("view-cite"), 2)
    annotate(db, RUN, f"The agent failed at {HUGE_STEP}; see step 1 and steps 2-3.")
    return db


def test_a_rationale_citing_a_huge_step_number_keeps_the_run_page(cited):
    with vh.client(cited) as app:
        page = app.get(vh.run_url(RUN) + "?reveal=1")
        assert page.status_code == 200
        assert "9" * 5000 in page.text  # shown as text, linked to nothing
        assert '<a href="#step-1">1</a>' in page.text  # the real citation still links
        api = app.get(f"/api/runs/{RUN}").json()
        assert api["annotations"][0]["cited_steps"] == [1, 2, 3]
        assert app.get("/runs").status_code == 200 and app.get("/disagreements?reveal=1").status_code == 200


def test_a_rationale_citing_a_huge_step_number_keeps_the_report(cited, tmp_path):
    out = tmp_path / "report.html"
    r = subprocess.run(
        [sys.executable, "-m", "evalkit", "report", "--db", cited, "--html", str(out), "--all-runs"],
        env=vh.env_with_checkout(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert "9" * 5000 in out.read_text()


# -- every query parameter, hostile values ------------------------------------------------------

HOSTILE = [
    "1" + "0" * 23,  # 10^23: past SQLite's 64-bit integers
    "9" * 5000,  # past Python's int-conversion limit
    "-1",
    "0",
    "\u00b2",  # passes str.isdigit(), not int()
    "\u0661\u0662",  # Arabic-Indic digits: int() takes them, the server must not
    "",
    " 1",
    "1.5",
    "0x10",
    "%00",
    "\x00",
    "\udcff",
    "<script>",
    "a" * 20000,
]
# every parameter each page reads (the filters, sort, order and paging of the Runs list, the
# transcript position and review marks of a run page, the queue's paging), blind and revealed
PAGES = {
    "/runs": (
        "model scenario status outcome unsafe disagrees reviewed q sort order page per_page reveal".split(),
        ("", "reveal=1"),
    ),
    "/api/runs": ("model scenario status outcome unsafe disagrees reviewed q sort order page per_page".split(), ("",)),
    f"/runs/{RUN}": ("t reveal saved blind reviewer".split(), ("", "reveal=1")),
    f"/api/runs/{RUN}": (["t"], ("",)),
    "/disagreements": (["page", "reveal"], ("",)),
    "/api/disagreements": (["page", "per_page"], ("",)),
}


def test_no_query_parameter_value_makes_a_500(cited):
    seen = 0
    with vh.client(cited) as app:
        for path, (names, extras) in PAGES.items():
            for name in names:
                for value in HOSTILE:
                    for extra in extras:
                        encoded = quote(value, safe="", errors="surrogatepass")
                        for query in (f"{name}={encoded}", f"{name}=1&{name}={encoded}"):  # once, repeated
                            url = f"{path}?{query}" + (f"&{extra}" if extra else "")
                            r = app.get(url)
                            assert r.status_code in (200, 400), (url[:200], r.status_code, r.text[:300])
                            if r.status_code == 400:
                                text = r.json()["error"] if path.startswith("/api") else r.text
                                assert name in text or "given more than once" in text, (url[:200], text[:300])
                            seen += 1
    assert seen > 1000


def test_numeric_parameters_are_ascii_digits_in_range(cited):
    with vh.client(cited) as app:
        for url, message in (
            ("/api/runs?page=" + "1" + "0" * 23, "page must be a whole number from 1 to 1000000000"),
            ("/api/runs?page=\u00b2", "page must be a whole number"),
            ("/api/runs?per_page=0", "per_page must be a whole number from 1"),
            (f"/api/runs/{RUN}?t=\u00b2", "t must be a whole number from 0"),
            (f"/api/runs/{RUN}?t=-1", "t must be a whole number from 0"),
            ("/api/disagreements?page=1&page=2", "page is given more than once"),
        ):
            r = app.get(url)
            assert r.status_code == 400 and message in r.json()["error"], (url, r.text)
        # per_page over the maximum is clamped, not refused (docs/view.md)
        assert app.get("/api/runs?per_page=100000").json()["per_page"] == 500
        assert app.get("/api/disagreements?per_page=100000").json()["per_page"] == 1000
        run = app.get(f"/api/runs/{RUN}?t=1000000000").json()  # past the end: the last entry
        assert run["transcript_from"] == run["transcript_total"] - 1


# -- docs/view.md and the server agree ----------------------------------------------------------


def documented_values() -> dict[str, list[str]]:
    """Each query parameter's values as docs/view.md's JSON table lists them (``a|b``)."""
    text = (ROOT / "docs" / "view.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `GET /api/runs?"))
    query = row.split("?", 1)[1].split("`", 1)[0].replace("\\|", "|")
    out = {}
    for part in query.split("&"):
        name, _, values = part.partition("=")
        out[name] = [v for v in values.split("|") if v]
    return out


def test_every_value_docs_view_md_names_is_accepted(cited):
    documented = documented_values()
    assert documented["sort"], "docs/view.md names the sort keys"
    sorts = re.search(r"sortable by ([^;.]+)", (ROOT / "docs" / "view.md").read_text().replace("\n", " "))
    with vh.client(cited) as app:
        for name, values in documented.items():
            for value in values or ["1" if name in ("page", "per_page") else "x"]:
                r = app.get("/api/runs", params={name: value, "reveal": "1"})
                assert r.status_code == 200, (name, value, r.text)
                assert app.get("/runs", params={name: value, "reveal": "1"}).status_code == 200, (name, value)
        from evalkit.view.queries import SORTS

        assert sorted(documented["sort"]) == sorted(SORTS)  # every sort the server has is documented
        assert sorts is not None
        for key in documented["sort"]:
            assert f"`{key}`" in sorts.group(1), key  # and the Runs page's prose names the same keys
