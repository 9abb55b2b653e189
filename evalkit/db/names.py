"""Judge names: one rule for every command that takes one (``audit --judge``, ``report --judge``,
``cache clear --model``).

A judge is stored under its full model string (``openai/gpt-4o-mini``, or ``PREFIX:model`` for a
plugin judge). A name given by a person matches a stored judge when it is the full string, or
the part after the provider prefix (``gpt-4o-mini``). A name that matches nothing, or more than
one judge (``gpt-x`` when both ``openai/gpt-x`` and ``azure/gpt-x`` are stored), is an error
that lists the judges present — never an empty result.
"""

from __future__ import annotations

from collections.abc import Iterable

from evalkit.errors import InputError


class JudgeNotStored(InputError):
    """A judge name that does not name exactly one stored judge; ``str()`` lists the judges present."""

    def __init__(
        self, path: str, name: str, present: list[str], matches: list[str] | None = None, imported: bool = False
    ):
        listed = ", ".join(present) if present else "none (run `evalkit judge` first)"
        if matches:
            reason = f"judge {name!r} is ambiguous: it matches {', '.join(matches)}; give the full name"
        elif imported:
            reason = (
                f"{name!r} is an imported rater (evalkit annotations import), not a judge that ran here: its ratings "
                f"are always included, and --judge chooses among the judges that ran: {listed}"
            )
        else:
            reason = f"no judge {name!r} in this database; judges present: {listed}"
        super().__init__(path, None, reason)
        self.name = name
        self.present = present


def short_name(model: str) -> str:
    """The part after the provider prefix: ``openai/gpt-x`` → ``gpt-x``; ``gpt-x`` → ``gpt-x``."""
    return model.split("/", 1)[1] if "/" in model else model


def resolve_judge(name: str, present: Iterable[str], path: str = "", imported: Iterable[str] = ()) -> str:
    """The stored judge ``name`` means (see the module docstring), or raise :class:`JudgeNotStored`;
    ``imported``: the raters of imported judge ratings, which the error names as such."""
    judges = sorted(set(present))
    wanted = name.strip()
    if wanted in judges:
        return wanted
    matches = [j for j in judges if short_name(j) == wanted or j == short_name(wanted)]
    if len(matches) == 1:
        return matches[0]
    raters = set(imported)
    rater = wanted in raters or any(short_name(r) == wanted for r in raters)
    raise JudgeNotStored(path, name, judges, matches if len(matches) > 1 else None, imported=rater and not matches)
