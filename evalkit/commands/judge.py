"""`evalkit judge` and `evalkit cache`: the optional LLM judge (judges/ package, imported lazily).

The judge layer loads inside the commands: `evalkit score` never pays for it, and the judge
pays for litellm only once a litellm model is actually built.
"""

from __future__ import annotations

import sys

import click

from evalkit.commands.kit import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    db_option,
    fail,
    format_option,
    judge_command,
    judge_failures,
    refuse_missing_database,
    warn,
)


def register(group: click.Group) -> None:
    @judge_command(group, "judge", db_help="SQLite database (scores + judge tables).")
    @click.option(
        "--resample",
        type=click.FloatRange(0, 1, min_open=True),
        help="Re-judge this fraction of already-judged runs, bypassing the cache, as replicates (drift check).",
    )
    @click.option("--seed", type=int, help="Seed choosing the --resample runs, or the --pairwise --baseline pairs (0).")
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
        "--pairwise",
        is_flag=True,
        help="Judge pairs of runs (which is better), each pair in both orders, with a pairwise rubric "
        "(default pairwise_v1); the verdicts go to the audit's pairwise section (docs/judge.md).",
    )
    @click.option(
        "--baseline",
        metavar="MODEL",
        help="With --pairwise: pair each run of every other model with a run of MODEL on the same "
        "scenario (seeded by --seed).",
    )
    @click.option(
        "--pairs",
        "pairs_file",
        type=click.Path(exists=True, dir_okay=False),
        help="With --pairwise: judge these pairs (CSV, TSV or JSONL with columns pair_id, a, b).",
    )
    @click.option(
        "--allow-self-judging",
        is_flag=True,
        help="Do not warn when a judge model is the agent model whose runs it judges "
        "(the audit still flags those pairs).",
    )
    def judge(
        paths,
        db_path,
        resample,
        seed,
        show_mechanical,
        dry_run,
        batch,
        batch_status,
        fmt,
        pairwise,
        baseline,
        pairs_file,
        allow_self_judging,
        **call,
    ):
        """Judge runs with an LLM and store qualitative annotations (never the scores).

        Without PATHS, judges the runs already scored in --db; with PATHS (files, directories, -),
        scores them first like `evalkit score`, then judges them. API keys come from the
        environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...) and are never stored.

        Exit codes: 0 every run judged; 1 bad inputs, judge errors, a fatal provider error
        (401/403/400/404, no API key, nothing listening at --api-base, every output mode refused)
        or --max-cost reached; 2 usage error.
        """
        from evalkit.judges import api as judges
        from evalkit.judges import pairwise as pairwise_judge
        from evalkit.judges import render

        if pairwise or baseline or pairs_file:
            _check_pairwise(
                pairwise, baseline, pairs_file, seed, resample, show_mechanical, dry_run, batch, batch_status
            )
        try:
            judges.check_resample(resample, None if pairwise else seed)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        scenario_files = call.pop("scenario_files")
        refuse_missing_database(paths, db_path, scenario_files)
        models = call.pop("models")
        if pairwise and dry_run:
            from evalkit.judges.pairwise import dry_run_pairs

            refuse_missing_database((), db_path)
            with judge_failures():
                sources = dict(baseline=baseline, pairs_file=pairs_file, seed=seed or 0)
                plan = dry_run_pairs(models, db=str(db_path), batch=batch, **sources, **call)
            click.echo(render.render_dry_run(plan, fmt), nl=False)
            sys.exit(EXIT_OK)
        if pairwise:
            with judge_failures():
                input_errors = _score_into(db_path, paths, scenario_files)[1] if paths else []
                result = pairwise_judge.judge_pairs(
                    models,
                    db=str(db_path),
                    baseline=baseline,
                    pairs_file=pairs_file,
                    seed=seed or 0,
                    batch=batch,
                    **call,
                )
                result.input_errors = input_errors
            click.echo(pairwise_judge.render_result(result, fmt), nl=False)
            if fmt == "jsonl":
                for line in pairwise_judge.summary_lines(result):
                    warn(line)
            if result.summary.fatal or result.summary.stopped:
                warn(f"error: {result.summary.fatal or result.summary.stopped}")
            sys.exit(EXIT_OK if result.ok else EXIT_BAD_INPUT)
        options = dict(call, resample=resample, seed=seed, show_mechanical=show_mechanical, batch=batch)
        with judge_failures():
            cards, input_errors = _judged_cards(db_path, models, paths, scenario_files, allow_self_judging)
            if dry_run:
                plan = judges.dry_run(cards, models, db=str(db_path), **options)
                click.echo(render.render_dry_run(plan, fmt), nl=False)
                sys.exit(EXIT_BAD_INPUT if input_errors else EXIT_OK)
            result = judges.judge_cards(cards, models, db=str(db_path), batch_status=batch_status, **options)
            result.input_errors = input_errors
            if batch_status:
                batches = judges.stored_batches(str(db_path), models, call["rubric"], call["config_path"])
                click.echo(render.render_batches(batches, fmt), nl=False)
        for piece in render.annotations(result, fmt):  # written as read: no run holds its whole output
            click.echo(piece, nl=False)
        if fmt == "jsonl":
            for line in render.summary_lines(result):
                warn(line)
        if result.summary.fatal:
            warn(f"error: {result.summary.fatal}")
        elif result.summary.stopped:
            warn(f"error: {result.summary.stopped}")
        sys.exit(EXIT_OK if result.ok else EXIT_BAD_INPUT)

    def _check_pairwise(pairwise, baseline, pairs_file, seed, resample, show_mechanical, dry_run, batch, status):
        """--pairwise takes one source of pairs and none of the pointwise judge's run options."""
        if not pairwise:
            raise click.UsageError("--baseline and --pairs are options of --pairwise")
        if (baseline is None) == (pairs_file is None):
            raise click.UsageError("--pairwise needs --baseline MODEL or --pairs FILE (one of them)")
        if pairs_file is not None and seed is not None:
            raise click.UsageError("--seed draws the --baseline pairs; --pairs FILE names its own")
        given = [
            name
            for name, value in (
                ("--resample", resample is not None),
                ("--show-mechanical", show_mechanical),
                ("--batch-status", status),
            )
            if value
        ]
        if given:
            raise click.UsageError(f"--pairwise does not take {', '.join(given)}")

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


