"""A tiny inspect_ai task that writes real inspect_ai logs offline, for the "Coming from inspect_ai"
walk-through (docs/importers.md) and the importer's tests.

    pip install inspect_ai
    python examples/inspect/tiny_task.py logs/            # one .eval and one .json log in logs/
    evalkit import inspect logs/ -o runs --db e.db
    evalkit score runs --db e.db
    evalkit audit --db e.db

The agent and the grader are inspect_ai's ``mockllm/model`` with scripted replies (no network, no
API key), so the logs are inspect_ai's own files, written by its own eval loop. Seven samples, two
epochs, two scorers: ``match`` (deterministic) and ``model_graded_qa`` (model-graded):

* ``add`` calls the ``add`` tool and answers from its result;
* ``divide`` calls the ``divide`` tool, which fails (a tool error), and answers from the error;
* ``capital`` answers directly; ``multiply`` answers "forty-two" for 42 — ``match`` says I, the
  grader C (a lenient grader); ``colour`` is right in one epoch and unsure in the other;
* ``loop`` calls ``add`` again and again until the task's message limit stops it;
* ``boom`` crashes in its solver: an errored sample inspect_ai does not score.

The logs' ids and timestamps are inspect_ai's own (new ones every time you run this script).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

SAMPLES = [
    ("add", "Use the add tool to add 2 and 2.", "4"),
    ("divide", "Use the divide tool to divide 1 by 0.", "undefined"),
    ("capital", "What is the capital of France?", "Paris"),
    ("multiply", "What is 7 times 6?", "42"),
    ("colour", "What colour is a clear daytime sky?", "blue"),
    ("loop", "Keep adding 1 and 1 with the add tool, forever.", "infinity"),
    ("boom", "This sample's solver crashes.", "nothing"),
]
EPOCHS = 2
MESSAGE_LIMIT = 8  # only `loop` reaches it
NUMBER_WORDS = {"forty-two": "42"}


def _agent_reply(prompt: str, asked: Counter) -> Any:
    from inspect_ai.model import ModelOutput

    asked[prompt] += 1
    if prompt.startswith("Use the add tool") or prompt.startswith("Keep adding"):
        return ModelOutput.for_tool_call("mockllm/model", "add", {"x": 2, "y": 2})
    if prompt.startswith("Use the divide tool"):
        return ModelOutput.for_tool_call("mockllm/model", "divide", {"x": 1, "y": 0})
    text = {
        "What is the capital of France?": "Paris",
        "What is 7 times 6?": "forty-two",
        "What colour is a clear daytime sky?": "blue" if asked[prompt] % 2 else "I am not sure",
    }.get(prompt, "I do not know")
    return ModelOutput.from_content("mockllm/model", text)


def _grade(prompt: str) -> str:
    """The grader's verdict on model_graded_qa's prompt: C when the submission contains the criterion
    (number words count as their digits)."""
    submission = re.search(r"\[Submission\]: (.*?)\n", prompt, re.S)
    criterion = re.search(r"\[Criterion\]: (.*?)\n", prompt, re.S)
    sub = (submission.group(1) if submission else "").lower()
    for word, digits in NUMBER_WORDS.items():
        sub = sub.replace(word, digits)
    crit = (criterion.group(1) if criterion else "").strip().lower()
    return "GRADE: C" if crit and crit in sub else "GRADE: I"


def scripted_model() -> Any:
    """mockllm/model answering as the docstring says; a fresh call counter per model."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    asked: Counter = Counter()

    def reply(messages: list, tools: list, tool_choice: Any, config: Any) -> ModelOutput:
        last = messages[-1]
        first = next((m.text for m in messages if m.role == "user"), "")
        if last.role == "tool" and first.startswith("Keep adding"):
            output = ModelOutput.for_tool_call("mockllm/model", "add", {"x": 1, "y": 1})
        elif last.role == "tool":
            answer = f"The tool said: {last.text or (last.error.message if last.error else '')}".strip()
            if "division" in answer.lower() or "zero" in answer.lower():
                answer = "Dividing by zero is undefined."
            elif answer.endswith("4"):
                answer = "The answer is 4."
            output = ModelOutput.from_content("mockllm/model", answer)
        elif "[Criterion]" in last.text:
            output = ModelOutput.from_content("mockllm/model", _grade(last.text))
        else:
            output = _agent_reply(last.text, asked)
        # Set usage so mockllm does not count tokens (its tokenizer would download a vocabulary).
        output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return output

    return get_model("mockllm/model", custom_outputs=reply)


def tiny_task() -> Any:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match, model_graded_qa
    from inspect_ai.solver import generate, solver, use_tools
    from inspect_ai.tool import ToolError, tool

    @tool
    def add():
        async def execute(x: int, y: int) -> int:
            """Add two integers.

            Args:
                x: The first integer.
                y: The second integer.
            """
            return x + y

        return execute

    @tool
    def divide():
        async def execute(x: int, y: int) -> float:
            """Divide x by y.

            Args:
                x: The dividend.
                y: The divisor.
            """
            if y == 0:
                raise ToolError("division by zero")
            return x / y

        return execute

    @solver
    def crash_on_boom():
        async def solve(state, generate):
            if state.sample_id == "boom":
                raise RuntimeError("the sandbox for this sample crashed")
            return state

        return solve

    return Task(
        name="tiny",
        dataset=[Sample(id=i, input=text, target=target) for i, text, target in SAMPLES],
        solver=[crash_on_boom(), use_tools(add(), divide()), generate()],
        scorer=[match(location="any"), model_graded_qa()],
        epochs=EPOCHS,
        message_limit=MESSAGE_LIMIT,
    )


def write_logs(log_dir: str | Path, formats: tuple[str, ...] = ("eval", "json")) -> dict[str, Path]:
    """Run the task once per log format into ``log_dir``; return {format: log path}."""
    from inspect_ai import eval as inspect_eval

    out: dict[str, Path] = {}
    for fmt in formats:
        model = scripted_model()
        [log] = inspect_eval(
            tiny_task(),
            model=model,
            model_roles={"grader": model},
            log_dir=str(log_dir),
            log_format=fmt,
            display="none",
            fail_on_error=False,
            max_samples=1,
            log_level="error",
        )
        out[fmt] = Path(log.location)
    return out


def write_copies(log_path: str | Path, out_dir: str | Path, n: int) -> list[Path]:
    """``n`` copies of a log under new eval ids (``<eval id>-<i>``, so their run_ids differ), written
    by inspect_ai's own ``write_eval_log`` in the log's format: a many-log corpus for tests and
    benchmarks without running the task ``n`` times."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_path))
    fmt = "eval" if str(log_path).endswith(".eval") else "json"
    original = log.eval.eval_id
    out: list[Path] = []
    for i in range(n):
        log.eval.eval_id = f"{original}-{i}"
        path = Path(out_dir) / f"{Path(log_path).stem}-{i:04d}.{fmt}"
        write_eval_log(log, str(path), format=fmt)
        out.append(path)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/inspect/tiny_task.py LOG_DIR")
    for fmt, path in write_logs(sys.argv[1]).items():
        print(f"{fmt}: {path}")
