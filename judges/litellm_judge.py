"""The built-in judge: any litellm model, structured output, fail-closed validation, retries, cost.

Retry policy (tenacity is the only retrier; litellm's and the OpenAI SDK's own retries are off):
429 (waiting the server's Retry-After / retry-after-ms when given, capped), 5xx, timeouts and
connection errors are retried with exponential backoff plus jitter, up to `[retry].attempts`
tries. 401/403/400/404 raise `JudgeFatalError` at once (no retry can fix a bad key or a bad
request); a context-window overflow is a per-run `judge_error` instead, since it depends on the run.

An invalid reply (not JSON, or not matching the rubric's schema) is re-asked up to
`[request].reask` times with the validation error; after that the run gets a `judge_error` that
keeps the raw reply. Nothing is ever defaulted or repaired into a score.
"""
from __future__ import annotations

import email.utils
import logging
import os
import random
import time
import warnings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

with warnings.catch_warnings():  # litellm's import trips pydantic warnings about its own types
    warnings.simplefilter("ignore")
    import litellm  # noqa: E402  (after the environment default above, deliberately)
from pydantic import ValidationError  # noqa: E402
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt  # noqa: E402

from judges.config import JudgeConfig, load_config  # noqa: E402
from judges.prompt import reask_message, render_messages  # noqa: E402
from judges.protocol import Annotation, JudgeFatalError  # noqa: E402
from judges.rubrics import Rubric, annotation_model, response_format  # noqa: E402
from judges.redaction import redact, register_secret  # noqa: E402

# litellm imports provider modules lazily, on the first call; their pydantic types warn about
# themselves, which says nothing to an evalkit user
warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning)
litellm.suppress_debug_info = True
litellm.drop_params = False
logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
logging.getLogger("litellm").setLevel(logging.CRITICAL)

_TRANSIENT = (
    litellm.RateLimitError, litellm.InternalServerError, litellm.ServiceUnavailableError,
    litellm.BadGatewayError, litellm.Timeout, litellm.APIConnectionError,
)
_FATAL = (
    litellm.AuthenticationError, litellm.PermissionDeniedError, litellm.BadRequestError,
    litellm.NotFoundError,
)


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


_NO_KEY = ("Missing credentials", "api_key client option must be set")


def is_missing_key(exc: BaseException) -> bool:
    """The client refused to send: no API key (litellm reports it as a 500, which it is not)."""
    return any(marker in str(exc) for marker in _NO_KEY)


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, litellm.ContextWindowExceededError) or is_missing_key(exc):
        return False
    if isinstance(exc, _TRANSIENT):
        return True
    code = _status(exc)
    return isinstance(exc, litellm.APIError) and code is not None and code >= 500


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's requested wait, from retry-after-ms or Retry-After (seconds or HTTP date)."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return max(0.0, float(headers["retry-after-ms"]) / 1000.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class _Wait:
    """Retry-After when the server gave one (capped), else exponential backoff with jitter."""

    def __init__(self, config: JudgeConfig):
        self.config = config

    def __call__(self, state) -> float:
        cfg = self.config
        exc = state.outcome.exception() if state.outcome else None
        after = retry_after_seconds(exc) if exc is not None else None
        if after is not None:
            return min(after, cfg.max_retry_after_s)
        backoff = min(cfg.max_wait_s, cfg.initial_wait_s * 2 ** (state.attempt_number - 1))
        return backoff + random.uniform(0.0, cfg.jitter_s)


def _describe(exc: BaseException) -> str:
    code = _status(exc)
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return redact(f"{type(exc).__name__}{f' ({code})' if code else ''}: {text}")


