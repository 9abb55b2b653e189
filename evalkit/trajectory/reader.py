"""Reading trajectory files: one file at a time, so memory never grows with the number of files.

Rules: the first record must be ``meta``; a bad line is an error naming ``path:line``; except that a
last line which is not valid JSON (a recorder that crashed mid-write) is dropped with a warning, and
the run then has no ``final`` record (status ``incomplete``).
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from evalkit.errors import InputError
from evalkit.trajectory import safe_json
from evalkit.trajectory.bundle import RESULT_MAX_CHARS, BundleBuilder
from evalkit.trajectory.input_files import not_utf8, open_regular, path_list, read_bytes, shown_name
from evalkit.trajectory.records import RECORD_TYPES, Assistant, Call, Final, Meta, Setup, ToolCall, Trajectory
from evalkit.trajectory.safe_json import JSONProblem
from evalkit.trajectory.scenario import Scenario
from evalkit.trajectory.scenario_files import ScenarioSet, fill_scenario, load_scenarios, warn_if_differs
from evalkit.trajectory.values import count_non_finite

STDIN = "-"
# Files up to this size are read whole (then split into lines as the file would be: each keeps its
# newline); larger ones line by line, so memory never holds a large file's bytes beside its records.
_WHOLE_FILE_BYTES = 1 << 20
# The validators themselves: calling them directly skips model_validate's Python wrapper, a third
# of the validation cost on the score path.
_VALIDATE = {name: model.__pydantic_validator__.validate_python for name, model in RECORD_TYPES.items()}
EVENT_TYPES = frozenset({"assistant", "nudge", "tool_call", "provider_error", "harness_error"})
Warn = Callable[[str], None]
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}
_FIELDS_SETS_MAX = 256
# Only lines that could hold a non-finite number are walked to count them. The literals (NaN,
# Infinity) are found by the parse itself: a line is parsed first with them refused, and parsed
# again accepting them only when that fails (rare). A number that overflows to infinity needs an
# exponent or a digit run long enough (what ``[0-9][eE][+-]?[0-9]{3}|[0-9]{309}`` matches): mapping
# every digit to 0 and E to e turns that into a few substring tests, four times cheaper than the
# regular expression (which cost more than parsing the line).
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789E", b"000000000e")
_LONG_DIGITS = b"0" * 309


def _maybe_overflow(line: bytes) -> bool:
    t = line.translate(_DIGITS_TO_ZERO)
    if b"0e" in t and (b"0e000" in t or b"0e+000" in t or b"0e-000" in t):
        return True
    return len(line) >= len(_LONG_DIGITS) and _LONG_DIGITS in t


def _share_fields(record: Any) -> None:
    """Records with the same fields share one fields-set object (a set of ten names costs more
    memory than the record's values); nothing mutates it after parsing."""
    fields_set = record.__pydantic_fields_set__
    key = frozenset(fields_set)
    shared = _FIELDS_SETS.get(key)
    if shared is None:
        if len(_FIELDS_SETS) < _FIELDS_SETS_MAX:  # extra fields vary: keep the table bounded
            _FIELDS_SETS[key] = fields_set
    else:
        object.__setattr__(record, "__pydantic_fields_set__", shared)


# keys other recorders give a field that this format names otherwise
_WRITTEN_AS = {"name": ("tool", "tool_name", "function", "function_name")}


def _describe(exc: ValidationError, record_type: str, obj: Any) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    where = f"{record_type}.{field}" if field else record_type
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    hint = ""
    if err["type"] == "missing" and isinstance(obj, dict) and len(err["loc"]) == 1:
        given = [k for k in _WRITTEN_AS.get(field, ()) if k in obj]
        given = given or difflib.get_close_matches(field, [k for k in obj if isinstance(k, str)], 1, 0.75)
        if given:
            hint = f' (the record has "{given[0]}": write it as "{field}")'
    elif err["type"] == "dict_type" and len(err["loc"]) == 1 and isinstance(obj, dict):
        given = obj.get(field)
        if isinstance(given, str) and given.lstrip()[:1] == "{":
            # OpenAI-style function calls carry their arguments as JSON text
            hint = " (it is JSON text: write the object itself, not its text)"
    return f"{where}: {err['msg']}{hint}{more}"


def _validated(builder: _Builder, validate: Callable[[Any], Any], obj: Any, rtype: str, lineno: int) -> Any:
    """``obj`` as the record ``validate`` makes of it, its extra fields counted; a record that does
    not validate is an error naming ``path:line`` and the first bad field."""
    try:
        record = validate(obj)
    except ValidationError as exc:
        raise InputError(builder.path, lineno, _describe(exc, rtype, obj)) from None
    if record.__pydantic_extra__:
        builder.extra += len(record.__pydantic_extra__)
    return record


def _not_json(line: bytes, problem: JSONProblem) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return not_utf8(line, exc.start)
    return f"not valid JSON ({problem.reason})"


class _Builder:
    """Records of one file, checked as they arrive (so the file is never held whole in memory).
    ``compact``: keep what scoring needs (tool calls as ``Call``) and write each event into the
    judge bundle's text as it arrives, instead of keeping the event records."""

    def __init__(
        self,
        path: str,
        warn: Warn | None,
        compact: bool = False,
        may_overflow: bool = True,
        scenarios: ScenarioSet | None = None,
        finding: Warn | None = None,
    ):
        # ``finding``: where a note on what the recording says against itself goes (``evalkit check``
        # counts it as a warning); ``warn`` when not given
        # ``source``: the file's real name, for what is looked up beside it; ``path``: the name as
        # the card, the errors and the warnings show it (input_files.shown_name)
        self.source, self.path = path, shown_name(path)
        self.warn, self.compact = warn, compact
        self.finding = finding or warn
        self.scenarios = scenarios
        self.may_overflow = may_overflow
        self.bundle: BundleBuilder | None = None
        self.calls: list[Call] = []
        self.command_tools: frozenset[str] = frozenset()
        self.approval_tools: frozenset[str] = frozenset()  # their calls are kept whole (gated actions)
        self.provider_errors = 0
        self.meta: Meta | None = None
        self.setup: Setup | None = None
        self.final: Final | None = None
        self.harness_error_line: int | None = None
        self.events: list[Any] = []
        self.long_lines: set[int] = set()
        self.unknown = self.extra = self.non_finite = 0
        self.unknown_types: set[str] = set()  # record types met that evalkit does not read
        self.pending: InputError | None = None  # a line cut short: fatal unless it was the last one
        self.pending_reason = ""
        self.pending_line = 0
        self.seen_any = False
        self.last_step = -(2**63)  # the step of the last tool call that had one
        self.back_warned = False

    def step_back(self, lineno: int, step: int) -> None:
        """A tool call at ``lineno`` whose step is below the one before it: said once per file."""
        if self.finding and not self.back_warned:
            self.back_warned = True
            self.finding(
                f"{self.path}:{lineno}: warning: tool_call.step: {step} after step {self.last_step}: calls are "
                "scored in the order of their lines, so calls written out of order change the order, the "
                "approvals and the coverage scored"
            )

    def line(self, lineno: int, line: bytes) -> None:
        if not line.strip():
            return
        if self.pending is not None:
            raise self.pending
        if not self.seen_any and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        self.seen_any = True
        try:
            obj, literals = safe_json.loads_noting_literals(line)
        except JSONProblem as problem:
            error = InputError(self.path, lineno, _not_json(line, problem))
            if problem.truncated and self.meta is not None:
                self.pending, self.pending_reason = error, problem.reason
                self.pending_line = lineno
                return
            raise error from None
        self.record(lineno, line, obj, literals)

    def record(self, lineno: int, line: bytes, obj: Any, literals: bool = True) -> None:
        """One parsed line. ``literals``: the line may hold NaN / Infinity (else only overflows)."""
        path = self.path
        if type(obj) is not dict:
            raise InputError(path, lineno, f"expected a JSON object, got {type(obj).__name__}")
        rtype = obj.get("type")
        if self.meta is None and rtype is None and "ground_truth" in obj:
            raise InputError(
                path, lineno, "a scenario, not a run: pass its file with --scenarios (or name it scenarios.jsonl)"
            )
        if type(rtype) is not str:
            raise InputError(path, lineno, "record has no string 'type' field")
        if self.meta is None and rtype != "meta":
            raise InputError(path, lineno, f"the first record must be 'meta', got {rtype!r}")
        if literals or (self.may_overflow and _maybe_overflow(line)):
            self.non_finite += count_non_finite(obj)
        if rtype == "meta":
            filled = fill_scenario(obj, self.scenarios, self.source, lineno)
            _share_scenario(obj)
            if self.scenarios is not None and not filled:
                warn_if_differs(obj, self.scenarios, path, lineno, self.warn)
        validate = _VALIDATE.get(rtype)
        if validate is None:
            self.unknown += 1
            if self.finding and rtype not in self.unknown_types:
                self.unknown_types.add(rtype)
                said = unread_record(rtype, obj)
                if said:
                    self.finding(f"{path}:{lineno}: warning: {said}")
            return
        record = _validated(self, validate, obj, rtype, lineno)
        if rtype in EVENT_TYPES:
            if self.final is not None or self.harness_error_line is not None:
                if self.final is not None:
                    raise InputError(path, lineno, f"a {rtype!r} record after 'final'")
                raise InputError(
                    path,
                    lineno,
                    f"a {rtype!r} record after the 'harness_error' of line "
                    f"{self.harness_error_line} (a harness error ends the run)",
                )
            if rtype == "harness_error":
                self.harness_error_line = lineno
            elif rtype == "provider_error":
                self.provider_errors += 1
            is_call = rtype == "tool_call"
            long_line = is_call and len(line) > RESULT_MAX_CHARS
            if is_call and record.step is not None:
                if record.step < self.last_step:
                    self.step_back(lineno, record.step)
                self.last_step = record.step
            if self.bundle is not None:
                self.bundle.add(record, long_line)
                if is_call:
                    name = record.name
                    if name in self.approval_tools:
                        self.calls.append(Call.of(record, keep_result=True))
                    else:
                        self.calls.append(Call.of(record) if name in self.command_tools else Call.read(record))
                return
            if long_line:
                self.long_lines.add(len(self.events))
            _share_fields(record)
            self.events.append(record)
            return
        _share_fields(record)
        if rtype == "meta":
            if self.meta is not None:
                raise InputError(path, lineno, "a second 'meta' record")
            self.meta = record
            if self.compact:
                self.bundle = BundleBuilder(record)
                self.command_tools = record.scenario.index.command_tools
                self.approval_tools = record.scenario.index.approval_tools
        elif rtype == "setup":
            self.setup = record
        else:
            if self.final is not None:
                raise InputError(path, lineno, "a second 'final' record")
            if self.harness_error_line is not None and record.reason != "harness_error":
                raise InputError(
                    path,
                    lineno,
                    f"final.reason: {record.reason!r} after the 'harness_error' of "
                    f"line {self.harness_error_line} (expected 'harness_error')",
                )
            self.final = record
            if self.finding and record.success_eval is not None and not _imported(self.meta):
                said = contradiction(record.success_eval)
                if said:
                    self.finding(f"{path}:{lineno}: warning: {said}")

    def finish(self) -> Trajectory:
        if not self.seen_any:
            raise InputError(self.path, None, "empty file: expected a meta record on the first line")
        dropped = self.pending is not None
        if dropped and self.warn:
            self.warn(
                f"{self.path}:{self.pending_line}: warning: dropped a half-written last line ({self.pending_reason})"
            )
        assert self.meta is not None  # the first non-empty line was checked
        # Every record was validated above; validating the event list again (a union of five models)
        # would cost as much as parsing the file.
        # As ``model_construct`` builds it (fields in their order, all set), without its per-field
        # loop: a tenth of the time, paid once per file.
        traj = _new(Trajectory)
        _set(
            traj,
            "__dict__",
            {
                "path": self.path,
                "meta": self.meta,
                "setup": self.setup,
                "events": self.events,
                "final": self.final,
                "unknown_records": self.unknown,
                "extra_fields": self.extra,
                "dropped_last_line": dropped,
                "non_finite_numbers": self.non_finite,
                "long_lines": frozenset(self.long_lines),
                "calls": self.calls if self.bundle is not None else None,
                "bundle": self.bundle.finish(self.final) if self.bundle is not None else None,
                "provider_errors": self.provider_errors,
            },
        )
        _set(traj, "__pydantic_fields_set__", set(_TRAJECTORY_FIELDS))
        _set(traj, "__pydantic_extra__", None)
        _set(traj, "__pydantic_private__", None)
        return traj


def _imported(meta: Meta | None) -> bool:
    """A run an importer wrote: its success_eval follows its source's own success test."""
    versions = meta.versions if meta is not None else None
    return isinstance(versions, dict) and "importer" in versions


def unread_record(rtype: str, obj: dict[str, Any]) -> str | None:
    """Why a record of a type evalkit does not read is most likely one it would: a type that reads
    as a misspelt known one, or a record that carries a tool call's ``name`` and arguments (such a
    call is skipped, so its action reads as never done). None for another harness's own record."""
    guess = difflib.get_close_matches(rtype, sorted(RECORD_TYPES), n=1, cutoff=0.75)
    if not guess and "name" in obj and ("args" in obj or "arguments" in obj or "input" in obj):
        guess = ["tool_call"]
    if not guess:
        return None
    return f'record type "{rtype}" is not one evalkit reads, so its records are skipped (did you mean "{guess[0]}"?)'


def contradiction(success: Any) -> str | None:
    """What a harness's ``success_eval`` says against itself, or None: checks under a key evalkit
    does not read (and none where it reads them), ``all_passed`` true while a check failed, or
    false while every check (one at least) passed. The run's pass is
    ``all_passed`` either way; the end state is the share of checks passed."""
    checks = len(success.final_state) + len(success.ecam_clear_of)
    unread = [k for k, v in (success.__pydantic_extra__ or {}).items() if isinstance(v, (list, dict)) and v]
    if not checks and unread:
        return (
            f"final.success_eval.{unread[0]}: evalkit does not read this key; the checks go in final_state "
            "([{var, op, value, passed}]) and ecam_clear_of, so this run's end state is all_passed alone "
            "(docs/trajectory-format.md)"
        )
    failed = [f"final_state[{i}] ({_check_text(c)})" for i, c in enumerate(success.final_state) if not c.passed]
    failed += [f"ecam_clear_of[{i}] ({c.message})" for i, c in enumerate(success.ecam_clear_of) if not c.clear]
    if success.all_passed and failed:
        more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
        return (
            f"final.success_eval.all_passed is true, but {failed[0]}{more} failed: the run counts as passed "
            "(all_passed decides the pass; the end state is the share of checks passed)"
        )
    if not success.all_passed and checks and not failed:
        return (
            f"final.success_eval.all_passed is false, but {'its one check' if checks == 1 else f'all {checks} checks'} "
            "passed: the run counts as failed (all_passed decides the pass)"
        )
    return None


def _check_text(check: Any) -> str:
    from evalkit.trajectory.values import canonical_json

    value = canonical_json(check.value)
    return f"{check.var} {check.op} {value if len(value) <= 40 else value[:39] + '…'}"


_TRAJECTORY_FIELDS = tuple(Trajectory.model_fields)
_new = object.__new__
_set = object.__setattr__


def parse_lines(
    path: str,
    lines: Iterable[bytes],
    warn: Warn | None = None,
    compact: bool = False,
    may_overflow: bool = True,
    scenarios: ScenarioSet | None = None,
) -> Trajectory:
    """Parse one trajectory given its lines (bytes, with or without their newline). ``compact``:
    read for scoring (see :class:`Trajectory`: no event records kept, the judge bundle built).
    ``may_overflow=False``: the caller found no number in the whole text that could overflow to
    infinity (see :func:`_maybe_overflow`), so no line is searched for one. ``scenarios``: the
    scenario files' scenarios, for a run that names its scenario (``meta.scenario_id``)."""
    builder = _Builder(path, warn, compact, may_overflow, scenarios)
    add, record = builder.line, builder.record
    if not compact:
        for lineno, line in enumerate(lines, 1):
            add(lineno, line)
        return builder.finish()
    # Reading for scoring, the lines after meta are nearly all assistant and tool_call records; they
    # take this loop, which does what ``_Builder.line`` and ``_Builder.record`` do for them (in that
    # order) without their calls; a record that does not validate is described by the builder's
    # _validated, so a bad record reads the same on both paths. Anything else (a blank line, a line
    # jiter refuses, a NaN, another record type, a record out of place) goes through the builder.
    from_json = safe_json.jiter_from_json
    validate_call, validate_assistant = _VALIDATE["tool_call"], _VALIDATE["assistant"]
    calls_append = builder.calls.append
    read_call = Call.read_named
    validated = _validated
    bundle: BundleBuilder | None = None
    command_tools: frozenset[str] = frozenset()
    approval_tools: frozenset[str] = frozenset()
    for lineno, line in enumerate(lines, 1):
        if bundle is None or builder.pending is not None:
            add(lineno, line)
            if builder.bundle is not None and builder.pending is None:
                bundle, command_tools = builder.bundle, builder.command_tools
                approval_tools = builder.approval_tools
            continue
        try:
            obj = from_json(line, catch_duplicate_keys=True, cache_mode="all", allow_inf_nan=False)
        except ValueError:
            add(lineno, line)  # parses it again under the full rules: an error, a NaN, or blank
            if builder.pending is not None:
                bundle = None
            continue
        rtype = obj.get("type") if type(obj) is dict else None
        if rtype == "tool_call":
            validate = validate_call
        elif rtype == "assistant":
            validate = validate_assistant
        else:
            record(lineno, line, obj, False)
            continue
        if builder.final is not None or builder.harness_error_line is not None:
            record(lineno, line, obj, False)  # raises: an event after the end
            continue
        if may_overflow and _maybe_overflow(line):
            builder.non_finite += count_non_finite(obj)
        if rtype == "tool_call" and (values := _call_values(obj)) is not None:
            name, args, is_error, step, result, call_index = values
        elif rtype == "assistant" and (values := _assistant_values(obj)) is not None:
            bundle.add_assistant_values(*values)
            continue
        else:
            try:  # inline, not _validated: a call per record is 1% of this loop's time
                rec = validate(obj)
            except ValidationError:
                validated(builder, validate, obj, rtype, lineno)  # raises the error naming path:line and field
            if rec.__pydantic_extra__:
                builder.extra += len(rec.__pydantic_extra__)
            if rtype == "assistant":
                bundle.add_assistant(rec)
                continue
            name, args, is_error, step = rec.name, rec.args, rec.is_error, rec.step
            result, call_index = rec.result, rec.call_index
        if step is not None:
            if step < builder.last_step:
                builder.step_back(lineno, step)
            builder.last_step = step
        bundle.add_call_values(step, call_index, name, args, is_error, result, len(line) > RESULT_MAX_CHARS)
        if name in approval_tools:
            calls_append(Call(name, args, is_error, step, call_index, result))
        elif name in command_tools:
            calls_append(Call(name, args, is_error, step, call_index))
        else:
            calls_append(read_call(name, is_error))
    return builder.finish()


# A tool_call or assistant record that only has its model's fields, each of a type the model takes
# as it is (strict integers in range, strings, a boolean, an object, floats; anything for the
# fields typed Any), validates to exactly its values: the fast loop uses them without the model
# (a third of the reader's time). Anything else (an extra field, an int where a float is expected,
# a wrong type) is validated by the model, which converts, counts or refuses it.
_CALL_FIELDS = frozenset(ToolCall.model_fields)
_ASSISTANT_FIELDS = frozenset(Assistant.model_fields)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FLOAT_OR_NONE = (float, type(None))
_STR_OR_NONE = (str, type(None))


def _call_values(obj: dict[str, Any]) -> tuple[str, dict[str, Any], bool, int | None, Any, int | None] | None:
    """A plain tool_call's (name, args, is_error, step, result, call_index), or None."""
    get = obj.get
    name, args, is_error = get("name"), get("args"), get("is_error", False)
    step, call_index = get("step"), get("call_index")
    if args is None and "args" not in obj:
        args = {}  # the model's default
    if (
        type(name) is str
        and type(args) is dict
        and type(is_error) is bool
        and (step is None or (type(step) is int and _INT64_MIN <= step <= _INT64_MAX))
        and (call_index is None or (type(call_index) is int and _INT64_MIN <= call_index <= _INT64_MAX))
        and type(get("sim_time_before")) in _FLOAT_OR_NONE
        and type(get("sim_time_after")) in _FLOAT_OR_NONE
        and type(get("wall_ms")) in _FLOAT_OR_NONE
        and obj.keys() <= _CALL_FIELDS
    ):
        return name, args, is_error, step, get("result"), call_index
    return None


def _assistant_values(obj: dict[str, Any]) -> tuple[int | None, str | None, str | None] | None:
    """A plain assistant record's (step, text, stop_reason), or None."""
    get = obj.get
    step, text, stop_reason = get("step"), get("text"), get("stop_reason")
    if (
        (step is None or (type(step) is int and _INT64_MIN <= step <= _INT64_MAX))
        and type(text) in _STR_OR_NONE
        and type(stop_reason) in _STR_OR_NONE
        and obj.keys() <= _ASSISTANT_FIELDS
    ):
        return step, text, stop_reason
    return None


def parse_trajectory(
    path: str, data: bytes, warn: Warn | None = None, compact: bool = False, scenarios: ScenarioSet | None = None
) -> Trajectory:
    """Parse the bytes of one trajectory file. Raises InputError on bad input."""
    return parse_lines(path, data.split(b"\n"), warn, compact, _maybe_overflow(data), scenarios)


# Validated scenarios by their exact JSON. Every scenario is validated once per process, however many
# there are and in whatever order their runs come; the cap is on the JSON they hold (a validated
# scenario with its rules takes about 15 times its JSON in memory: 4 MiB of JSON is some 3,000
# scenarios of the A320 example's size, 60 MB), the oldest dropped first beyond it.
_SCENARIOS: dict[bytes, Scenario] = {}
_SCENARIO_JSON: dict[int, bytes] = {}  # id(scenario) -> its key in _SCENARIOS
_SCENARIO_CACHE_BYTES = 4 << 20
_scenario_bytes = 0


def _share_scenario(meta: dict[str, Any]) -> None:
    """Runs of one scenario embed the same scenario: validate it once and share the object (its
    derived index and bundle part are then computed once too). Keyed by the scenario's exact JSON."""
    global _scenario_bytes
    raw = meta.get("scenario")
    if not isinstance(raw, dict):
        return
    key = to_json(raw)
    scenario = _SCENARIOS.get(key)
    if scenario is None:
        try:
            scenario = Scenario.model_validate(raw)
        except ValidationError:
            return  # validating the meta record reports it, with the field's path
        while _SCENARIOS and _scenario_bytes + len(key) > _SCENARIO_CACHE_BYTES:
            old_key, old = next(iter(_SCENARIOS.items()))
            del _SCENARIOS[old_key]
            _SCENARIO_JSON.pop(id(old), None)
            _scenario_bytes -= len(old_key)
        _SCENARIOS[key] = scenario
        _SCENARIO_JSON[id(scenario)] = key
        _scenario_bytes += len(key)
    meta["scenario"] = scenario


def scenario_json(scenario: Scenario) -> bytes | None:
    """The JSON a run's shared scenario was validated from (None: not one this reader shared)."""
    return _SCENARIO_JSON.get(id(scenario))


def shared_scenario(key: bytes) -> Scenario:
    """The scenario of the JSON ``key`` (as :func:`scenario_json` gives it), validated once."""
    meta = {"scenario": safe_json.loads(key)}
    _share_scenario(meta)
    scenario = meta["scenario"]
    return scenario if isinstance(scenario, Scenario) else Scenario.model_validate(scenario)


def read_trajectory(
    path: str | Path,
    warn: Warn | None = None,
    max_bytes: int | None = None,
    compact: bool = False,
    scenarios: ScenarioSet | Iterable[str | Path] | None = None,
) -> Trajectory:
    """Read one trajectory file (``-`` reads standard input). Only regular files are read, within
    the size limit of :mod:`evalkit.trajectory.input_files`; lines are parsed as they are read.
    ``scenarios``: a ScenarioSet or scenario files, as :func:`evalkit.engines.pipeline.score_files` takes."""
    if scenarios is not None and not isinstance(scenarios, ScenarioSet):
        scenarios = load_scenarios(path_list(scenarios, "scenarios"))
    name = str(path)
    if name == STDIN:
        return parse_trajectory("<stdin>", read_bytes(STDIN, max_bytes), warn, compact, scenarios)
    fh, size = open_regular(name, max_bytes)
    with fh:
        try:
            if size <= _WHOLE_FILE_BYTES:  # read at once: one search for an overflow serves every line
                data = fh.read()
                return parse_lines(name, io.BytesIO(data), warn, compact, _maybe_overflow(data), scenarios)
            return parse_lines(name, fh, warn, compact, scenarios=scenarios)
        except OSError as exc:
            raise InputError(shown_name(name), None, f"cannot read: {exc.strerror or exc}") from None
