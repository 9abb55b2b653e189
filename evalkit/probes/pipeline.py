"""The Python API behind `evalkit probe` (the CLI is a thin shell over :func:`run_probes`).

    from evalkit.probes.pipeline import run_probes
    result = run_probes("evalkit.db", ["openai/gpt-4o-mini"], probes=["false_claim", "injection"],
                        sample=50, seed=1, fail_if=["false_claim.fooled_rate>0.05"])
    result.entries        # the audit's probe entries for this run's judges, rubric, probes and runs
    result.gate_failures  # one line per crossed --fail-if

Steps: the scored runs (in ``db``, or ``paths`` scored into it first, as `evalkit judge PATHS`
does) → a seeded sample (``sample`` runs, ``random.Random(seed)`` over sorted run ids) → each
run's trajectory file read again (its judge bundle must hash to the stored one) → one
counterfactual per applicable probe (`evalkit.probes.cases`, mechanical score checked unchanged)
→ the originals and the counterfactuals judged through the judge layer and its cache
(`evalkit.judges.probe_runner`) → the statistics (`evalkit.agreement.probe_stats`) → the gates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.agreement.probe_names import PROBES
from evalkit.errors import InputError
from evalkit.probes.cases import NotApplicable, ProbeCase, ScoreMoved, build_case, check_source, sample_runs
from evalkit.probes.config import ProbesConfig, load_probes_config
from evalkit.probes.gates import Gate, crossed, parse_gate
from evalkit.trajectory.input_files import name_list

UNREADABLE = "its trajectory file cannot be read"


@dataclass
class ProbeResult:
    runs: list[str]  # the runs probed (the sample), sorted
    cases: dict[str, int]  # probe -> counterfactuals judged
    skipped: dict[str, dict[str, int]]  # probe -> reason -> runs
    entries: list[dict[str, Any]]  # evalkit.agreement.probe_stats entries for this run
    judging: Any = None  # evalkit.judges.probe_runner.ProbeJudging
    gates: list[str] = field(default_factory=list)
    gate_failures: list[str] = field(default_factory=list)
    input_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.judging is None or self.judging.ok) and not self.input_errors

    def as_dict(self) -> dict[str, Any]:
        j = self.judging
        return {
            "rubric": None if j is None else {"id": j.rubric.id, "version": j.rubric.version},
            "judge_models": [] if j is None else j.models,
            "runs": self.runs,
            "cases": self.cases,
            "skipped": self.skipped,
            "originals": None if j is None else j.originals.as_dict(),
            "probe_calls": None if j is None else j.probes.as_dict(),
            "probes": self.entries,
            "gates": [
                {"gate": g, "failures": [f for f in self.gate_failures if f.startswith(f"gate failed: {g}:")]}
                for g in self.gates
            ],
            "input_errors": self.input_errors,
            "notes": self.notes,
        }


def parse_gates(fail_if: Iterable[str]) -> list[Gate]:
    return [parse_gate(text) for text in fail_if]


def check_probes(probes: Iterable[str] | None) -> list[str]:
    """The probes asked for, in the documented order; ValueError naming an unknown one."""
    if probes is None:
        return list(PROBES)
    asked = [p.strip() for p in name_list(probes, "probes") if p.strip()]
    unknown = [p for p in asked if p not in PROBES]
    if unknown or not asked:
        what = f"unknown probe {unknown[0]!r}" if unknown else "no probe given"
        raise ValueError(f"{what} (probes: {', '.join(PROBES)})")
    return [p for p in PROBES if p in asked]


def build_cases(
    cards: Sequence[Any], probes: Sequence[str], cfg: ProbesConfig, read: Any = None
) -> tuple[list[ProbeCase], dict[str, dict[str, int]], list[str]]:
    """Counterfactuals of ``cards`` (ScoreCards) under ``probes``: (cases in run then probe order,
    skipped reasons per probe, one note per unreadable file)."""
    if read is None:
        from evalkit.trajectory.reader import read_trajectory as read
    cases: list[ProbeCase] = []
    skipped: dict[str, dict[str, int]] = {p: {} for p in probes}
    notes: list[str] = []

    def skip(probe: str, reason: str) -> None:
        skipped[probe][reason] = skipped[probe].get(reason, 0) + 1

    for card in cards:
        try:
            traj = read(card.path)
            check_source(traj, card)
        except (InputError, OSError, NotApplicable) as exc:
            notes.append(f"{card.run_id}: not probed: {exc}")
            for probe in probes:
                skip(probe, UNREADABLE)
            continue
        for probe in probes:
            try:
                cases.append(build_case(probe, traj, card, cfg))
            except NotApplicable as exc:
                skip(probe, str(exc))
                if isinstance(exc, ScoreMoved):
                    notes.append(f"{card.run_id}: {probe}: {exc}")
    return cases, skipped, notes


def run_probes(
    db: str,
    models: Iterable[str],
    *,
    rubric: str | None = None,
    probes: Iterable[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    paths: Sequence[str] | None = None,
    scenarios: Sequence[str] | None = None,
    probes_config: ProbesConfig | str | None = None,
    fail_if: Iterable[str] = (),
    n_resamples: int = 1000,
    warn: Any = None,
    allow_self_judging: bool = False,
    **judge_options: Any,
) -> ProbeResult:
    """Probe the judge(s) ``models`` (see the module docstring).

    ``judge_options`` are `evalkit judge`'s: concurrency, api_base, temperature, max_cost, refresh,
    config, config_path, progress, api_key, output_mode, max_input_tokens. ``fail_if`` holds
    conditions for :mod:`evalkit.probes.gates` (parsed first: a bad one is a ValueError before any
    work). ``scenarios``: scenario files for runs that name their scenario (to score ``paths`` and to read
    every probed run's file again). ``warn``
    receives the reader's warnings and, unless ``allow_self_judging``, one line per judge model
    that would judge runs of its own model (as `evalkit judge` warns). Raises InputError (bad
    config, unreadable database), ValueError (bad arguments), the judge layer's RubricError /
    UnknownJudgeError.
    """
    from evalkit.agreement.pairings_config import load_audit_config
    from evalkit.agreement.probe_stats import probe_entries
    from evalkit.db import open_readonly, read_annotations, read_probe_annotations
    from evalkit.judges import api as judge_api
    from evalkit.judges.probe_runner import probe_cases

    models = name_list(models, "models")
    gates = parse_gates(fail_if)
    chosen = check_probes(probes)
    if sample is not None and sample < 1:
        raise ValueError(f"--sample must be at least 1, got {sample}")
    cfg = probes_config if isinstance(probes_config, ProbesConfig) else load_probes_config(probes_config)
    read = None  # each run's file is read again to build its counterfactuals, with its scenario files
    if scenarios:
        from evalkit.trajectory.reader import read_trajectory
        from evalkit.trajectory.scenario_files import load_given_scenarios

        scenarios = load_given_scenarios(scenarios)
        read = lambda path: read_trajectory(path, scenarios=scenarios)  # noqa: E731
    if paths:
        from evalkit.db.scores import Store
        from evalkit.engines.pipeline import score_files

        with Store(db) as store:
            cards, errors = score_files(paths, store=store, scenarios=scenarios, warn=warn).collect()
        input_errors = [str(error) for error in errors]
    else:
        cards, input_errors = judge_api.stored_cards(db), []
    judged = [c for c in cards if c.status in judge_api.JUDGED_STATUSES and c.judge_bundle and c.bundle_hash]
    picked = set(sample_runs([c.run_id for c in judged], sample, seed))
    runs = sorted((c for c in judged if c.run_id in picked), key=lambda c: c.run_id)
    if warn is not None and not allow_self_judging:
        from evalkit.agreement.self_judging import warning_lines

        for line in warning_lines(models, (c.model for c in runs)):
            warn(line)
    cases, skipped, notes = build_cases(runs, chosen, cfg, read)
    judging = probe_cases(runs, cases, models, db=db, rubric=rubric, **judge_options)

    probed = {c.run_id for c in runs}
    with open_readonly(db) as database:
        values = [
            v
            for v in read_annotations(database, rubric=judging.rubric.id)
            if v.run_id in probed and v.judge_model in judging.models
        ]
        answers = [
            a
            for a in read_probe_annotations(database, rubric=judging.rubric.id)
            if a.run_id in probed and a.judge_model in judging.models and a.probe in chosen
        ]
    bootstrap = (
        None if n_resamples == 0 else {"n_resamples": n_resamples, "seed": seed, "ci": load_audit_config(None).ci}
    )
    # the probed runs' own cards say which failed (all_passed false, as failed_run_ids reads the
    # stored ones): no need to read back every card in the database
    failed = {c.run_id for c in runs if c.vector.all_passed is False}
    entries = probe_entries(failed, values, answers, bootstrap=bootstrap)
    failures = [line for gate in gates for line in crossed(gate, entries)]
    counts = {p: sum(1 for c in cases if c.probe == p) for p in chosen}
    return ProbeResult(
        runs=sorted(probed),
        cases=counts,
        skipped=skipped,
        entries=entries,
        judging=judging,
        gates=[g.text for g in gates],
        gate_failures=failures,
        input_errors=list(map(str, input_errors)),
        notes=notes,
    )


__all__ = ["ProbeResult", "build_cases", "check_probes", "parse_gates", "run_probes"]
