"""`evalkit probe`: judge robustness probes (evalkit.probes.pipeline.run_probes; docs/probes.md).

The judge layer (and litellm) load inside the command.
"""

from __future__ import annotations

import sys

import click

from evalkit.commands.kit import (
    EXIT_BAD_INPUT,
    EXIT_GATE,
    EXIT_OK,
    config_file_option,
    format_option,
    judge_command,
    judge_failures,
    refuse_missing_database,
    resamples_option,
    warn,
)


class ProbesOption(click.Option):
    """``--probes``, whose help names the probes of the registry (``evalkit.agreement.probe_names.PROBES``), read
    when the help is shown: the CLI imports no layer below at module level, and the names are
    kept in one place."""

    @property
    def help(self):  # type: ignore[override]
        from evalkit.agreement.probe_names import PROBES

        return f"Comma-separated probes (default all: {','.join(PROBES)})."

    @help.setter
    def help(self, _value) -> None:  # click's __init__ assigns it; the registry is the source
        pass


def register(group: click.Group) -> None:
    @judge_command(group, "probe", db_help="SQLite database (scores + judge tables + probe_annotations).")
    @click.option("--probes", "probe_list", cls=ProbesOption, metavar="LIST")
    @click.option("--sample", type=click.IntRange(1), metavar="N", help="Probe N runs drawn with --seed (default all).")
    @click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample and of the bootstrap.")
    @config_file_option(
        "--probes-config",
        noun="probes config file",
        help="TOML file overriding the planted texts of configs/probes.toml.",
    )
    @click.option(
        "--fail-if",
        "fail_if",
        multiple=True,
        metavar="COND",
        help="Exit 3 when PROBE[.DIMENSION].METRIC OP NUMBER holds, e.g. 'false_claim.fooled_rate>0.05' "
        "(METRIC: unchanged_rate, lenient_flip_rate, strict_flip_rate, fooled_rate). Repeatable.",
    )
    @resamples_option()
    @format_option(["table", "json", "markdown"], dest="fmt")
    @click.option(
        "--allow-self-judging",
        is_flag=True,
        help="Do not warn when a judge model is the agent model whose runs it judges.",
    )
    def probe(
        paths,
        db_path,
        probe_list,
        sample,
        seed,
        probes_config,
        fail_if,
        n_resamples,
        fmt,
        allow_self_judging,
        **call,
    ):
        """Probe the LLM judge: judge counterfactual runs whose mechanical score is unchanged.

        Each probe (the --probes list) rewrites a scored run without changing its mechanical
        score; the judge grades the original and the counterfactual through the same cache, and
        the answers to counterfactuals are stored apart (probe_annotations), never in the
        annotations. Without PATHS, probes the runs in --db (their trajectory files are read
        again); with PATHS, scores them first. The audit shows the results in its `probes` section.

        Exit codes: 0 done; 1 bad inputs, judge errors or --max-cost reached; 2 usage error;
        3 a --fail-if condition held (or could not be measured).
        """
        from evalkit.probes import sections
        from evalkit.probes.pipeline import check_probes, parse_gates, run_probes

        try:
            parse_gates(fail_if)
            probes = check_probes(probe_list.split(",") if probe_list is not None else None)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        scenario_files = call.pop("scenario_files")
        refuse_missing_database(paths, db_path)  # the scenario files serve the stored runs too: read again
        models = call.pop("models")
        with judge_failures():
            result = run_probes(
                str(db_path),
                models,
                probes=probes,
                sample=sample,
                seed=seed,
                paths=list(paths) or None,
                scenarios=list(scenario_files) or None,
                probes_config=probes_config,
                fail_if=fail_if,
                n_resamples=n_resamples,
                warn=warn,
                allow_self_judging=allow_self_judging,
                **call,
            )
        for error in result.input_errors:
            warn(error)
        doc = result.as_dict()
        if fmt == "json":
            text = sections.probe_run_json(doc)
        else:
            text = sections.probe_run_text(doc, markdown=fmt == "markdown")
        click.echo(text, nl=False)
        for summary in (result.judging.originals, result.judging.probes):
            if summary.fatal or summary.stopped:
                warn(f"error: {summary.fatal or summary.stopped}")
                break
        for line in result.gate_failures:
            warn(line)
        if result.gate_failures:
            sys.exit(EXIT_GATE)
        sys.exit(EXIT_OK if result.ok else EXIT_BAD_INPUT)
