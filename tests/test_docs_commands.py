"""Every command the docs show runs, and ends with the exit code the docs give it.

The commands are read from the pages themselves (tests/doc_commands.py: every fenced bash / sh /
shell / console block of README.md and the other Markdown pages), so a command added to a page is
run here without editing this file. Each block runs in its own working directory holding what the
pages assume is there (the bundled examples, a ``runs/`` folder, ``scenarios.json``, OTLP traces,
inspect_ai logs, a scored ``evalkit.db``), its commands in order, as a reader would type them.

- ``evalkit ...`` runs in this process through click's CliRunner on ``evalkit.cli``; a command that
  serves until Ctrl-C (``evalkit view``, ``import otel --listen``) runs as ``python -m evalkit`` on a
  free port, is waited for until its port answers HTTP, then gets SIGINT (Ctrl-C) and must end
  with 130, the exit code README.md gives an interrupted command.
- A judge reaches tests/fake_llm_server.py through the real litellm: a loopback ``--api-base`` is
  pointed at it, and ``OPENAI_BASE_URL`` stands in for OpenAI's API.
- ``export NAME=VALUE`` sets the environment of the commands after it (``...``: a fake key).
- ``python SCRIPT ARGS`` (a script of the checkout) runs in this process as ``__main__``.
- A command that cannot run here is in NOT_RUN with the reason; that list is checked against the
  pages, so it cannot keep an entry no page needs.

The exit code expected is the one a comment on the command's line gives (``# exit 3: ...``), else 0.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from doc_commands import ROOT, Command, commands_of_block, doc_blocks, doc_pages, shell_blocks, synopsis_lines
from judge_helpers import FAKE_KEY

from evalkit.cli import cli
from evalkit.commands.exitcodes import EXIT_INTERRUPTED

pytestmark = pytest.mark.slow

# Commands no test can run here, by program (``python -m MODULE`` by module), with the reason.
NOT_RUN = {
    "python -m venv": "creates the virtual environment of the README's install commands, which CI runs (.ci/run)",
    "pip": "installs packages: the test environment has every extra installed, and there is no network",
    "python -m pytest": "the test suite itself (CI runs it)",
    "llama-server": "a local model server: tests/fake_llm_server.py stands in for it in the judge commands",
    "python -m llama_cpp.server": "a local model server: tests/fake_llm_server.py stands in for it",
    "vllm": "a local model server: tests/fake_llm_server.py stands in for it",
    "ollama": "a local model server: tests/fake_llm_server.py stands in for it",
    "ray": "starts a Ray cluster (tests/test_engine_ray.py runs the Ray engine on a local one)",
}
# evalkit commands no test can run here, by an argument they contain.
NOT_RUN_ARGUMENTS = {
    "s3://": "reads runs from an S3 bucket (tests/test_engine_ray.py reads file URLs through fsspec on Ray)",
}
# Placeholders a page writes for a value the reader supplies (a whole argument or VALUE of NAME=VALUE);
# an evalkit command with an unknown one (an argument in capitals: FILE, MODEL) fails, asking for it here.
PLACEHOLDERS = {"...": FAKE_KEY}
_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]+(:\d+)?|\.\.\.")
OUTPUT_OPTIONS = ("-o", "--out", "--html", "--markdown", "--parquet", "--json-out")
SERVER_TIMEOUT_S = 30


def _program(command: Command) -> str:
    """``evalkit``, ``export``, a script's path, ``python -m MODULE``, or the program's name."""
    name = command.program
    if name.startswith("python"):
        if len(command.argv) > 2 and command.argv[1] == "-m":
            return "evalkit" if command.argv[2] == "evalkit" else f"python -m {command.argv[2]}"
        if len(command.argv) > 1 and command.argv[1].endswith(".py"):
            return "script"
    return name


def _evalkit_args(command: Command) -> list[str]:
    argv = list(command.argv)
    return argv[3:] if argv[1:2] == ["-m"] else argv[1:]


def _is_server(args: list[str]) -> bool:
    return args[:1] == ["view"] or "--listen" in args


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _substituted(args: list[str], api_base: str) -> list[str]:
    """The command with a loopback --api-base pointed at the fake server, and --listen / view on a
    free port."""
    out = [PLACEHOLDERS.get(a, a) for a in args]
    unknown = [a for a in out if _PLACEHOLDER.fullmatch(a)]
    assert unknown == [], f"placeholders {unknown} of `evalkit {shlex.join(args)}`: add them to PLACEHOLDERS"
    out = [api_base if a.startswith(("http://127.0.0.1:", "http://localhost:")) else a for a in out]
    if "--listen" in out:
        out[out.index("--listen") + 1] = f"127.0.0.1:{_free_port()}"
    elif out[:1] == ["view"]:
        if "--port" in out:
            out[out.index("--port") + 1] = str(_free_port())
        else:
            out += ["--port", str(_free_port())]
    return out


def _served_port(args: list[str]) -> int:
    if "--listen" in args:
        return int(args[args.index("--listen") + 1].rsplit(":", 1)[1])
    return int(args[args.index("--port") + 1])


def _outputs(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a in OUTPUT_OPTIONS]


# -- the working directory a page assumes ---------------------------------------------------------
def _tau_results(path: Path, passing: list[int]) -> Path:
    """A tau-bench result file of len(passing) tasks x 3 trials, task t passing passing[t] trials
    (records copied from the bundled example's passing and failing trial of task 1)."""
    import copy
    import json

    records = json.loads((ROOT / "examples" / "taubench" / "tool-calling-example-model-retail.json").read_text())
    good = next(r for r in records if r["task_id"] == 1 and r["reward"] == 1.0)
    bad = next(r for r in records if r["task_id"] == 1 and r["reward"] == 0.0)
    out = []
    for task, passed in enumerate(passing):
        for trial in range(3):
            record = copy.deepcopy(good if trial < passed else bad)
            record["task_id"], record["trial"] = 10 + task, trial
            out.append(record)
    path.write_text(json.dumps(out))
    return path


def _invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="session")
def workspace_template(tmp_path_factory, _server, inspect_logs):
    """What the pages' commands read: the examples; runs/ with an agent-main and a worse agent-pr
    (tau-bench runs, for `compare`) and the support runs (one closes the account: unsafe);
    scenarios.json and tasks.json (the support scenario); traces.jsonl (OTLP JSON of two support
    runs, recorded against the fake server); logs/ (inspect_ai logs of examples/inspect/tiny_task.py);
    evalkit.db with the support runs scored."""
    import openai
    import otel_helpers as oh

    base = tmp_path_factory.mktemp("doc-workspace")
    shutil.copytree(ROOT / "examples", base / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    for model, passing in (("agent-main", [3, 3, 3, 2, 3, 3]), ("agent-pr", [0, 1, 0, 0, 1, 0])):
        source = _tau_results(tmp_path_factory.mktemp("tau") / f"{model}.json", passing)
        _invoke("import", "taubench", str(source), "-o", str(base / "runs" / model.split("-")[1]), "--model", model)
    shutil.copytree(ROOT / "examples" / "support", base / "runs" / "support")
    for name in ("scenarios.json", "tasks.json"):
        shutil.copy(ROOT / "examples" / "support" / "scenarios.json", base / name)
    client = openai.OpenAI(base_url=_server.api_base, api_key=FAKE_KEY, max_retries=0)
    plans = (["lookup_order", "refund_order"], ["lookup_order"])
    spans = oh.record_runs(client, [{"plan": p, "scenario": "refund-damaged-b22"} for p in plans])
    oh.write_collector_file(base / "traces.jsonl", [spans.get_finished_spans()])
    (base / "logs").mkdir()
    for log in inspect_logs.values():
        shutil.copy(log, base / "logs")
    db = base / "evalkit.db"
    CliRunner().invoke(cli, ["score", str(ROOT / "examples" / "support"), "--db", str(db), "--format", "jsonl"])
    assert db.is_file()
    return base


def _made_by_the_block(name: str, commands: list[Command]) -> bool:
    """Whether the first command naming ``name`` (a top-level entry of the workspace) makes it: an
    output option's value, or an argument of a script."""
    for command in commands:
        script = _program(command) == "script"
        for i, arg in enumerate(command.argv[2:] if script else command.argv[1:], start=2 if script else 1):
            if arg.rstrip("/").split("/")[0] == name:
                return script or command.argv[i - 1] in OUTPUT_OPTIONS
    return False


def _workspace(template: Path, commands: list[Command], where: Path) -> Path:
    where.mkdir()
    for entry in template.iterdir():
        if _made_by_the_block(entry.name, commands):
            continue
        (shutil.copytree if entry.is_dir() else shutil.copy)(entry, where / entry.name)
    return where


# -- running one command -------------------------------------------------------------------------
def _run_in_process(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, env=env, prog_name="evalkit")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        trace = "".join(traceback.format_exception(result.exception))
        return -1, f"{result.output}\n{trace}"
    return result.exit_code, result.output


def _child_env(env: dict[str, str]) -> dict[str, str]:
    return dict(os.environ, **env, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _answers(port: int, proc: subprocess.Popen) -> bool:
    deadline = time.monotonic() + SERVER_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
        except OSError:
            time.sleep(0.1)
            continue
        try:  # an HTTP answer of any status: the server reads requests
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).close()
        except urllib.error.HTTPError:
            pass
        except OSError:  # connected, but no HTTP answer
            return False
        return True
    return False


def _run_server(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Start it, wait until its port answers HTTP, Ctrl-C it: its exit code and output."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit", *args],
        cwd=cwd,
        env=_child_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        answered = _answers(_served_port(args), proc)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=SERVER_TIMEOUT_S)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not answered:
        return (proc.returncode if proc.returncode != 0 else -1), f"never answered on its port\n{output}"
    return proc.returncode, output


