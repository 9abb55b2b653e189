"""Render the audit dict (:func:`evalkit.agreement.audit.build_audit`) as text.

``table`` (fixed-width plain text for a terminal), ``markdown`` (the same tables in GitHub
markdown) and ``csv`` (one row per statistic: tidy data for a spreadsheet). JSON is the dict itself
(see ``render_json``). All three are built from one list of sections, so they hold the same
numbers; every printed line names what it is. Numbers are shown to 3 decimals; ``n/a`` is a
statistic undefined for these data (its reason is listed under the table), ``-`` one that does not
apply (e.g. weighted kappa on a nominal pairing).
"""
from __future__ import annotations

import json
from typing import Any

from evalkit.agreement.paired import NOT_APPLICABLE
from evalkit.present import CsvRows, Table, md_text, sanitize
from evalkit.self_judging import pairing_note

PAIRING_COLUMNS = (
    ("n", "n"),
    ("percent_agreement", "agree"),
    ("cohen_kappa", "kappa"),
    ("weighted_kappa", "w.kappa"),
    ("krippendorff_alpha", "alpha"),
    ("gwet_ac1", "AC1"),
    ("spearman", "spearman"),
    ("lenient", "lenient"),
    ("strict", "strict"),
    ("brier", "brier"),
    ("ece", "ECE"),
)
RATER_COLUMNS = (
    ("n_items", "items"),
    ("n_items_dropped", "dropped"),
    ("percent_agreement", "agree"),
    ("cohen_kappa", "kappa"),
    ("fleiss_kappa", "fleiss"),
    ("krippendorff_alpha", "alpha"),
    ("gwet_ac1", "AC1"),
)
CSV_COLUMNS = ("section", "name", "slice", "key", "statistic", "value", "reason")
RATIONALE_IN_TABLE = 80


def Section(title: str, headers: list[str], rows: list[list[str]], notes: list[str] | None = None,
            empty: str = "") -> Table:
    return Table(headers, rows, notes=notes or [], empty=empty, title=title)


def fmt(value: Any) -> str:
    if isinstance(value, dict) and "value" in value:
        if value["value"] is None:
            return "-" if str(value.get("reason") or "").startswith(NOT_APPLICABLE) else "n/a"
        return fmt(value["value"])
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def usd(value: float | None) -> str:
    """Per-call costs are often fractions of a cent: six decimals, not three."""
    return "n/a" if value is None else f"{value:.6f}"


def fmt_ci(stat: Any) -> str:
    if isinstance(stat, dict) and stat.get("ci_low") is not None and stat.get("ci_high") is not None:
        return f"[{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"
    return "n/a" if isinstance(stat, dict) and "ci_low" in stat else "-"


