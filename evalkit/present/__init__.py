"""The presentation kit: every table a command prints or a report shows goes through here.

- :mod:`evalkit.present.safe`: the one console sanitizer (control and bidi characters shown
  escaped), the markdown-cell rule and the CSV-cell rule (formula injection neutralised).
- :mod:`evalkit.present.document`: the one document model (sections of headings, paragraphs,
  tables, charts and details; whole pages) that the audit, the probes and the report build, and
  its emitters :mod:`~evalkit.present.to_text`, :mod:`~evalkit.present.to_markdown` and
  :mod:`~evalkit.present.to_html` (SVG charts from :mod:`~evalkit.present.svg`).
- :mod:`evalkit.present.table`: :class:`Table` (headers, rows, notes) with text, markdown, csv and
  html emitters; the row-at-a-time emitters serve streamed output (``evalkit score``).

Standard library only, so a command may import it without slowing ``evalkit --help``.
"""

from evalkit.present.safe import ascii_text, csv_cell, html_text, md_code, md_text, sanitize
from evalkit.present.table import CsvRows, Html, Markdown, MarkdownRows, Table, TextRows, csv_line

__all__ = [
    "ascii_text",
    "CsvRows",
    "Html",
    "Markdown",
    "MarkdownRows",
    "Table",
    "TextRows",
    "csv_cell",
    "csv_line",
    "html_text",
    "md_code",
    "md_text",
    "sanitize",
]
