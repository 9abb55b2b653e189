"""`evalkit annotations import`: long CSV/JSONL, the computer-use rubric's wide scores.csv, and bad files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from import_helpers import among, modules_loaded_by

from evalkit.agreement.ratings import RatingRow, import_ratings, read_rating_file
from evalkit.cli import cli
from evalkit.errors import InputError


def rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(
            "SELECT item_id, rater, rater_kind, dimension, value, confidence FROM ratings ORDER BY item_id, rater, dimension"
        ).fetchall()
    finally:
        conn.close()


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def import_text(tmp_path: Path, name: str, text: str, *options: str) -> tuple[Path, str]:
    """`evalkit annotations import` of a file ``name`` holding ``text`` into a new database, which
    succeeds: the database and the command's output."""
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    db = tmp_path / "e.db"
    res = invoke("annotations", "import", str(f), "--db", str(db), *options)
    assert res.exit_code == 0, res.output
    return db, res.output


def test_long_csv_import(tmp_path):
    text = (
        "item_id,rater,rater_kind,dimension,value,confidence\n"
        "run-1,alice,human,safety,3,\n"
        "run-1,alice,human,outcome,pass,0.9\n"
        "run-2,gpt,judge,safety,n/a,\n"
    )
    db, output = import_text(tmp_path, "r.csv", text)
    assert "imported 3 ratings" in output
    assert rows(db) == [
        ("run-1", "alice", "human", "outcome", '"pass"', 0.9),
        ("run-1", "alice", "human", "safety", "3", None),
        ("run-2", "gpt", "judge", "safety", '"n/a"', None),
    ]


