"""The command-line options an importer declares: ``evalkit import`` builds its flags from them.

An importer lists ``cli_options`` (:class:`ImportOption`); the command adds one flag per distinct
name across all importers (built-in and plugins), and passes to an importer only the options it
declared — any other given flag is a usage error naming the format. Two importers may declare the
same option (``--model``): its kind must agree (else the registry is broken, an error at startup)
and the help texts are joined, each prefixed with its formats. The option names an importer accepts
(``options``) are the names of its ``cli_options`` unless it sets ``options`` itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["text", "float", "file", "choice"]


@dataclass(frozen=True)
class ImportOption:
    """One flag of ``evalkit import``: ``name`` is the keyword passed to ``convert`` (``--outcome-scorer``
    on the command line for ``outcome_scorer``); ``kind`` file is an existing file (not a directory)."""

    name: str
    help: str
    kind: Kind = "text"
    metavar: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass
class MergedOption:
    """An option as the command shows it: declared by one or more formats."""

    option: ImportOption
    formats: list[str] = field(default_factory=list)
    helps: list[tuple[str, str]] = field(default_factory=list)  # (format, help)

    @property
    def help(self) -> str:
        by_text: dict[str, list[str]] = {}
        for fmt, text in self.helps:
            by_text.setdefault(text, []).append(fmt)
        return "; ".join(f"{', '.join(fmts)}: {text}" for text, fmts in by_text.items())


def accepted_names(importer: Any) -> tuple[str, ...] | None:
    """The keyword options ``importer`` understands (None: every option given, a bare-function plugin)."""
    declared = getattr(importer, "cli_options", None)
    if declared is not None:
        return tuple(o.name for o in declared)
    return getattr(importer, "options", None)


def merge(importers: Iterable[tuple[str, Any]]) -> list[MergedOption]:
    """One :class:`MergedOption` per option name, in first-declared order; ``ValueError`` when two
    importers declare one name with different kinds or choices."""
    merged: dict[str, MergedOption] = {}
    for fmt, importer in importers:
        for option in getattr(importer, "cli_options", ()) or ():
            seen = merged.get(option.name)
            if seen is None:
                seen = merged[option.name] = MergedOption(option)
            elif (seen.option.kind, seen.option.choices) != (option.kind, option.choices):
                raise ValueError(
                    f"import option {option.flag}: format {fmt} declares it as {option.kind}, "
                    f"format {seen.formats[0]} as {seen.option.kind}"
                )
            seen.formats.append(fmt)
            seen.helps.append((fmt, option.help))
    return list(merged.values())
