"""The pluggable LLM judge layer of evalkit.

Importing this package is cheap: it never imports litellm (only `judges.litellm_judge` does, and
only when a litellm-backed judge is built). Public entry points:

- `judges.api.judge_cards` / `judges.api.judge_db` / `judges.api.dry_run` — the Python API behind
  `evalkit judge` (see docs/judge.md).
- `judges.protocol` — the `Judge` protocol (`async annotate(bundle, rubric) -> Annotation`) and the
  plugin registry (entry-point group `evalkit.judges`).
- `judges.rubrics.load_rubric` / `annotation_model` — rubric files in prompts/ and their reply schema.
"""