def _score_into(db_path: str, paths, scenario_files=()) -> tuple[list, list[str]]:
    """``paths`` scored into the database as ``evalkit score --db`` does (with ``scenario_files``
    for runs that name their scenario), each bad file said: the good cards and one line per bad
    file."""
    from evalkit.db.scores import Store
    from evalkit.engines.pipeline import score_files

    scenarios = None
    if scenario_files:  # read first: a bad file makes no database
        from evalkit.trajectory.scenario_files import load_given_scenarios

        scenarios = load_given_scenarios(scenario_files)
    with Store(db_path) as store:
        cards, errors = score_files(paths, store=store, scenarios=scenarios, warn=warn).collect()
    for error in errors:
        warn(str(error))
    return cards, [str(error) for error in errors]


def _judged_cards(db_path: str, models, paths, scenario_files, allow_self_judging: bool) -> tuple[list, list[str]]:
    """The cards a judge run judges: ``paths`` scored into the database first, else the stored
    ones; unless ``allow_self_judging``, one warning per judge model that would judge its own runs."""
    from evalkit.judges.api import stored_cards

    cards, errors = _score_into(db_path, paths, scenario_files) if paths else (stored_cards(str(db_path)), [])
    if not allow_self_judging:
        from evalkit.agreement.self_judging import warning_lines

        for line in warning_lines(models, (c.model for c in cards)):
            warn(line)
    return cards, errors
