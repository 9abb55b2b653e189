"""The pluggable LLM judge layer of evalkit, imported as ``evalkit.judges`` (this folder is
symlinked as evalkit/judges in a checkout and shipped there in the wheel).

Importing this package is cheap: it never imports litellm (only `evalkit.judges.litellm_judge` does, and
only when a litellm-backed judge is built). Public entry points:

- `evalkit.judges.api.judge_cards` / `evalkit.judges.api.judge_db` / `evalkit.judges.api.dry_run` — the
  Python API behind `evalkit judge` (see docs/judge.md).
- `evalkit.judges.protocol` — the `Judge` protocol (`async annotate(bundle, rubric) -> Annotation`) and the
  plugin registry (entry-point group `evalkit.judges`).
- `evalkit.judges.rubrics.load_rubric` / `annotation_model` — rubric files in prompts/ and their reply schema.
"""