class LiteLLMJudge:
    def __init__(self, model: str, *, config: JudgeConfig | None = None, api_base: str | None = None,
                 temperature: float | None = None, api_key: str | None = None):
        self.config = config or load_config()
        self.requested_model = model
        self.api_base = api_base
        self._api_key = api_key  # never stored: kept out of `request` and of every row
        if api_key:
            register_secret(api_key)
        provider = None
        try:
            name, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
            self.model = f"{provider}/{name}"
        except Exception:  # litellm cannot place it: keep the string, the call will say why
            self.model = model
        if api_base and provider == "openai" and not api_key and not os.environ.get("OPENAI_API_KEY"):
            # local OpenAI-compatible servers (vLLM, llama.cpp) usually need no key, but the client
            # refuses to send without one; a placeholder is not a secret
            self._api_key = "no-key"
        self._unpriced = False
        self.params = {
            "temperature": self.config.temperature if temperature is None else float(temperature),
            "max_tokens": self.config.max_tokens,
        }

    # -- one HTTP request with transport retries --------------------------------------------
    async def _complete(self, messages: list[dict], fmt: dict, counters: dict):
        kwargs = dict(model=self.requested_model, messages=messages, response_format=fmt,
                      timeout=self.config.timeout_s, num_retries=0, max_retries=0, **self.params)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key

        def before_sleep(state) -> None:
            counters["retries"] += 1

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.attempts), wait=_Wait(self.config),
            retry=retry_if_exception(is_transient), before_sleep=before_sleep, reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                counters["attempts"] += 1
                return await litellm.acompletion(**kwargs)

    def _cost(self, response, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for one response: the configured price if any, else litellm's own figure (computed
        during the call from its price map), else None — unknown, never silently zero."""
        price = self.config.price_for(self.requested_model, self.model)
        if price is not None:
            return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6
        hidden = getattr(response, "_hidden_params", None) or {}
        if hidden.get("response_cost") is not None:
            return float(hidden["response_cost"])
        if self._unpriced:
            return None
        try:
            return float(litellm.completion_cost(completion_response=response, model=self.requested_model))
        except Exception:  # not in litellm's price map and no override: remember, don't ask again
            self._unpriced = True
            return None

    async def annotate(self, bundle: dict, rubric: Rubric) -> Annotation:
        model_cls = annotation_model(rubric)
        fmt = response_format(rubric)
        messages = render_messages(bundle, rubric)
        request = {"model": self.model, "messages": messages, "response_format": fmt,
                   "params": dict(self.params)}
        counters = {"attempts": 0, "retries": 0}
        tokens = [0, 0]
        cost: float | None = 0.0
        raw: str | None = None
        start = time.perf_counter()

        def finish(status: str, **extra) -> Annotation:
            return Annotation(
                status=status, raw_response=redact(raw) if raw is not None else None, request=request,
                prompt_tokens=tokens[0], completion_tokens=tokens[1], cost_usd=cost,
                latency_ms=(time.perf_counter() - start) * 1000.0,
                attempts=counters["attempts"], retries=counters["retries"], **extra)

        for ask in range(self.config.reask + 1):
            try:
                response = await self._complete(messages, fmt, counters)
            except litellm.ContextWindowExceededError as exc:
                return finish("judge_error", error=_describe(exc))
            except Exception as exc:
                if not (isinstance(exc, _FATAL) or is_missing_key(exc)):
                    return finish("judge_error", error=f"after {counters['attempts']} attempts: {_describe(exc)}")
                annotation = finish("judge_error", error=_describe(exc))
                raise JudgeFatalError(f"{self.model}: {_describe(exc)} — not retried; check the model "
                                      "name, --api-base and the API key in the environment",
                                      annotation) from None
            usage = getattr(response, "usage", None)
            p_tok = int(getattr(usage, "prompt_tokens", 0) or 0)
            c_tok = int(getattr(usage, "completion_tokens", 0) or 0)
            tokens[0] += p_tok
            tokens[1] += c_tok
            call_cost = self._cost(response, p_tok, c_tok)
            cost = None if cost is None or call_cost is None else cost + call_cost
            raw = response.choices[0].message.content or ""
            try:
                parsed = model_cls.model_validate_json(raw)
            except ValidationError as exc:
                problem = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()[:8])
                if ask < self.config.reask:
                    messages = messages + [{"role": "assistant", "content": raw}, reask_message(problem)]
                    request["messages"] = messages
                    continue
                return finish("judge_error", error=f"invalid reply after {ask + 1} asks: {problem}")
            return finish("ok", values=parsed.model_dump(mode="json"))
        raise AssertionError("unreachable")