def _run_script(command: Command, env: dict[str, str]) -> tuple[int, str]:
    """``python SCRIPT ARGS`` in this process (as ``__main__``, its imports already loaded): its exit
    code and output."""
    import contextlib
    import io
    import runpy
    from unittest import mock

    output, code = io.StringIO(), 0
    with (
        mock.patch.dict(os.environ, env),
        mock.patch.object(sys, "argv", list(command.argv[1:])),
        contextlib.redirect_stdout(output),
        contextlib.redirect_stderr(output),
    ):
        try:
            runpy.run_path(command.argv[1], run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                print(exc.code, file=output)
    return code, output.getvalue()


def _failure(command: Command, env: dict[str, str], cwd: Path, api_base: str) -> str | None:
    """None when the command ran as documented, else what went wrong."""
    program, args = _program(command), []
    if program == "script":
        code, output = _run_script(command, env)
    elif program == "sqlite-utils":  # the database opened by another tool, through its own CLI
        from sqlite_utils.cli import cli as sqlite_utils_cli

        result = CliRunner().invoke(sqlite_utils_cli, command.argv[1:])
        code, output = result.exit_code, result.output
    else:
        args = _substituted(_evalkit_args(command), api_base)
        run_env = dict(env, **dict(command.env))
        if _is_server(args):
            code, output = _run_server(args, run_env, cwd)
        else:
            code, output = _run_in_process(args, run_env)
        if code == 0:
            missing = [path for path in _outputs(args) if not (cwd / path).exists()]
            if missing:
                return f"{command.where}: exit 0 but wrote no {', '.join(missing)}"
    expected = EXIT_INTERRUPTED if program == "evalkit" and _is_server(args) else command.documented_exit
    if code != expected or "Traceback (most recent call last)" in output:
        tail = "\n    ".join(output.strip().splitlines()[-12:])
        return f"{command.where}: exit {code}, documented {expected}\n    {tail}"
    return None


BLOCKS = doc_blocks()


@pytest.mark.parametrize("doc,line,commands", BLOCKS, ids=[f"{doc}:{line}" for doc, line, _ in BLOCKS])
def test_doc_block_runs_as_documented(doc, line, commands, server, workspace_template, tmp_path, monkeypatch):
    cwd = _workspace(workspace_template, commands, tmp_path / "work")
    monkeypatch.chdir(cwd)
    env = {"OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.api_base, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    failures = []
    for command in commands:
        program = _program(command)
        if program in NOT_RUN or any(arg.startswith(p) for arg in command.argv for p in NOT_RUN_ARGUMENTS):
            continue
        if program == "export" or not command.argv:
            for assignment in [*command.argv[1:], *(f"{k}={v}" for k, v in command.env)]:
                name, value = assignment.split("=", 1)
                env[name] = PLACEHOLDERS.get(value, value)
            continue
        assert program in ("evalkit", "script", "sqlite-utils"), (
            f"{command.where}: the test does not know how to run {program!r}: "
            "add it to NOT_RUN with the reason, or teach tests/test_docs_commands.py to run it"
        )
        failure = _failure(command, env, cwd, server.api_base)
        if failure:
            failures.append(failure)
    assert failures == [], "\n".join(failures)


def test_not_run_and_placeholders_list_only_what_a_page_shows():
    """An entry no page needs any more is dropped, so NOT_RUN stays the short list of what truly
    cannot run here."""
    commands = [c for _, _, block in BLOCKS for c in block]
    programs = {_program(c) for c in commands}
    assert sorted(set(NOT_RUN) - programs) == []
    assert sorted(p for p in NOT_RUN_ARGUMENTS if not any(a.startswith(p) for c in commands for a in c.argv)) == []
    values = {a.split("=", 1)[-1] for c in commands for a in c.argv} | {v for c in commands for _, v in c.env}
    assert sorted(set(PLACEHOLDERS) - values) == []


def test_most_documented_evalkit_commands_run():
    commands = [c for _, _, block in BLOCKS for c in block if _program(c) == "evalkit"]
    skipped = [c for c in commands if any(a.startswith(p) for a in c.argv for p in NOT_RUN_ARGUMENTS)]
    assert len(commands) >= 30 and len(skipped) <= 1, [c.where for c in skipped]


def test_every_option_a_synopsis_shows_is_in_its_commands_help():
    """The synopses (``evalkit audit [--db FILE] [--judge MODEL]`` in an untagged block) are not run;
    each names a command that exists, and each flag it shows is one `evalkit CMD --help` lists."""
    import click

    wrong = []
    for page in doc_pages():
        for line, text in synopsis_lines(page.read_text(encoding="utf-8")):
            command, path = cli, []
            for word in text.split()[1:]:
                if not isinstance(command, click.Group) or word not in command.list_commands(None):
                    break
                command, path = command.get_command(None, word), [*path, word]
            where = f"{page.relative_to(ROOT).as_posix()}:{line}"
            if isinstance(command, click.Group):
                wrong.append(f"{where}: no such command: {text}")
                continue
            shown = CliRunner().invoke(cli, [*path, "--help"]).output
            flags = set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", text))
            wrong += [
                f"{where}: evalkit {' '.join(path)} has no {flag}"
                for flag in sorted(flags)
                if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", shown)
            ]
    assert wrong == [], "\n".join(wrong)


def test_a_shell_block_is_read_as_a_shell_reads_it():
    page = (
        "text\n"
        "```bash\n"
        "# a comment line\n"
        "export KEY=...   # set\n"
        "evalkit probe --db e.db [--rubric r] \\\n"
        "    [--fail-if 'a.rate>0.05']   # exit 3: fooled\n"
        "pip install x && OLLAMA=1 ollama serve &  evalkit view\n"
        "```\n"
        "```console\n"
        "$ evalkit score runs --db e.db\n"
        "model  n\n"
        "```\n"
        "```python\n"
        "evalkit.score_files()\n"
        "```\n"
    )
    blocks = shell_blocks(page)
    assert [(line, lang) for line, lang, _ in blocks] == [(3, "bash"), (10, "console")]
    bash = commands_of_block("p.md", *blocks[0])
    assert [(c.line, c.argv) for c in bash] == [
        (4, ("export", "KEY=...")),
        (5, ("evalkit", "probe", "--db", "e.db", "--rubric", "r", "--fail-if", "a.rate>0.05")),
        (7, ("pip", "install", "x")),
        (7, ("ollama", "serve")),
        (7, ("evalkit", "view")),
    ]
    assert [c.documented_exit for c in bash] == [0, 3, 0, 0, 0]
    assert bash[3].env == (("OLLAMA", "1"),) and bash[3].background
    console = commands_of_block("p.md", *blocks[1])
    assert [(c.line, c.argv) for c in console] == [(10, ("evalkit", "score", "runs", "--db", "e.db"))]