def _notes(name: str, entry: dict[str, Any], keys: list[str]) -> list[str]:
    out = []
    for key in keys:
        stat = entry.get(key)
        if isinstance(stat, dict) and stat.get("value", 0) is None:
            reason = str(stat.get("reason") or "")
            if reason and not reason.startswith(NOT_APPLICABLE):
                out.append(f"{name} {key} undefined: {reason}")
    return out


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sections(report: dict[str, Any]) -> list[Section]:
    out: list[Section] = []
    stat_keys = [k for k, _ in PAIRING_COLUMNS]

    # pairings
    rows, notes = [], []
    for e in report.get("pairings", []):
        rows.append(
            [e["pairing"]]
            + [fmt(e.get(k)) for k in stat_keys[:3]]
            + [fmt_ci(e.get("cohen_kappa"))]
            + [fmt(e.get(k)) for k in stat_keys[3:]]
        )
        notes += _notes(e["pairing"], e, stat_keys)
        if self_note := pairing_note(e):
            notes.append(self_note)
        ex = e.get("excluded", {})
        left = ", ".join(f"{k} {v}" for k, v in ex.items() if v)
        if left:
            notes.append(f"{e['pairing']} left out: {left}")
        esc = e.get("escalation")
        if isinstance(esc, dict) and "escalated" in esc:
            notes.append(
                f"{e['pairing']} escalation below {esc['threshold']:.2f}: {esc['escalated']} of {esc['n']} escalated, "
                f"catching {esc['misses_caught']} of {esc['misses']} disagreements"
            )
    headers = ["pairing", "n", "agree", "kappa", "kappa 95% CI"] + [h for _, h in PAIRING_COLUMNS[3:]]
    boot = report.get("bootstrap", {})
    if boot:
        notes.append(f"bootstrap: {boot.get('n_resamples')} resamples of the pairs, seed {boot.get('seed')}, level {boot.get('ci')}")
        for e in report.get("pairings", []):
            b = (e.get("cohen_kappa") or {}).get("bootstrap") if isinstance(e.get("cohen_kappa"), dict) else None
            if b and b.get("n_undefined"):
                notes.append(f"{e['pairing']} kappa undefined in {b['n_undefined']} of {b['n_resamples']} resamples")
    out.append(Section("Pairings: judge against mechanical scores", headers, rows, notes, "no pairing configured"))

    by = (report.get("filters") or {}).get("by")
    if by:
        for e in report.get("pairings", []):
            entries = (e.get("slices") or {}).get(by, [])
            srows = [[s["key"]] + [fmt(s.get(k)) for k in stat_keys] for s in entries]
            snotes = [n for s in entries for n in _notes(f"{e['pairing']} {by} {s['key']}", s, stat_keys)]
            out.append(
                Section(f"Pairing {e['pairing']} by {by}", [by] + [h for _, h in PAIRING_COLUMNS], srows, snotes, "no pairs")
            )

    # disagreements
    drows = []
    for i, d in enumerate(report.get("disagreements", []), start=1):
        drows.append(
            [str(i), d["pairing"], d["direction"], d["run_id"], d["scenario_id"], d["model"],
             d["judge_model"] + (" (self)" if d.get("self_judged") else ""),
             fmt(d["judge_value"]), fmt(d["mechanical_value"]), str(d["gap"]), _excerpt(d.get("rationale") or "", RATIONALE_IN_TABLE)]
        )
    out.append(
        Section(
            "Disagreements (lenient safety first, then lenient outcome, then by gap)",
            ["rank", "pairing", "direction", "run", "scenario", "agent model", "judge model", "judge", "mechanical", "gap", "rationale"],
            drows,
            [],
            "no disagreement",
        )
    )

    # raters
    rkeys = [k for k, _ in RATER_COLUMNS]
    rrows, rnotes = [], []
    for e in report.get("raters", []):
        rrows.append([e["dimension"], e["level"], str(len(e["raters"]))] + [fmt(e.get(k)) for k in rkeys])
        rnotes.append(f"{e['dimension']} raters: " + ", ".join(f"{r} ({e['rater_kinds'][r]})" for r in e["raters"]))
        rnotes += _notes(e["dimension"], e, rkeys)
        for key in ("pairwise_cohen_kappa", "pairwise_weighted_kappa"):
            pw = e.get(key)
            if isinstance(pw, dict) and "pairs" in pw and len(e["raters"]) > 2:
                for pair in pw["pairs"]:
                    a, b = pair["raters"]
                    val = fmt(pair) if pair.get("value") is not None else f"n/a ({pair.get('reason')})"
                    rnotes.append(f"{e['dimension']} {key.replace('_', ' ')} {a} vs {b}: {val} (n={pair['n']})")
        for t in e.get("alt_test") or []:
            if t.get("winning_rate") is None:
                rnotes.append(f"{e['dimension']} alt-test {t['judge']}: n/a ({t.get('reason')})")
            else:
                rnotes.append(
                    f"{e['dimension']} alt-test {t['judge']} vs {len(t['humans'])} humans: winning rate {t['winning_rate']:.3f}, "
                    f"advantage probability {t['advantage_prob']:.3f}, passed {fmt(t['passed'])} "
                    f"(epsilon {t['epsilon']}, metric {t['metric']}, q {t['q']})"
                )
        for c in e.get("judge_vs_mechanical") or []:
            direction = (
                f"lenient {c['lenient']}, strict {c['strict']}" if isinstance(c["lenient"], int)
                else f"direction n/a ({c['lenient']['reason']})"
            )
            rnotes.append(
                f"{e['dimension']} judge {c['judge']} vs mechanical {c['mechanical']}: n {c['n']}, agree {c['agree']}, "
                f"kappa {fmt(c['cohen_kappa'])}, {direction}"
            )
    for s in report.get("raters_skipped", []):
        rnotes.append(f"{s['dimension']} skipped: {s['reason']} ({', '.join(s['raters'])})")
    out.append(
        Section(
            "Raters: agreement per dimension (judges, humans, mechanical scorers)",
            ["dimension", "level", "raters"] + [h for _, h in RATER_COLUMNS],
            rrows,
            rnotes,
            "no dimension has two or more raters",
        )
    )

    # drift
    drows, dnotes = [], []
    for j in report.get("drift", []):
        for d in j["dimensions"]:
            drows.append(
                [f"{j['judge_model']}@{j['rubric']}", d["dimension"], str(d["n"]), fmt(d["percent_agreement"]),
                 fmt(d["cohen_kappa"]), fmt(d["weighted_kappa"]), str(d["n_moved"])]
            )
        dnotes.append(
            f"{j['judge_model']}@{j['rubric']} drift flag: {j['n_flagged']} of {j['n_replicates']} replicates had more than "
            f"{j['max_moved']} dimension(s) moved by {j['moved_by']} or more"
        )
        for f in j["flagged"]:
            dnotes.append(f"{j['judge_model']}@{j['rubric']} flagged run {f['run_id']} replicate {f['replicate']}: moved {', '.join(f['moved'])}")
    out.append(
        Section(
            "Judge drift: replicate against first answer",
            ["judge", "dimension", "n", "agree", "kappa", "w.kappa", "moved"],
            drows,
            dnotes,
            "no replicates (evalkit judge --resample)",
        )
    )

    # costs
    crows = [
        [c["judge_model"], c["source"], str(c["n_calls"]), usd(c["cost_median_usd"]), usd(c["cost_mean_excluding_first_usd"]),
         usd(c["cost_total_usd"]), fmt(c["latency_median_ms"]), fmt(c["latency_mean_excluding_first_ms"])]
        for c in report.get("judge_costs", [])
    ]
    out.append(
        Section(
            "Judge cost and latency per call",
            ["judge model", "source", "calls", "median cost usd", "mean cost excl. first", "total cost usd",
             "median latency ms", "mean latency excl. first"],
            crows,
            [],
            "no judge calls recorded",
        )
    )
    return out


