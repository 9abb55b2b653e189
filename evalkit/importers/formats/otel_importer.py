"""The ``otel`` importer: OTLP JSON files converted by :mod:`evalkit.importers.formats.otel`, or
spans received live over OTLP/HTTP (``--listen``, :mod:`evalkit.importers.formats.otel_receiver`)."""

from __future__ import annotations

import os
from typing import Any

from evalkit.importers import Converted, ImportFormatError
from evalkit.importers.formats.otel import (
    DEFAULT_SCENARIO_ATTR,
    Options,
    Span,
    convert_spans,
    load_results,
    load_scenarios,
    read_requests,
    spans_in,
)
from evalkit.importers.jsonlist import read_text
from evalkit.importers.options import ImportOption


class OtelImporter:
    name = "otel"
    summary = "OpenTelemetry GenAI traces as OTLP JSON (the Collector file exporter's lines, or one document)"
    cli_options = (
        ImportOption("model", "model name for the runs where the input does not record it"),
        ImportOption(
            "scenarios",
            "scenarios (JSON list or JSONL) for the runs, by the id in --scenario-attr",
            "file",
            metavar="FILE",
        ),
        ImportOption(
            "scenario_attr",
            "span or resource attribute naming a run's scenario (default evalkit.scenario_id)",
            metavar="NAME",
        ),
        ImportOption(
            "scenario",
            "the id of the scenario every run gets: from --scenarios, else named for `evalkit score --scenarios`",
            metavar="ID",
        ),
        ImportOption(
            "results",
            "JSONL end states {trace_id | run_id, success} for runs whose spans do not say it",
            "file",
            metavar="FILE",
        ),
    )
    # --listen HOST:PORT is the command's own flag: it replaces FILEs for an importer with listen()

    def options_for(
        self,
        model: str | None = None,
        scenarios: str | None = None,
        scenario_attr: str | None = None,
        results: str | None = None,
        scenario: str | None = None,
    ) -> Options:
        return Options(
            model,
            load_scenarios(scenarios) if scenarios else None,
            scenario_attr or DEFAULT_SCENARIO_ATTR,
            load_results(results) if results else None,
            scenario,
        )

    def convert(self, path: str, **given: Any) -> Converted:
        options = self.options_for(**given)
        spans: list[Span] = []
        for index, request in enumerate(read_requests(path, read_text(path))):
            try:
                spans.extend(spans_in(request))
            except (ValueError, TypeError) as exc:
                raise ImportFormatError(path, None, f"request {index}: {exc}") from None
        if not spans:
            raise ImportFormatError(path, None, "no spans in file")
        return convert_spans(spans, options, os.path.basename(path), path)

    def listen(
        self, address: str, out_dir: str, echo: Any = print, warn: Any = print, token: str | None = None, **given: Any
    ) -> None:
        """Serve ``--listen`` until Ctrl-C (``given``: this format's options, as ``convert`` takes them)."""
        from evalkit.importers.formats.otel_receiver import serve

        options = self.options_for(**{k: v for k, v in given.items() if v is not None})
        serve(address, out_dir, options, echo=echo, warn=warn, token=token)


IMPORTER = OtelImporter()
