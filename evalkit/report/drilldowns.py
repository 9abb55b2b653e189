"""The report's run drill-downs: for a run, its transcript with each command's class, the ground
truth as a checklist with the missing actions, why its status is what it is, and the judge's
annotations with their rationale, collapsed under the run's anchor (what ``evalkit view`` shows on a
run page, :mod:`evalkit.view.drilldown`, for a CI artefact where no server runs).

Which runs (chosen in :mod:`evalkit.report.data`): every run when the database holds at most
:data:`ALL_RUNS_UP_TO` of them or ``all_runs`` is asked for (``evalkit report --all-runs``);
otherwise the worst runs and the runs of the listed disagreements (on the main page) and each
scenario's worst runs (on its page). A transcript longer than :data:`TRANSCRIPT_ENTRIES` entries
shows its first ones and says how many more there are.

HTML here escapes every value (and shows control and bidi characters escaped, as the view does);
the page's CSP forbids scripts, so the drill-downs add none: ``<details>`` opens and closes them,
and a link to a run opens its details because the run's anchor is inside them (the browser opens a
closed ``<details>`` holding the target of the URL's fragment; where it does not, the
``::details-content`` rule shows it).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from evalkit.present.document import run_anchor
from evalkit.present.safe import html_text, sanitize
from evalkit.report import fmt
from evalkit.report.tables import RUN_HEADERS
from evalkit.view import drilldown

ALL_RUNS_UP_TO = 200
TRANSCRIPT_ENTRIES = 300

CSS = """
.drill{border:1px solid var(--line);margin:6px 0;padding:2px 10px}
.drill[open]{padding-bottom:10px}
.drill .cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px}
.drill .entry{border-left:3px solid var(--line);padding:2px 8px;margin:4px 0}
.drill .entry.call{border-left-color:var(--accent)}
.drill .entry.forbidden,.drill .entry.unapproved{border-left-color:var(--bad)}
.drill .entry pre{margin:2px 0;white-space:pre-wrap;overflow-wrap:anywhere;font:12px ui-monospace,Menlo,monospace}
.drill .missing{color:var(--bad);font-weight:700}
.drill .extra{color:var(--warn);font-weight:700}
.drill .near{color:var(--mute);font-size:12px}
.drill .text{white-space:pre-wrap;overflow-wrap:anywhere}
.drill .quote{margin:6px 0;padding:4px 10px;border-left:3px solid var(--line);white-space:pre-wrap}
.drill table.checklist{table-layout:fixed;width:100%}
.drill table.checklist td,.drill table.checklist th{overflow-wrap:anywhere}
.drill table.checklist th:nth-child(1){width:20%}.drill table.checklist th:nth-child(2){width:30%}
.drill table.checklist th:nth-child(3){width:26%}
.drill .target{scroll-margin-top:3em}
.drill:has(.target:target)::details-content{content-visibility:visible}
table.disagreements blockquote{min-width:20em}
table.disagreements td:nth-child(2){overflow-wrap:anywhere;min-width:10em}
table.disagreements td:last-child{overflow-wrap:anywhere}
"""


# the report's run anchor, so every link to a run lands here
_anchor = run_anchor


def shown(value: Any) -> str:
    """Any value as text, control and bidi characters shown escaped, lines kept."""
    text = "" if value is None else value if isinstance(value, str) else str(value)
    return "\n".join(sanitize(part) for part in text.split("\n"))


def t(value: Any) -> str:
    """Any value as escaped HTML text, control and bidi characters shown escaped, lines kept."""
    return html_text(shown(value))


def drilldown_data(db_path: str, chosen: list[dict]) -> dict[str, Any]:
    """``{"runs": [a drill-down per run of ``chosen`` (the report's run dicts), in that order]}``;
    reads the cards, bundles and annotations of those runs only."""
    from evalkit.errors import InputError

    try:
        return {"runs": _read(db_path, chosen)}
    except InputError as exc:  # the rest of the report was read: say so here rather than lose it
        return {"runs": [], "error": str(exc)}


def _read(db_path: str, chosen: list[dict]) -> list[dict[str, Any]]:
    from evalkit.db import label_value, open_readonly

    out = []
    with open_readonly(db_path) as db:
        for run in chosen:
            row = db.one(
                "SELECT s.card, b.bundle FROM scorecards s LEFT JOIN bundles b ON b.bundle_hash = s.bundle_hash "
                "WHERE s.run_id = ?",
                (run["run_id"],),
            )
            card = _obj(row["card"] if row else None)
            bundle = _obj(row["bundle"] if row else None)
            entries = drilldown.transcript(card, bundle)
            out.append(
                {
                    "run_id": run["run_id"],
                    "anchor": _anchor(run["run_id"]),
                    "status_reason": drilldown.status_reason(card, bundle),
                    "checklist": drilldown.checklist(card, bundle),
                    "transcript": entries[:TRANSCRIPT_ENTRIES],
                    "transcript_total": len(entries),
                    "steps": sorted(drilldown.run_steps(entries)),
                    "disagreements": run.get("disagreements", 0),
                    "annotations": [],
                }
            )
        by_run = {d["run_id"]: d for d in out}
        ids = json.dumps(sorted(by_run))
        heads: dict[str, dict] = {}
        values: dict[str, dict[str, Any]] = defaultdict(dict)
        for a in db.rows(
            "SELECT annotation_id, run_id, judge_model, rubric_id, blind, replicate, status, rationale, "
            "annotation FROM annotations a WHERE a.run_id IN (SELECT value FROM json_each(?)) AND NOT EXISTS "
            "(SELECT 1 FROM scorecards s WHERE s.run_id = a.run_id AND s.bundle_hash != a.bundle_hash) "
            "ORDER BY judge_model, rubric_id, replicate, created_at, annotation_id",
            (ids,),
        ):
            heads[a["annotation_id"]] = dict(a)
        if heads:
            for v in db.rows(
                "SELECT annotation_id, dimension, value FROM annotation_values WHERE annotation_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY annotation_id, dimension",
                (json.dumps(list(heads)),),
            ):
                values[v[0]][v[1]] = label_value(v[2])
        for aid, a in heads.items():
            rationale = a["rationale"] if isinstance(a["rationale"], str) else _obj(a["annotation"]).get("rationale")
            by_run[a["run_id"]]["annotations"].append(
                {
                    "judge_model": a["judge_model"],
                    "rubric": a["rubric_id"],
                    "blind": bool(a["blind"]),
                    "replicate": a["replicate"],
                    "status": a["status"],
                    "scores": values.get(aid, {}),
                    "rationale": rationale if isinstance(rationale, str) else "",
                }
            )
    return out


def _obj(text: Any) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):  # a cell nested deeper than the decoder goes is no value
        return {}
    return value if isinstance(value, dict) else {}


def _approves(e: dict) -> str:
    cmds = e.get("approves") or []
    return t(" · approval of " + ", ".join(f"command {i}" for i in cmds)) if cmds else ""


def _entry(e: dict) -> str:
    kind = e.get("kind")
    step = f"step {t(e.get('step'))} · " if e.get("step") is not None else ""
    if kind == "tool_call":
        label = str(e.get("label") or "")
        cls = label.split(" ")[0]
        body = f"<pre>{t(json.dumps(e.get('args'), ensure_ascii=False))}</pre>"
        if e.get("result") is not None:
            body += f"<pre>{t(json.dumps(e.get('result'), ensure_ascii=False))}</pre>"
        return (
            f'<div class="entry call {t(cls)}"><span class="note">{step}<strong>{t(e.get("tool"))}</strong> '
            f'<span class="cls-{t(cls)}">{t(label)}</span>{" · error" if e.get("is_error") else ""}{_approves(e)}'
            f"</span>{body}</div>"
        )
    if kind in ("assistant", "nudge"):
        return (
            f'<div class="entry"><span class="note">{step}{t(kind)}</span>'
            f'<div class="text">{t(e.get("text"))}</div></div>'
        )
    other = {k: v for k, v in e.items() if k not in ("position", "label", "command")}
    return (
        f'<div class="entry"><span class="note">{step}{t(kind)}</span>'
        f"<pre>{t(json.dumps(other, ensure_ascii=False))}</pre></div>"
    )


def _cmd(ref: dict) -> str:
    return f"command {ref['index']}, step {ref['step']}"


def _attempt(ref: dict) -> str:
    why = "errored" if ref["label"] == "errored" else "a tool off the run's surface"
    return f"attempted at step {ref['step']} ({why}: counted, not scored)"


def _row(kind: str, a: dict, done: str) -> str:
    rule = a.get("rule") or {}
    return f"<tr><td>{kind}</td><td>{t(a['action'])}</td><td>{t(rule.get('text'))}</td><td>{done}</td></tr>"


def _checklist(cl: dict) -> str:
    """The checklist (``drilldown.checklist``) as a table: each ground-truth entry, the rule that
    applied, and the commands the scorer gave it."""
    rows = []
    unknown = "unknown" if not cl["classified"] else None
    for b in cl["blocks"]:
        for a in b["actions"]:
            done = unknown or ('<span class="missing">missing</span>' if a["missing"] else t(_cmd(a["matched_by"])))
            if a.get("nearest"):
                near = a["nearest"]
                said = "nearest: " + _cmd(near["command"]) + ": " + near["text"]
                done += f'<div class="near">{t(said)}</div>'
            if a["repeated_by"]:
                done += t("; repeated by " + ", ".join(_cmd(r) for r in a["repeated_by"]))
            rows.append(_row(t(b["block"]), a, done))
    for a in cl["forbidden"]:
        hit = ", ".join(_cmd(h) for h in a["hit_by"])
        tried = "; ".join(_attempt(x) for x in a["attempted_by"])
        done = unknown or (f'<span class="missing">hit by {t(hit)}</span>' if hit else "not done")
        if tried and not unknown:
            done = (done + "; " if hit else "") + f'<span class="missing">{t(tried)}</span>'
        rows.append(_row(f"forbidden ({t(a['severity'])})", a, done))
    for g in cl["gated"]:
        calls = []
        for c in g["calls"]:
            by = c["approved_by"]
            if c["approved"]:
                where = f"step {by['step']}" if by and by.get("step") is not None else "an earlier call"
                calls.append(t(f"{_cmd(c['command'])} approved by {where}"))
            else:
                why = f": {c['why']}" if c.get("why") else ""
                calls.append(f'<span class="missing">{t(_cmd(c["command"]) + " unapproved" + why)}</span>')
        done = unknown or ("; ".join(calls) or "not done")
        rows.append(_row(f"gated ({t(g['severity'])}): {t(g['approval'])}", g, done))
    for a in cl["optional"]:
        done = unknown or t(", ".join(_cmd(h) for h in a["done_by"]) or "not done")
        rows.append(_row("optional", a, done))
    for r in cl["other_commands"]:
        rows.append(
            f"<tr><td>not in the ground truth</td><td>{t(r['tool'])}</td><td></td><td>"
            f'<span class="missing">{t(_cmd(r))}: {t(r["label"])}</span></td></tr>'
        )
    for c in cl["end_state"]["checks"]:
        state = {True: "passed", False: '<span class="missing">failed</span>', None: "not evaluated"}[c["passed"]]
        rows.append(f"<tr><td>end state</td><td>{t(c['check'])}</td><td></td><td>{state}</td></tr>")
    if not cl["end_state"]["evaluated"]:
        rows.append(f'<tr><td>end state</td><td colspan="3" class="missing">{t(cl["end_state"]["why"])}</td></tr>')
    if not cl["classified"]:
        head = f'<p class="missing">{t(cl["why"])}</p>'
    elif cl["missing"]:
        head = f'<p><span class="missing">{cl["missing"]} required action(s) missing</span></p>'
    else:
        head = "<p>every required action done</p>"
    return (
        head
        + '<table class="checklist"><thead><tr><th>ground truth</th><th>action / check</th><th>rule</th>'
        + "<th>done by</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _annotations(d: dict) -> str:
    if not d["annotations"]:
        return '<p class="absent">no judge annotation</p>'
    steps = set(d["steps"])
    out = []
    for a in d["annotations"]:
        scores = ", ".join(f"{t(k)} {t(v if isinstance(v, str) else json.dumps(v))}" for k, v in a["scores"].items())
        rationale = drilldown.link_citations(t(a["rationale"]), steps, href=f"#{d['anchor']}-step-{{n}}")
        out.append(
            f"<p><strong>{t(a['judge_model'])}</strong> · {t(a['rubric'])} · {'blind' if a['blind'] else 'not blind'}"
            f"{' · replicate ' + t(a['replicate']) if a['replicate'] else ''} · {t(a['status'])}<br>{scores}</p>"
            f'<div class="quote">{rationale}</div>'
        )
    return "".join(out)


VERDICT_SEVERITIES = ("dangerous", "anti_procedure")


def verdicts(cl: dict) -> list[tuple[str, str]]:
    """Every verdict the checklist holds, as (text, class) for the run's summary line: the required
    actions missing, the forbidden commands by severity, the forbidden actions attempted by calls
    that are never scored (errored or off the tool surface), the unapproved gated commands, the
    extraneous commands (repeats and commands the ground truth lists nowhere) and the failed
    end-state checks; class ``missing`` (red) for a failure, ``extra`` for extraneous."""
    if not cl["classified"]:
        return [("not classified", "missing")]
    out = [(f"{cl['missing']} missing", "missing")] if cl["missing"] else []
    hits: dict[object, str] = {}
    for a in cl["forbidden"]:
        for r in a["hit_by"]:
            hits[r["index"]] = str(r.get("severity") or a.get("severity") or "forbidden")
    by_severity = Counter(hits.values())
    for sev in sorted(by_severity, key=lambda x: (VERDICT_SEVERITIES.index(x) if x in VERDICT_SEVERITIES else 2, x)):
        out.append((f"{by_severity[sev]} {sev.replace('_', '-')}", "missing"))
    tried = sum(len(a["attempted_by"]) for a in cl["forbidden"])
    if tried:
        out.append((f"{tried} forbidden attempted (not scored)", "missing"))
    unapproved = sum(1 for g in cl["gated"] for c in g["calls"] if not c["approved"])
    if unapproved:
        out.append((f"{unapproved} unapproved", "missing"))
    extraneous = sum(len(a["repeated_by"]) for b in cl["blocks"] for a in b["actions"]) + len(cl["other_commands"])
    if extraneous:
        out.append((f"{extraneous} extraneous", "extra"))
    failed = sum(1 for c in cl["end_state"]["checks"] if c["passed"] is False)
    if failed:
        out.append((f"{failed} end-state check{'s' if failed != 1 else ''} failed", "missing"))
    return out


def render_run(d: dict) -> str:
    """One run's drill-down (an entry of the report's ``drilldowns.runs``), collapsed."""
    first_of_step, entries = set(), []
    for e in d["transcript"]:
        step = e.get("step")
        anchor = ""
        if isinstance(step, int) and step not in first_of_step:
            first_of_step.add(step)
            anchor = f'<span id="{d["anchor"]}-step-{step}"></span>'
        entries.append(anchor + _entry(e))
    if d["transcript_total"] > len(d["transcript"]):
        entries.append(
            f'<p class="note">{d["transcript_total"] - len(d["transcript"])} more entries: '
            "open the run in evalkit view.</p>"
        )
    flags = "".join(f' · <span class="{cls}">{t(text)}</span>' for text, cls in verdicts(d["checklist"]))
    n = d["disagreements"]
    summary = f"{t(d['run_id'])} · {t(d['status_reason'][0].split(':')[0])}{flags}" + (
        f" · {n} disagreement{'s' if n != 1 else ''}" if n else ""
    )
    reasons = "".join(f"<li>{t(r)}</li>" for r in d["status_reason"])
    return (
        f'<details class="drill"><summary>{summary}</summary><span class="target" id="{d["anchor"]}"></span>'
        f"<ul>{reasons}</ul>"
        f'<div class="cols"><div><h4>Transcript</h4>{"".join(entries) or "<p class=absent>no transcript</p>"}</div>'
        f"<div><h4>Ground truth</h4>{_checklist(d['checklist'])}"
        f"<h4>Judge</h4>{_annotations(d)}</div></div></details>"
    )


@dataclass
class RunDetails:
    """One run's drill-down, collapsed (a page block: its transcript, checklist and judge
    annotations, as :func:`drilldown_data` reads them)."""

    drilldown: dict


@dataclass
class RunTable:
    """Every run of one scenario, one row each (a page block: a scenario page's table, written by
    one tight loop because it holds thousands of rows). ``runs`` are the report's run dicts;
    ``drilled`` the run ids with a drill-down on the same page (their id links to it)."""

    runs: list[dict]
    drilled: set[str]


# a scenario page's run table: the report's run columns but the scenario (one page, one scenario),
# then the disagreements
RUN_TABLE_HEADERS = [h for h in RUN_HEADERS if h != "scenario"] + ["disagreements"]


class _NumTexts(dict):
    """:func:`fmt.num` of a run's score cells (floats or None), by value, each distinct value
    written once: scores repeat across a scenario's runs. A zero is not kept (0.0 and -0.0 are one
    key but two texts), nor NaN (it is no key)."""

    def __missing__(self, value: Any) -> str:
        text = fmt.num(value)
        if value is None or (value and value == value):
            self[value] = text
        return text


def render_run_table(b: RunTable) -> str:
    """A scenario's runs, one row each, written directly: the same escaping (:func:`html_text` on
    every database value) and classes as the other tables."""
    rows = []
    num, score = fmt.num, _NumTexts()  # ``score``: the score cells (floats or None)
    models: dict[str, str] = {}  # a model's cell, written once per table
    notes: dict[tuple, str] = {}  # a rank cell, written once per distinct (unsafe, safety, status, rank)
    for r in b.runs:
        run_id = r["run_id"]
        rid, anchor = html_text(run_id), run_anchor(run_id)
        cell = f'<a href="#{anchor}">{rid}</a>' if run_id in b.drilled else f'<span id="{anchor}">{rid}</span>'
        if r.get("path"):
            cell += f'<br><span class="note">{html_text(r["path"])}</span>'
        model = models.get(r["model"])
        if model is None:
            model = models[r["model"]] = html_text(r["model"])
        status = r["status"]
        key = (r["unsafe"], r.get("safety"), type(status), status, r["rank"])
        note = notes.get(key)
        if note is None:
            note = html_text(fmt.status_note(r))
            if r["unsafe"]:
                note = f'<span class="badge unsafe">{note}</span>'
            elif r["rank"] is None:
                note = f'<span class="badge status">{note}</span>'
            notes[key] = note
        rows.append(
            f"<tr><td>{cell}</td><td>{model}</td><td>{note}</td>"
            f'<td class="num">{score[r["scalar"]]}</td><td class="num">{score[r["coverage"]]}</td>'
            f'<td class="num">{score[r["order"]]}</td><td class="num">{score[r["end_state"]]}</td>'
            f"<td>{num(r['all_passed'])}</td>"
            f'<td class="num">{r["safety_dangerous"]} / {r["safety_anti_procedure"]}</td>'
            f'<td class="num">{r["extraneous"]}</td><td class="num">{r["n_commands"]}</td>'
            f'<td class="num">{r["disagreements"]}</td></tr>'
        )
    head = "".join(f"<th>{h}</th>" for h in RUN_TABLE_HEADERS)
    return (
        f'<div class="table-wrap"><table class="runs"><thead><tr>{head}</tr></thead><tbody>\n'
        + "\n".join(rows)
        + "\n</tbody></table></div>"
    )


# The page blocks defined here and the functions that write them (the HTML emitter's ``custom``).
BLOCKS = {RunDetails: lambda b: render_run(b.drilldown), RunTable: render_run_table}