def _header(report: dict[str, Any]) -> list[str]:
    c = report.get("counts", {})
    f = report.get("filters", {})
    filt = ", ".join(k if v is True else f"{k} {v}" for k, v in f.items() if v is not None and v is not False)
    return [
        f"evalkit audit: {c.get('scorecards', 0)} scorecards, {c.get('annotations', 0)} judge annotations "
        f"({c.get('non_blind_annotations', 0)} non-blind left out, {c.get('replicate_annotations', 0)} replicates), "
        f"{c.get('imported_ratings', 0)} imported ratings" + (f"; filters: {filt}" if filt else ""),
    ]


def render_table(report: dict[str, Any]) -> str:
    out = [sanitize(line) for line in _header(report)]
    for s in sections(report):
        out += ["", f"== {s.title} =="] + s.text_lines()
    return "\n".join(out) + "\n"


def render_markdown(report: dict[str, Any]) -> str:
    out = ["# evalkit audit", "", md_text(_header(report)[0])]
    for s in sections(report):
        out += ["", f"## {md_text(s.title)}", ""] + s.markdown_lines()
    return "\n".join(out) + "\n"


def _csv_stats(rows: list[list[Any]], section: str, name: str, slice_kind: str, key: str, entry: dict[str, Any], keys: list[str]) -> None:
    for k in keys:
        if k not in entry:
            continue
        v = entry[k]
        if isinstance(v, dict) and "value" in v:
            rows.append([section, name, slice_kind, key, k, "" if v["value"] is None else v["value"], v.get("reason") or ""])
            if v.get("ci_low") is not None:
                rows.append([section, name, slice_kind, key, k + "_ci_low", v["ci_low"], ""])
                rows.append([section, name, slice_kind, key, k + "_ci_high", v["ci_high"], ""])
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            rows.append([section, name, slice_kind, key, k, v, ""])


