"""A ratings CSV that ends inside a quoted field (cut short: a copy interrupted, a truncated
download) is an error naming the file and the line the field's row starts on — never imported with
the rest of the file folded into one cell. Quoted fields that do close, even over several lines,
read as before."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner
from input_error_helpers import assert_input_error

from evalkit.agreement.ratings import read_rating_file
from evalkit.cli import cli

HEADER = "item_id,rater,rater_kind,dimension,value\n"


def import_file(tmp_path, text: str, name: str = "r.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    db = tmp_path / "e.db"
    result = CliRunner().invoke(cli, ["annotations", "import", str(path), "--db", str(db)])
    return path, db, result


def stored(db) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'ratings'").fetchone()
        return conn.execute("SELECT count(*) FROM ratings").fetchone()[0] if has else 0
    finally:
        conn.close()


def test_csv_cut_inside_a_quoted_value_is_an_error_at_its_row(tmp_path):
    text = HEADER + 'a,r,human,d,1\nb,r,human,d,"long note that was cut'
    path, db, result = import_file(tmp_path, text)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {path}:3: a quoted field is never closed (the file ends inside it: cut short?)"
    ]
    assert stored(db) == 0  # not the good row either: a file is all or nothing


def test_csv_cut_inside_a_quoted_field_spanning_lines_names_where_its_row_starts(tmp_path):
    text = HEADER + 'a,r,human,d,1\nb,r,human,"d\nmore\nstill more'
    path, _, result = import_file(tmp_path, text)
    assert result.exit_code == 1
    assert f"{path}:3: a quoted field is never closed" in result.stderr


def test_csv_cut_inside_a_quoted_header_is_an_error_at_line_1(tmp_path):
    path, _, result = import_file(tmp_path, 'item_id,"rater\n')
    assert result.exit_code == 1
    assert f"{path}:1: a quoted field is never closed" in result.stderr


def test_tsv_cut_inside_a_quoted_field_is_an_error(tmp_path):
    text = HEADER.replace(",", "\t") + 'a\tr\thuman\td\t"1\n'
    path, _, result = import_file(tmp_path, text, "r.tsv")
    assert result.exit_code == 1
    assert f"{path}:2: a quoted field is never closed" in result.stderr


def test_a_wide_scores_csv_cut_inside_a_quoted_field_is_an_error(tmp_path):
    path = tmp_path / "scores.csv"
    text = 'run_id,rater,safety\nr1,alice,3\nr2,alice,"2\n'
    assert_input_error(path, text, read_rating_file, f"{path}:3: a quoted field is never closed")


@pytest.mark.parametrize(
    "text",
    [
        HEADER + 'a,r,human,d,"multi\nline, with comma"\n',
        HEADER + 'a,r,human,d,"closed at the very end"',
        HEADER + 'a,r,human,d,"say ""hi"""\n\n',
        HEADER + 'a,r,human,d,5" screen\n',  # a quote inside an unquoted field is a character
    ],
)
def test_quoted_fields_that_close_still_import(tmp_path, text):
    _, db, result = import_file(tmp_path, text)
    assert result.exit_code == 0, result.stderr
    assert stored(db) == 1
