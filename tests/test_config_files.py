"""Issue 9, configs: every TOML file goes through one loader and a pydantic model with unknown keys
rejected; bad values are one-line errors naming the file and the key path, never a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.agreement.pairings_config import load_audit_config
from evalkit.cli import cli
from evalkit.config.files import ConfigError, ConfigModel, load_toml, validate
from evalkit.errors import InputError

PAIRING = (
    '[[pairing]]\nname = "x"\nrubric = "r"\njudge_dimension = "d"\nscale = ["a", "b"]\n'
    '[[pairing.mechanical]]\nlabel = "a"\n'
)


def user_config(tmp_path, body: str):
    path = tmp_path / "pairings.toml"
    path.write_text(body, encoding="utf-8")
    return path


def one_line_error(tmp_path, body: str) -> str:
    path = user_config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_audit_config(path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{path}")
    assert isinstance(err.value, InputError)  # commands map it to exit 1
    return text[len(str(path)) + 2 :]


def test_pairing_of_wrong_type_is_a_one_line_error(tmp_path):
    assert one_line_error(tmp_path, 'pairing = "x"\n') == "pairing: input should be a valid list, got 'x'"


def test_when_that_is_not_a_table_names_its_key_path(tmp_path):
    msg = one_line_error(tmp_path, PAIRING + 'when = ">= banana"\n')
    assert msg == "pairing[0].mechanical[0].when: input should be a valid dictionary, got '>= banana'"


def test_order_condition_on_a_word_names_its_key_path(tmp_path):
    with pytest.raises(InputError) as err:
        load_audit_config(user_config(tmp_path, PAIRING + 'when = { "vector.coverage" = ">= banana" }\n'))
    assert str(err.value).endswith(
        "pairing 'x'.mechanical[0].when.vector.coverage: cannot read condition '>= banana' (>= compares numbers, got 'banana')"
    )


def test_equality_with_a_word_is_still_a_condition(tmp_path):
    cfg = load_audit_config(
        user_config(tmp_path, PAIRING + 'when = { "informative.final_reason" = "== agent_done" }\n')
    )
    assert [p.name for p in cfg.pairings][-1] == "x"


@pytest.mark.parametrize(
    "body, where",
    [
        # unknown and misspelled keys
        ("calibraton = { ece_bins = 5 }\n", "calibraton: unknown key"),
        ("[calibration]\nece_binz = 5\n", "calibration.ece_binz: unknown key"),
        (PAIRING.replace("judge_dimension", "judge_dimensoin"), "pairing[0].judge_dimensoin: unknown key"),
        (PAIRING + 'when = {}\nlable = "b"\n', "pairing[0].mechanical[0].lable: unknown key"),
        ('[dimensions.safety]\nlevel = "ordinal"\nscal = [0, 1]\n', "dimensions.safety.scal: unknown key"),
        # values of the wrong type
        (
            '[calibration]\nescalation_threshold = "0.7"\n',
            "calibration.escalation_threshold: input should be a valid number, got '0.7'",
        ),
        ("[calibration]\nece_bins = 2.5\n", "calibration.ece_bins: input should be a valid integer, got 2.5"),
        (
            PAIRING.replace('scale = ["a", "b"]', 'scale = ["a", true]'),
            "pairing[0].scale[1]: must be a string or a number, got True",
        ),
        (
            PAIRING + "when = { value = [1, 2] }\n",
            "pairing[0].mechanical[0].when.value: a condition is a string, number or boolean, got [1, 2]",
        ),
        ("replace_defaults = 1\n", "replace_defaults: input should be a valid boolean, got 1"),
    ],
)
def test_unknown_keys_and_wrong_types_name_the_key_path(tmp_path, body, where):
    assert one_line_error(tmp_path, body) == where


def test_shipped_configs_validate():
    from evalkit.report.contamination import load_contamination

    assert load_audit_config(None).pairings
    assert load_contamination()["declared"] is False


def test_audit_cli_config_errors_are_one_line_exit_1(tmp_path):
    db = tmp_path / "e.db"
    sqlite3.connect(db).close()
    for body in ('pairing = "x"\n', PAIRING + 'when = ">= banana"\n', "[drift]\nmoved_byy = 1\n"):
        cfg = user_config(tmp_path, body)
        res = CliRunner().invoke(cli, ["audit", "--db", str(db), "--pairings", str(cfg)])
        assert res.exit_code == 1, res.output
        assert res.exception is None or isinstance(res.exception, SystemExit)
        assert "Traceback" not in res.output and res.output.count("\n") == 1 and str(cfg) in res.output


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda p: p, "no such config file"),
        (lambda p: (p.mkdir(), p)[1], "config path is a directory"),
        (lambda p: (p.write_bytes(b"a = '\xff'\n"), p)[1], "not UTF-8 text"),
    ],
)
def test_loader_unreadable_files_are_one_line_errors(tmp_path, make, reason):
    path = make(tmp_path / "c.toml")
    with pytest.raises(ConfigError) as err:
        load_toml(path)
    assert str(err.value) == f"{path}: {reason}"


def test_validate_reports_how_many_more_problems(tmp_path):
    class Small(ConfigModel):
        a: int
        b: str

    with pytest.raises(ConfigError) as err:
        validate(Small, {"a": "1", "b": 2, "c": 3}, "f.toml")
    assert str(err.value) == "f.toml: a: input should be a valid integer, got '1' (and 2 more)"


def test_every_flag_the_bundled_configs_name_is_an_option_of_an_evalkit_command():
    # the files said "--config FILE", which every command refused as an unknown option
    import re

    import click

    from evalkit.cli import cli

    options: set[str] = set()
    commands = [cli]
    while commands:
        command = commands.pop()
        options.update(o for p in command.params for o in (*p.opts, *p.secondary_opts))
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            commands += [command.get_command(ctx, name) for name in command.list_commands(ctx)]
    root = Path(__file__).resolve().parent.parent
    named = {
        (f"{path.name}:{n}", flag)
        for path in sorted((root / "configs").glob("*.toml"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line)
    }
    assert named and {(where, flag) for where, flag in named if flag not in options} == set()