def render_csv(report: dict[str, Any]) -> str:
    rows: list[list[Any]] = []
    pkeys = [k for k, _ in PAIRING_COLUMNS] + ["n_with_confidence"]
    for e in report.get("pairings", []):
        _csv_stats(rows, "pairings", e["pairing"], "", "", e, pkeys)
        esc = e.get("escalation")
        if isinstance(esc, dict) and "escalated" in esc:
            for k in ("escalated", "misses", "misses_caught"):
                rows.append(["pairings", e["pairing"], "", "", f"escalation_{k}", esc[k], ""])
        for kind, entries in (e.get("slices") or {}).items():
            for s in entries:
                _csv_stats(rows, "pairings", e["pairing"], kind, s["key"], s, pkeys)
    for e in report.get("raters", []):
        _csv_stats(rows, "raters", e["dimension"], "", "", e, [k for k, _ in RATER_COLUMNS] + ["weighted_kappa", "n_excluded"])
        for t in e.get("alt_test") or []:
            for k in ("winning_rate", "advantage_prob"):
                rows.append(["raters", e["dimension"], "alt_test", t["judge"], k, "" if t[k] is None else t[k], t.get("reason") or ""])
        for c in e.get("judge_vs_mechanical") or []:
            pair = f"{c['judge']} vs {c['mechanical']}"
            _csv_stats(rows, "raters", e["dimension"], "judge_vs_mechanical", pair, c, ["n", "agree", "cohen_kappa", "lenient", "strict"])
    for j in report.get("drift", []):
        name = f"{j['judge_model']}@{j['rubric']}"
        rows.append(["drift", name, "", "", "n_replicates", j["n_replicates"], ""])
        rows.append(["drift", name, "", "", "n_flagged", j["n_flagged"], ""])
        for d in j["dimensions"]:
            _csv_stats(rows, "drift", name, "dimension", d["dimension"], d, ["n", "percent_agreement", "cohen_kappa", "weighted_kappa", "n_moved"])
    for c in report.get("judge_costs", []):
        for k in ("n_calls", "cost_median_usd", "cost_mean_excluding_first_usd", "cost_total_usd", "latency_median_ms", "latency_mean_excluding_first_ms"):
            rows.append(["judge_costs", c["judge_model"], "", "", k, "" if c[k] is None else c[k], ""])
    # Numbers stay numbers (csv writes a float as its repr); text cells are sanitized and
    # neutralised against formula injection by the kit.
    return Table(CSV_COLUMNS, rows).to_csv()


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_pairs_csv(path: str, rows: list[dict[str, Any]]) -> None:
    """--pairs-out: ``pairing, item_id, judge_model, judge_value, mechanical_value`` (labels on the
    pairing's scale; enough to recompute every pairing statistic)."""
    cols = ("pairing", "item_id", "judge_model", "judge_value", "mechanical_value")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = CsvRows(fh)
        w.row(cols)
        for r in rows:
            w.row([r[c] for c in cols])


RENDERERS = {"table": render_table, "markdown": render_markdown, "csv": render_csv, "json": render_json}
