"""`evalkit judge` and `evalkit cache`: the optional LLM judge (judges/ package, imported lazily).

Module level imports only click and the standard library: `evalkit score` never pays for the
judge layer, and the judge pays for litellm only once a litellm model is actually built.
"""

from __future__ import annotations

import os
import sys

import click

from evalkit.commands.kit import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    db_option,
    fail,
    format_option,
    judge_call_options,
    warn,
)


def register(group: click.Group) -> None:
    @group.command("judge")
    @click.argument("paths", nargs=-1, type=click.Path(exists=True, allow_dash=True))
    @judge_call_options
    @db_option(help="SQLite database (scores + judge tables).")
    @click.option(
        "--resample",
        type=click.FloatRange(0, 1, min_open=True),
        help="Re-judge this fraction of already-judged runs, bypassing the cache, as replicates (drift check).",
    )
    @click.option("--seed", type=int, help="Seed choosing the --resample runs.")
    @click.option(
        "--show-mechanical",
        is_flag=True,
        help="Show the mechanical scores to the judge (annotations marked non-blind).",
    )
    @click.option("--dry-run", is_flag=True, help="Print what would be sent, send nothing.")
    @click.option(
        "--batch",
        is_flag=True,
        help="Send the calls through the provider's batch API (half price, answers later; OpenAI-compatible). "
        "The batch ids are stored at once: run the same command again to resume a killed one.",
    )
    @click.option(
        "--batch-status",
        is_flag=True,
        help="Poll the stored batches once, collect the finished ones, list them; submit nothing.",
    )
    @format_option(["table", "json", "jsonl", "markdown"], dest="fmt")
    @click.option(
        "--allow-self-judging",
        is_flag=True,
        help="Do not warn when a judge model is the agent model whose runs it judges "
        "(the audit still flags those pairs).",
    )
    def judge(
        paths,
        models,
        rubric,
        db_path,
        concurrency,
        api_base,
        temperature,
        output_mode,
        max_input_tokens,
        max_cost,
        refresh,
        resample,
        seed,
        show_mechanical,
        dry_run,
        batch,
        batch_status,
        fmt,
        config_path,
        progress,
        allow_self_judging,
    ):
        """Judge runs with an LLM and store qualitative annotations (never the scores).

        Without PATHS, judges the runs already scored in --db; with PATHS (files, directories, -),
        scores them first like `evalkit score`, then judges them. API keys come from the
        environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...) and are never stored.

        Exit codes: 0 every run judged; 1 bad inputs, judge errors, a fatal provider error
        (401/403/400/404, no API key, nothing listening at --api-base, every output mode refused)
        or --max-cost reached; 2 usage error.
        """
        from evalkit.judges.api import check_resample

        try:
            check_resample(resample, seed)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        if not paths and not os.path.exists(db_path):
            raise click.UsageError(f"no database {db_path}: score runs first, or pass trajectory PATHS")

        from evalkit.errors import InputError
        from evalkit.judges import api, render
        from evalkit.judges.config import ConfigError
        from evalkit.judges.protocol import JudgeSetupError, UnknownJudgeError
        from evalkit.judges.rubrics import RubricError

        options = dict(
            db=db_path,
            rubric=rubric,
            api_base=api_base,
            temperature=temperature,
            refresh=refresh,
            resample=resample,
            seed=seed,
            show_mechanical=show_mechanical,
            config_path=config_path,
            output_mode=output_mode,
            max_input_tokens=max_input_tokens,
        )
        try:
            if paths:
                from evalkit.api import score_to_db

                cards, input_errors = score_to_db(paths, db_path, warn=warn)
            else:
                cards, input_errors = api.stored_cards(db_path), []
            for error in input_errors:
                warn(str(error))
            if not allow_self_judging:
                from evalkit.agreement.self_judging import warning_lines

                for line in warning_lines(models, (c.model for c in cards)):
                    warn(line)
            if dry_run:
                plan = api.dry_run(cards, models, batch=batch, **options)
                click.echo(render.render_dry_run(plan, fmt), nl=False)
                sys.exit(EXIT_BAD_INPUT if input_errors else EXIT_OK)
            result = api.judge_cards(
                cards,
                models,
                concurrency=concurrency,
                max_cost=max_cost,
                progress=progress,
                batch=batch,
                batch_status=batch_status,
                **options,
            )
            if batch_status:
                click.echo(
                    render.render_batches(api.stored_batches(db_path, models, rubric, config_path), fmt), nl=False
                )
        except KeyboardInterrupt:
            fail("interrupted; finished calls are stored, run the same command again to resume", EXIT_INTERRUPTED)
        except (RubricError, UnknownJudgeError) as exc:
            fail(str(exc), EXIT_USAGE)
        except JudgeSetupError as exc:
            fail(str(exc))
        except (ConfigError, ValueError, InputError) as exc:
            fail(str(exc))
        result.input_errors = input_errors
        shape = {
            "table": render.annotations_text,
            "markdown": render.annotations_markdown,
            "json": render.annotations_json,
            "jsonl": render.annotations_jsonl,
        }[fmt]
        click.echo(shape(result), nl=False)
        if fmt == "jsonl":
            for line in render.summary_lines(result):
                warn(line)
        if result.summary.fatal:
            warn(f"error: {result.summary.fatal}")
        elif result.summary.stopped:
            warn(f"error: {result.summary.stopped}")
        sys.exit(EXIT_OK if result.ok else EXIT_BAD_INPUT)

    @group.group("cache")
    def cache() -> None:
        """Inspect or clear the judge's call cache (the judge_calls table)."""

    @cache.command("stats")
    @db_option(existing=True, help="SQLite database to read.")
    @format_option(["table", "json"], dest="fmt")
    def stats(db_path, fmt):
        """Cached calls per judge model, rubric and status, with tokens and cost; then the output mode
        remembered per (judge model, api base)."""
        from evalkit.errors import InputError
        from evalkit.judges import render
        from evalkit.judges.store import JudgeStore

        try:
            store = JudgeStore(db_path, readonly=True)
            try:
                rows, modes = store.stats(), store.output_modes()
            finally:
                store.close()
        except InputError as exc:
            fail(str(exc))
        click.echo(render.render_stats(rows, fmt, modes), nl=False)

    @cache.command("clear")
    @db_option(existing=True)
    @click.option(
        "--model",
        help="Only this judge model: the full name (openai/gpt-4o-mini) or the part after "
        "the provider prefix (gpt-4o-mini); an unknown name lists the judges present.",
    )
    @click.option("--rubric", help="Only this rubric id.")
    def clear(db_path, model, rubric):
        """Delete cached calls (annotations are results and stay)."""
        from evalkit.errors import InputError
        from evalkit.judges.store import JudgeStore

        try:
            store = JudgeStore(db_path)
            try:
                count = store.clear(model=model, rubric=rubric)
            finally:
                store.close()
        except InputError as exc:
            fail(str(exc))
        click.echo(f"cleared {count} cached calls")
