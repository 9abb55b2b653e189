"""The judge registry: which judge a `--model` string makes.

Plugins register a factory under the entry-point group `evalkit.judges`; the entry-point name is
the prefix chosen in `--model` (`myjudge:some-model` calls `factory("some-model", **options)`).
A model string whose prefix is not a registered plugin goes to the built-in litellm judge, so
litellm strings with colons (`ollama/llama3:8b`) keep working; `litellm:` forces the built-in.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from evalkit.judges.protocol import Judge, UnknownJudgeError

ENTRY_POINT_GROUP = "evalkit.judges"
LITELLM_ONLY = ("output_mode", "max_input_tokens")  # options a plugin factory is not given

JudgeFactory = Callable[..., Judge]
_REGISTERED: dict[str, JudgeFactory] = {}


def register_judge(prefix: str, factory: JudgeFactory) -> None:
    """Register a judge factory in-process (entry points do the same for installed packages)."""
    _REGISTERED[prefix] = factory


def plugin_names() -> list[str]:
    names = set(_REGISTERED)
    names.update(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(names)


def _plugin(prefix: str) -> JudgeFactory | None:
    if prefix in _REGISTERED:
        return _REGISTERED[prefix]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == prefix:
            return ep.load()
    return None


def make_judge(model: str, **options: Any) -> Judge:
    """Build the judge for a `--model` string (see the module docstring for the prefix rule)."""
    prefix, sep, rest = model.partition(":")
    if sep and "/" not in prefix:
        if prefix == "litellm":
            model = rest
        else:
            factory = _plugin(prefix)
            if factory is not None:
                plugin_options = {k: v for k, v in options.items() if k not in LITELLM_ONLY}
                judge = factory(rest, **plugin_options)
                if not isinstance(judge, Judge):
                    raise UnknownJudgeError(
                        f"judge plugin {prefix!r} returned {type(judge).__name__}, which lacks model/params/annotate"
                    )
                return judge
    if not model:
        raise UnknownJudgeError("empty --model")
    from evalkit.judges.litellm_judge import LiteLLMJudge  # the only place litellm gets imported

    return LiteLLMJudge(model, **options)