def test_jsonl_import_and_reimport_replaces(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text(
        json.dumps({"item_id": "a", "rater": "bob", "rater_kind": "human", "dimension": "d", "value": 2.0})
        + "\n\n"
        + json.dumps(
            {"item_id": 7, "rater": "bob", "rater_kind": "human", "dimension": "d", "value": "x", "note": "ok"}
        )
        + "\n",
        encoding="utf-8",
    )
    db = tmp_path / "e.db"
    import_ratings(db, f)
    assert rows(db) == [("7", "bob", "human", "d", '"x"', None), ("a", "bob", "human", "d", "2", None)]
    f.write_text(
        json.dumps({"item_id": "a", "rater": "bob", "rater_kind": "human", "dimension": "d", "value": 1}) + "\n"
    )
    import_ratings(db, f)
    assert rows(db) == [("7", "bob", "human", "d", '"x"', None), ("a", "bob", "human", "d", "1", None)]


def test_rater_option_names_every_row(tmp_path):
    db, _ = import_text(tmp_path, "r.csv", "item_id,dimension,value\nr1,safety,2\nr2,safety,3\n", "--rater", "carol")
    assert [(r[1], r[2]) for r in rows(db)] == [("carol", "human"), ("carol", "human")]


def test_wide_scores_csv_import(tmp_path):
    # the computer-use rubric's results/scores.csv: one row per run, one column per dimension, n/a and blanks.
    text = (
        "run_id,agent,task,rater,visual_perception,spatial_reasoning,action_execution,error_recovery,outcome,notes\n"
        "run-01,claude,blender-cube,alice,3,2,3,n/a,pass,clean\n"
        "run-02,claude,blender-cube,alice,2,,1,0,fail,\n"
    )
    db, _ = import_text(tmp_path, "scores.csv", text)
    got = rows(db)
    assert ("run-01", "alice", "human", "error_recovery", '"n/a"', None) in got
    assert ("run-02", "alice", "human", "action_execution", "1", None) in got
    assert ("run-02", "alice", "human", "outcome", '"fail"', None) in got
    assert not any(r[3] == "spatial_reasoning" and r[0] == "run-02" for r in got)  # blank = not rated
    assert not any(r[3] in ("agent", "task", "notes", "rater") for r in got)
    assert len(got) == 5 + 4


def test_wide_csv_needs_a_rater(tmp_path):
    f = tmp_path / "scores.csv"
    f.write_text("run_id,safety\nr1,3\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"scores.csv:2: no rater"):
        read_rating_file(f)
    assert read_rating_file(f, rater="dan")[0] == RatingRow(
        item_id="r1", rater="dan", rater_kind="human", dimension="safety", value=3
    )


def test_labels_are_normalised_across_files(tmp_path):
    csv_file = tmp_path / "a.csv"
    csv_file.write_text("item_id,rater,rater_kind,dimension,value\ni,a,human,d, 3 \ni,a,human,e,3.0\ni,a,human,f,2.5\n")
    values = {r.dimension: r.value for r in read_rating_file(csv_file)}
    assert values == {"d": 3, "e": 3, "f": 2.5}
    assert type(values["d"]) is int and type(values["e"]) is int


LONG_HEADER = "item_id,rater,rater_kind,dimension,value\n"


def jsonl_rating(kind: str = "human", value: str = ',"value":1') -> str:
    """One line of a long JSONL ratings file, of rater kind ``kind``, ``value`` its last key."""
    return '{"item_id":"a","rater":"r","rater_kind":"%s","dimension":"d"%s}\n' % (kind, value)


@pytest.mark.parametrize(
    "name, text, where, message",
    [
        ("bad.jsonl", jsonl_rating() + '{"item_id": "b",\n', 2, "invalid JSON"),
        ("bad.jsonl", jsonl_rating("robot"), 1, "rater_kind must be 'human', 'judge' or 'mechanical'"),
        ("bad.jsonl", jsonl_rating(value=""), 1, "value is required"),
        ("bad.jsonl", "[1, 2]\n", 1, "each line must be a JSON object"),
        ("bad.csv", LONG_HEADER + "a,r,human,d,1\nb,r,human,d\n", 3, "expected 5 columns, found 4"),
        ("bad.csv", LONG_HEADER[:-1] + ",confidence\na,r,human,d,1,1.5\n", 2, "confidence must be a number in [0, 1]"),
        ("bad.csv", LONG_HEADER + "a,r,human,d,1\na,r,human,d,2\n", 3, "duplicate rating"),
        ("bad.csv", LONG_HEADER + "a,r,human,d,\n", 2, "value is empty"),
        ("bad.csv", "", 1, "empty file"),
    ],
)
def test_bad_rating_file_one_line_error_and_nothing_written(tmp_path, name, text, where, message):
    db = tmp_path / "e.db"
    good = tmp_path / "good.csv"
    good.write_text("item_id,rater,rater_kind,dimension,value\nkeep,r,human,d,1\n", encoding="utf-8")
    import_ratings(db, good)
    before = rows(db)
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    res = CliRunner().invoke(cli, ["annotations", "import", str(f), "--db", str(db)])
    assert res.exit_code == 1
    err = res.stderr if hasattr(res, "stderr") else res.output
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {f}:{where}: ")
    assert message in lines[0]
    assert "Traceback" not in res.output
    assert rows(db) == before  # nothing half-written


def test_bad_file_in_the_middle_writes_no_row_of_it(tmp_path):
    # 500 good rows then a bad one: none of the good rows may land.
    lines = (
        ["item_id,rater,rater_kind,dimension,value"] + [f"i{n},r,human,d,1" for n in range(500)] + ["x,r,nobody,d,1"]
    )
    f = tmp_path / "big.csv"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "e.db"
    with pytest.raises(InputError, match=r"big.csv:502: "):
        import_ratings(db, f)
    conn = sqlite3.connect(str(db))
    assert conn.execute("SELECT name FROM sqlite_master WHERE name='ratings'").fetchone() is None
    conn.close()


def test_missing_import_file_is_usage_error(tmp_path):
    res = CliRunner().invoke(cli, ["annotations", "import", str(tmp_path / "nope.csv"), "--db", str(tmp_path / "e.db")])
    assert res.exit_code == 2
    assert "no such file" in res.output


def test_command_module_imports_only_click_and_stdlib():
    loaded = modules_loaded_by("import evalkit.commands.audit")
    assert among(loaded, ("numpy", "scipy", "litellm", "evalkit.judges", "pydantic", "evalkit.agreement")) == []


def test_jsonl_with_a_raw_line_separator_in_a_string_and_crlf_line_ends(tmp_path):
    """JSON Lines are split on \\n only: a raw U+2028 inside a JSON string is part of the value
    (str.splitlines would cut the record in two), and CRLF line ends are accepted."""
    f = tmp_path / "r.jsonl"
    lines = [
        json.dumps(
            {"item_id": "a\u2028b", "rater": "bob", "rater_kind": "human", "dimension": "d", "value": 1},
            ensure_ascii=False,
        ),
        json.dumps({"item_id": "c", "rater": "bob", "rater_kind": "human", "dimension": "d", "value": 2}),
    ]
    f.write_bytes("\r\n".join(lines).encode("utf-8") + b"\r\n")
    db = tmp_path / "e.db"
    import_ratings(db, f)
    assert rows(db) == [("a\u2028b", "bob", "human", "d", "1", None), ("c", "bob", "human", "d", "2", None)]


def test_a_label_written_in_another_case_in_the_same_file_is_an_error_naming_both_lines(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text(LONG_HEADER + "r1,dana,human,outcome,pass\nr2,dana,human,outcome,fail\nr3,dana,human,outcome,Pass \n")
    db = tmp_path / "e.db"
    res = invoke("annotations", "import", str(f), "--db", str(db))
    assert res.exit_code == 1 and not db.exists()
    assert res.output.strip() == (
        f'error: {f}:4: outcome: "Pass" is "pass" written another way (line 2): a label compares as written, so write it one way'
    )


def test_a_label_the_database_holds_another_way_is_an_error_and_nothing_is_written(tmp_path):
    db, _ = import_text(tmp_path, "judge.csv", LONG_HEADER + "r1,gpt,judge,outcome,pass\n")
    f = tmp_path / "human.csv"
    f.write_text(LONG_HEADER + "r1,dana,human,outcome,PASS\n")
    res = invoke("annotations", "import", str(f), "--db", str(db))
    assert res.exit_code == 1 and len(rows(db)) == 1
    assert '"PASS" is "pass" written another way (as the database already holds it)' in res.output
    # another dimension may spell it its own way: labels are compared within a dimension
    g = tmp_path / "g.csv"
    g.write_text(LONG_HEADER + "r1,dana,human,verdict,PASS\n")
    assert invoke("annotations", "import", str(g), "--db", str(db)).exit_code == 0


def test_a_reimport_may_correct_a_label_only_the_ratings_it_replaces_hold_another_way(tmp_path):
    """Two "Pass" imported by mistake are corrected by importing the file again with "pass": the
    ratings that hold "Pass" are the ones being replaced. Correcting one while another rating
    still holds "Pass" is an error as before, and writes nothing."""
    wrong = LONG_HEADER + "r2,dana,human,outcome,Pass\nr3,eli,human,outcome,Pass\n"
    db, _ = import_text(tmp_path, "first.csv", wrong)
    one = tmp_path / "one.csv"
    one.write_text(LONG_HEADER + "r2,dana,human,outcome,pass\n")
    res = invoke("annotations", "import", str(one), "--db", str(db))
    assert res.exit_code == 1 and '"pass" is "Pass" written another way' in res.output
    both = tmp_path / "both.csv"
    both.write_text(wrong.replace("Pass", "pass"))
    res = invoke("annotations", "import", str(both), "--db", str(db))
    assert res.exit_code == 0, res.output
    assert [r[4] for r in rows(db)] == ['"pass"', '"pass"']


def test_items_that_are_not_runs_of_a_database_with_runs_are_named_with_the_run_they_mean(tmp_path):
    db = tmp_path / "e.db"
    examples = Path(__file__).resolve().parent.parent / "examples" / "support"
    assert invoke("score", str(examples), "--db", str(db), "--format", "jsonl").exit_code == 0
    f = tmp_path / "human.csv"
    f.write_text("run_id,outcome\nsupport-gpt-x-good,pass\nsupport-gpt-x-wrong-amount.jsonl,fail\n")
    res = CliRunner().invoke(cli, ["annotations", "import", str(f), "--db", str(db), "--rater", "dana"])
    assert res.exit_code == 0
    assert res.stderr.strip() == (
        f'warning: 1 of the 2 items is not a run in {db}: "support-gpt-x-wrong-amount.jsonl" (did you mean '
        '"support-gpt-x-wrong-amount"?); its ratings are stored, and the audit compares them with other raters '
        "of the same items only"
    )
    assert len(rows(db)) == 2


def test_a_number_written_as_text_where_the_judges_wrote_the_number_is_an_error(tmp_path):
    db, _ = import_text(tmp_path, "judge.csv", LONG_HEADER + "r1,gpt,judge,safety,3\n")
    f = tmp_path / "human.jsonl"
    f.write_text('{"item_id": "r1", "rater": "dana", "dimension": "safety", "value": "3"}\n')
    res = invoke("annotations", "import", str(f), "--db", str(db))
    assert res.exit_code == 1 and len(rows(db)) == 1
    assert res.output.strip() == (
        f'error: {f}:1: safety: "3" is 3 written another way (as the database already holds it): '
        "a label compares as written, so write it one way"
    )


def test_a_dimension_the_database_holds_another_way_is_an_error_since_it_would_be_compared_with_nothing(tmp_path):
    # "Outcome" from a spreadsheet beside the judges' "outcome": the humans' audit vanished silently
    db, _ = import_text(tmp_path, "judge.csv", LONG_HEADER + "r1,gpt,judge,outcome,pass\n")
    f = tmp_path / "human.csv"
    f.write_text(LONG_HEADER + "r1,dana,human,Outcome,pass\n")
    res = invoke("annotations", "import", str(f), "--db", str(db))
    assert res.exit_code == 1 and len(rows(db)) == 1
    assert res.output.strip() == (
        f'error: {f}:2: dimension "Outcome" is "outcome" written another way (as the database already holds '
        "it): a dimension compares as written, so write it one way"
    )


def test_a_dimension_written_two_ways_in_one_file_names_both_lines(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text(LONG_HEADER + "r1,dana,human,outcome,pass\nr1,eli,human, OUTCOME ,pass\n")
    res = invoke("annotations", "import", str(f), "--db", str(tmp_path / "e.db"))
    assert res.exit_code == 1
    assert 'r.csv:3: dimension "OUTCOME" is "outcome" written another way (line 2)' in res.output


@pytest.mark.parametrize(
    ("name", "separator", "says"),
    [
        ("r.csv", ";", 'separated by ";", not ","; write it with commas'),
        ("r.csv", "\t", 'separated by tabs, not ","; name the file .tsv'),
        ("r.tsv", ",", 'separated by ",", not tabs; name the file .csv'),
    ],
)
def test_a_file_saved_with_another_separator_says_which(tmp_path, name, separator, says):
    # a spreadsheet in a locale whose decimal mark is "," saves CSV with ";"
    f = tmp_path / name
    f.write_text(
        LONG_HEADER.replace(",", separator) + separator.join(["r1", "dana", "human", "outcome", "pass"]) + "\n"
    )
    res = invoke("annotations", "import", str(f), "--db", str(tmp_path / "e.db"))
    assert res.exit_code == 1
    assert res.output.strip() == f"error: {f}:1: the header is one column: the file is {says}"


def test_a_dimension_rated_on_another_scale_than_the_database_holds_is_named_at_import_and_in_the_audit(tmp_path):
    # the judges rated safety 0-3 (procedure_v1); a reviewer's spreadsheet says safe/unsafe: the
    # audit left every one of her ratings out, and no line said so
    judged = "".join(f"r{i},gpt,judge,safety,{i % 4}\nr{i},claude,judge,safety,{(i + 1) % 4}\n" for i in range(6))
    db, _ = import_text(tmp_path, "judge.csv", LONG_HEADER + judged)
    f = tmp_path / "human.csv"
    f.write_text(LONG_HEADER + "".join(f"r{i},dana,human,safety,{'unsafe' if i < 2 else 'safe'}\n" for i in range(6)))
    res = CliRunner().invoke(cli, ["annotations", "import", str(f), "--db", str(db)], catch_exceptions=False)
    assert res.exit_code == 0 and len(rows(db)) == 18  # stored: a warning, not an error
    assert res.stderr.strip() == (
        f'warning: {f}: "safety" is rated "safe", "unsafe" here and 0, 1, 2, 3 in {db}: no label in common, '
        "so these ratings can never agree with the others; rate on one scale"
    )
    audit = invoke("audit", "--db", str(db))
    assert audit.exit_code == 0
    assert (
        'note: safety: 6 rating(s) not on its scale (0, 1, 2, 3) left out: dana "safe" (4), "unsafe" (2)'
        in audit.output
    )
    doc = json.loads(invoke("audit", "--db", str(db), "--format", "json").output)
    (safety,) = [e for e in doc["raters"] if e["dimension"] == "safety"]
    assert safety["n_excluded"] == 6 and safety["excluded_labels"] == [
        {"rater": "dana", "label": "safe", "n": 4},
        {"rater": "dana", "label": "unsafe", "n": 2},
    ]


def test_a_word_among_the_numbers_of_a_dimension_is_named_at_import(tmp_path):
    # one "Pass" typed among 0-3 safety scores imported without a word; the audit then left it out
    f = tmp_path / "human.csv"
    body = "".join(f"r{i},dana,human,safety,{i % 4}\n" for i in range(7)) + "r7,dana,human,safety,Pass\n"
    f.write_text(LONG_HEADER + body)
    db = tmp_path / "e.db"
    res = CliRunner().invoke(cli, ["annotations", "import", str(f), "--db", str(db)], catch_exceptions=False)
    assert res.exit_code == 0 and len(rows(db)) == 8
    assert res.stderr.strip() == (
        f'warning: {f}: "safety" is rated with numbers here, and 1 rating(s) with another kind of label: "Pass" (1); '
        "a label of another kind never agrees with the others (the audit leaves a label off its dimension's scale "
        "out); rate on one scale"
    )
    clean = tmp_path / "clean.csv"
    clean.write_text(LONG_HEADER + "".join(f"r{i},eve,human,safety,{i % 4}\n" for i in range(8)))
    res = CliRunner().invoke(cli, ["annotations", "import", str(clean), "--db", str(db)], catch_exceptions=False)
    assert res.exit_code == 0 and res.stderr == ""


def test_labels_shared_with_the_database_give_no_scale_warning(tmp_path):
    db, _ = import_text(tmp_path, "judge.csv", LONG_HEADER + "r1,gpt,judge,outcome,pass\nr2,gpt,judge,outcome,pass\n")
    f = tmp_path / "human.csv"
    f.write_text(LONG_HEADER + "r1,dana,human,outcome,fail\nr2,dana,human,outcome,fail\n")  # another label, same scale
    res = CliRunner().invoke(cli, ["annotations", "import", str(f), "--db", str(db)], catch_exceptions=False)
    assert res.exit_code == 0 and res.stderr == ""


@pytest.mark.parametrize("humans", [1, 2, 3])
def test_a_dimension_with_too_few_humans_for_the_alt_test_says_so(tmp_path, humans):
    # one reviewer beside the judge: the test of whether the judge can replace humans was left out
    # without a word
    judged = "".join(f"r{i},gpt,judge,outcome,{'pass' if i % 3 else 'fail'}\n" for i in range(9))
    people = "".join(
        f"r{i},h{h},human,outcome,{'pass' if (i + h) % 3 else 'fail'}\n" for h in range(humans) for i in range(9)
    )
    db, _ = import_text(tmp_path, "all.csv", LONG_HEADER + judged + people)
    out = invoke("audit", "--db", str(db)).output
    note = (
        "note: outcome: no Alternative Annotator Test (can a judge replace the humans?): it needs 3 human raters "
        f"of the same items, and this dimension has {humans} ({', '.join(f'h{h}' for h in range(humans))})"
    )
    assert (note in out) is (humans < 3)
    assert ("Alternative Annotator Test" in out.replace(note, "")) is (humans >= 3)  # the test's own table


def test_human_raters_whose_names_differ_only_in_case_are_named_in_the_audit(tmp_path):
    # "Ann" on one laptop and "ann" on another: two raters who agree perfectly with each other
    body = "".join(
        f"r{i},{who},human,outcome,{'pass' if i % 2 else 'fail'}\n" for i in range(6) for who in ("Ann", "ann ")
    )
    body += "".join(f"r{i},bob,human,outcome,pass\n" for i in range(6))
    db, _ = import_text(tmp_path, "h.csv", LONG_HEADER + body)
    res = invoke("audit", "--db", str(db))
    assert res.exit_code == 0
    line = (
        'human raters "Ann" and "ann" differ only in case or spacing: the audit counts them as raters apart; '
        "if they are one person, give one name (evalkit view --reviewer, or the rater column of an imported file)"
    )
    assert f"warning: {line}" in res.stderr.splitlines()
    assert line in json.loads(invoke("audit", "--db", str(db), "--format", "json").stdout)["warnings"]
    lone = tmp_path / "lone"
    lone.mkdir()
    db2, _ = import_text(lone, "h.csv", LONG_HEADER + body.replace("ann ", "cy"))
    assert "differ only in case" not in invoke("audit", "--db", str(db2)).stderr
