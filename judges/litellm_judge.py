"""The built-in judge: any litellm model, structured output, fail-closed validation, retries, cost.

Bounds: each attempt, whole (connect, headers and body), ends within `[request].timeout_s`; a
read that never stalls long enough for a per-read timeout (a body trickled a byte at a time, a
chunked body or headers that never end) is cut there too. Requests to OpenAI-compatible servers
(the `openai` provider: OpenAI itself and every --api-base server) go through evalkit's own httpx
client (evalkit/config/outbound.py): a reply over `[request].reply_max_bytes` is refused while it is
read, and a redirect is an error naming both URLs, never followed (the request carries the key
and the transcript). Other providers use litellm's own client, under the same deadline.

Retry policy (tenacity is the only retrier; litellm's and the OpenAI SDK's own retries are off):
429 (waiting the server's Retry-After / retry-after-ms when given, capped), 5xx, timeouts (the
deadline included) and dropped connections are retried with exponential backoff plus jitter, up to `[retry].attempts`
tries. Not retried, because no retry can help: a refused connection (nothing listening), a
request whose shape the server rejected (400/422, or a 5xx whose body is a request-validation
error naming response_format / json_schema / tools: the output mode steps down instead, see
judges/output_modes.py), 401/403/400/404 (`JudgeFatalError`, one actionable line), and a
context-window overflow (a per-run `judge_error`, since it depends on the run).

Output mode `auto`: the mode remembered for (model, api_base) in the database, else litellm's
capability data when it knows the model (and no --api-base points elsewhere), else json_schema.
Until a mode is known to work, calls go one at a time (a probe), so a server that refuses the
first shape costs one extra request, not one per call in flight.

Context: the prompt is counted with litellm's token counter before sending and the bundle is
shrunk to the input limit (judges/context.py); a bundle that cannot fit is never sent.

An invalid reply (not JSON, not matching the rubric's schema, or a rationale over
`[request].rationale_limit_chars`) is re-asked up to `[request].reask` times with the validation
error and the first 2,000 characters of the reply; after that the run gets a `judge_error` that
keeps the raw reply. A reply the server got wrong (no choices, content that is not text, a body
the client cannot read, a reply too large) is a `judge_error` at once, with a one-line reason;
usage figures that are not plausible counts are stored as unknown. Nothing is ever defaulted or
repaired into a score.

Every reply is redacted (judges/redaction.py) before anything reads it, so what is parsed,
stored and cached is one and the same text.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import logging
import os
import random
import socket
import time
import urllib.parse
import warnings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

with warnings.catch_warnings():  # litellm's import trips pydantic warnings about its own types
    warnings.simplefilter("ignore")
    import litellm  # noqa: E402  (after the environment default above, deliberately)
from pydantic import ValidationError  # noqa: E402
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt  # noqa: E402

from evalkit.config import outbound  # noqa: E402
from evalkit.judges import output_modes as modes  # noqa: E402
from evalkit.judges.concurrency import request_slot  # noqa: E402
from evalkit.judges.config import JudgeConfig, load_config  # noqa: E402
from evalkit.judges.context import DoesNotFit, fit  # noqa: E402
from evalkit.judges.prompt import reask_message, render_messages, reply_excerpt  # noqa: E402
from evalkit.judges.prompt_layout import with_cache_marks  # noqa: E402
from evalkit.judges.protocol import Annotation, JudgeFatalError, JudgeSetupError  # noqa: E402
from evalkit.judges.redaction import redact, redact_value, register_secret  # noqa: E402
from evalkit.judges.rubrics import Rubric, annotation_model, response_format  # noqa: E402

# litellm imports provider modules lazily, on the first call; their pydantic types warn about
# themselves, which says nothing to an evalkit user
warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning)
# litellm's file download makes a coroutine it never awaits (its sync path); the content arrives
warnings.filterwarnings("ignore", message=r"coroutine '.*afile_content' was never awaited", category=RuntimeWarning)
# litellm re-serialises a reply whose content is not text; evalkit says so itself, in one line
warnings.filterwarnings("ignore", message=r"Pydantic serializer warnings", category=UserWarning)
litellm.suppress_debug_info = True
litellm.drop_params = False
logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
logging.getLogger("litellm").setLevel(logging.CRITICAL)

# how the judge's requests are named in the errors of evalkit's HTTP client
REQUESTS = outbound.Purpose(
    request="the judge request",
    carries="a judge request carries the API key and the run's transcript",
    address="--api-base",
    limit_setting="[request].reply_max_bytes",
    deadline_setting="[request].timeout_s",
)

_TRANSIENT = (
    litellm.RateLimitError,
    litellm.InternalServerError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
    litellm.Timeout,
    litellm.APIConnectionError,
)
_FATAL = (
    litellm.AuthenticationError,
    litellm.PermissionDeniedError,
    litellm.BadRequestError,
    litellm.NotFoundError,
)


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


_NO_KEY = ("Missing credentials", "api_key client option must be set")


def is_missing_key(exc: BaseException) -> bool:
    """The client refused to send: no API key (litellm reports it as a 500, which it is not)."""
    return any(marker in str(exc) for marker in _NO_KEY)


def connection_refused(exc: BaseException) -> bool:
    """Nothing listens at the address (litellm reports this as a 500 "Connection error")."""
    seen = 0
    while exc is not None and seen < 12:
        if isinstance(exc, ConnectionRefusedError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def error_text(exc: BaseException) -> str:
    """The server's error body as text (what a shape rejection is read from)."""
    body = getattr(exc, "body", None)
    message = getattr(exc, "message", None) or str(exc)
    return f"{message} {json.dumps(body) if isinstance(body, (dict, list)) else body or ''}"


def rejected_parameter(exc: BaseException) -> str | None:
    if isinstance(exc, litellm.ContextWindowExceededError) or connection_refused(exc):
        return None
    if isinstance(exc, litellm.UnsupportedParamsError):  # refused by litellm itself, before sending
        return modes.rejected_parameter(400, error_text(exc))
    return modes.rejected_parameter(_status(exc), error_text(exc))


async def model_ids(client, api_base: str, key: str) -> list[str] | None:
    """The ids an OpenAI-compatible server lists at GET {api_base}/models; None if it cannot say
    (an error, a redirect, a reply that is not a list)."""
    url = api_base.rstrip("/") + "/models"
    try:
        with outbound.watch():
            response = await client.get(url, headers={"Authorization": f"Bearer {key}"})
        if response.status_code != 200:
            return None
        data = json.loads(response.content.decode("utf-8", "replace"))
        entries = data.get("data") if isinstance(data, dict) else None
        if entries is None and isinstance(data, dict):
            entries = data.get("models")  # Ollama's /api/tags shape, served by some proxies
        return sorted({str(e.get("id") or e.get("name")) for e in entries or [] if isinstance(e, dict)})
    except Exception:
        return None


class AttemptTimedOut(Exception):
    """No complete reply within the attempt's deadline (retried, as a timeout is)."""

    def __init__(self, seconds: float):
        super().__init__(
            f"Timeout: no complete reply within {seconds:g} s (connect, headers and body; [request].timeout_s)"
        )


class UnreadableReply(Exception):
    """The server sent a whole 200 reply that is not a chat completion evalkit can read."""


def _one_line(exc: BaseException, limit: int = 160) -> str:
    """An exception's message without the traceback some libraries paste into it, on one line."""
    text = str(getattr(exc, "message", None) or exc).split("Traceback (most recent call last)")[0]
    text = " ".join(text.split()) or type(exc).__name__
    return redact(text if len(text) <= limit else text[: limit - 1] + "…")


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, AttemptTimedOut):
        return True
    if isinstance(exc, (outbound.Redirected, outbound.ReplyRefused, UnreadableReply)):
        return False  # the same request would get the same answer
    if isinstance(exc, litellm.ContextWindowExceededError) or is_missing_key(exc):
        return False
    if connection_refused(exc) or rejected_parameter(exc) is not None:
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


def _server_says(exc: BaseException, limit: int = 160) -> str:
    """The server's own message, one line, short (litellm prefixes its class names)."""
    text = " ".join(str(getattr(exc, "message", None) or exc).split())
    for prefix in ("litellm.", "OpenAIException - ", "Error code: "):
        if prefix in text:
            text = text.split(prefix)[-1]
    return redact(text if len(text) <= limit else text[: limit - 1] + "…")


def cached_tokens(usage) -> int:
    """Prompt tokens the provider read from its prompt cache: OpenAI's
    `prompt_tokens_details.cached_tokens`, or Anthropic's `cache_read_input_tokens` (litellm copies
    it into the first; either is part of `prompt_tokens`). 0 when the reply says nothing."""
    details = getattr(usage, "prompt_tokens_details", None)
    value = details.get("cached_tokens") if isinstance(details, dict) else getattr(details, "cached_tokens", None)
    if value is None:
        value = getattr(usage, "cache_read_input_tokens", None)
    return value or 0


def _key_like(name: str) -> bool:
    return any(part in name for part in ("KEY", "TOKEN", "SECRET", "CREDENTIAL"))


def anthropic_params(body: dict) -> dict:
    """An OpenAI-style request body (a batch line's) as Anthropic Messages parameters, translated
    as litellm translates a live `anthropic/...` call (its handler drops `json_mode`, its own flag)."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    body = dict(body)
    messages, model = body.pop("messages", []), str(body.pop("model", ""))
    config = AnthropicConfig()
    optional = config.map_openai_params(non_default_params=body, optional_params={}, model=model, drop_params=False)
    optional.pop("json_mode", None)
    params = config.transform_request(
        model=model, messages=messages, optional_params=optional, litellm_params={}, headers={}
    )
    params.pop("json_mode", None)
    return params


def anthropic_chat(message: dict) -> dict:
    """An Anthropic message read as litellm reads a live reply: choices and usage, OpenAI-style
    (prompt_tokens counts cache reads and writes, cached_tokens the reads). A reply through
    litellm's `json_tool_call` (response_format on a model without native output) is its content."""
    import httpx
    from litellm.constants import RESPONSE_FORMAT_TOOL_NAME
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    blocks = message.get("content") if isinstance(message.get("content"), list) else []
    json_mode = any(
        isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == RESPONSE_FORMAT_TOOL_NAME
        for b in blocks
    )
    response = AnthropicConfig().transform_parsed_response(
        completion_response=message,
        raw_response=httpx.Response(200, json=message),
        model_response=litellm.ModelResponse(),
        json_mode=json_mode or None,
    )
    data = response.model_dump()
    return {"choices": data.get("choices") or [], "usage": data.get("usage") or {}, "model": message.get("model")}


class LiteLLMJudge:
    def __init__(
        self,
        model: str,
        *,
        config: JudgeConfig | None = None,
        api_base: str | None = None,
        temperature: float | None = None,
        api_key: str | None = None,
        output_mode: str | None = None,
        max_input_tokens: int | None = None,
    ):
        self.config = config or load_config()
        self.requested_model = model
        self.api_base = api_base
        self._api_key = api_key  # never stored: kept out of `request` and of every row
        if api_key:
            register_secret(api_key)
        self.provider = None
        try:
            name, self.provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
            self.model = f"{self.provider}/{name}"
        except Exception:  # litellm cannot place it: keep the string, the call will say why
            self.model = model
        if api_base and self.provider == "openai" and not api_key and not os.environ.get("OPENAI_API_KEY"):
            # local OpenAI-compatible servers (vLLM, llama.cpp) usually need no key, but the client
            # refuses to send without one; a placeholder is not a secret
            self._api_key = "no-key"
        self._unpriced = False
        self.params = {
            "temperature": self.config.temperature if temperature is None else float(temperature),
            "max_tokens": self.config.max_tokens,
        }
        self.mode_setting = modes.check_mode(output_mode or self.config.output_mode)
        info = self._model_info()
        if self.mode_setting != modes.AUTO:
            self.output_mode, self._settled = self.mode_setting, True
        else:
            known = self._capability_mode(info)
            self.output_mode, self._settled = known or modes.MODES[0], known is not None
        limit = max_input_tokens or self.config.max_input_tokens
        self.max_input_tokens: int | None = limit or (info or {}).get("max_input_tokens")
        self.notes: list[str] = []  # output-mode step-downs, for the summary
        self.accepted_mode: str | None = None  # the last mode a response came back in
        self._probe = asyncio.Lock()
        self._http: tuple | None = None  # (event loop, httpx client, OpenAI client): clients are per loop
        self._batch_http: tuple | None = None  # (event loop, httpx client) for Anthropic's batch API

    # -- what is known before the first request ------------------------------------------------
    def _model_info(self) -> dict | None:
        """litellm's data for the model, only when the request goes to that provider's own API."""
        if self.api_base:
            return None
        try:
            return dict(litellm.get_model_info(self.requested_model))
        except Exception:
            return None

    @staticmethod
    def _capability_mode(info: dict | None) -> str | None:
        if not info:
            return None
        if info.get("supports_response_schema"):
            return "json_schema"
        if info.get("supports_function_calling"):
            return "tool"
        return None  # litellm does not say: negotiate

    def start_from(self, remembered: str | None) -> None:
        """Start at the mode that worked last time for (model, api_base) (auto only)."""
        if self.mode_setting == modes.AUTO and remembered in modes.MODES:
            self.output_mode, self._settled = remembered, True

    def _missing_keys(self, api_base: str | None = None) -> list[str]:
        """The API-key variables litellm says the provider needs and the environment lacks."""
        try:
            missing = (
                litellm.validate_environment(model=self.requested_model, api_base=api_base).get("missing_keys") or []
            )
        except Exception:
            return []
        return [name for name in missing if _key_like(name)]

    def preflight(self) -> None:
        """Errors no request can fix, found before sending: no API key, nothing listening."""
        if self.api_base:
            parts = urllib.parse.urlsplit(self.api_base)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            try:
                with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=5.0):
                    pass
            except ConnectionRefusedError:
                raise JudgeSetupError(
                    f"nothing listening at {self.api_base} (connection refused): start the server or fix --api-base"
                ) from None
            except OSError:
                pass  # DNS, a firewall, a timeout: let the request say what it is
        if self._api_key:
            return
        keys = self._missing_keys(self.api_base)
        if keys:
            raise JudgeSetupError(
                f"no API key for {self.model}: set {' or '.join(keys)} in the environment "
                f"(litellm reads it for provider {self.provider or 'unknown'})"
            )

    # -- the HTTP client --------------------------------------------------------------------------
    def _key(self) -> str | None:
        return self._api_key or os.environ.get("OPENAI_API_KEY")

    def _clients(self):
        """(httpx client, OpenAI client) over evalkit's bounded transport, for the running event
        loop; None when litellm builds its own: another provider, or no key (litellm then says
        which is missing)."""
        if self.provider != "openai" or not self._key():
            return None
        loop = asyncio.get_running_loop()
        if self._http is None or self._http[0] is not loop:
            import openai

            http = outbound.http_client(self.config.reply_max_bytes, self.config.timeout_s, REQUESTS)
            base = (
                self.api_base
                or os.environ.get("OPENAI_BASE_URL")
                or os.environ.get("OPENAI_API_BASE")
                or "https://api.openai.com/v1"
            )
            self._http = (
                loop,
                http,
                openai.AsyncOpenAI(
                    api_key=self._key(), base_url=base, max_retries=0, timeout=self.config.timeout_s, http_client=http
                ),
            )
        return self._http[1:]

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop (the API calls this when a run ends)."""
        for held in (self._http, self._batch_http):
            if held is not None and held[0] is asyncio.get_running_loop():
                await held[1].aclose()
        self._http = self._batch_http = None

    async def _attempt(self, kwargs: dict):
        """One request, bounded as a whole by the deadline; what went wrong named in evalkit's terms."""
        with outbound.watch() as seen:
            timer = asyncio.timeout(self.config.timeout_s)
            try:
                async with timer:
                    return await litellm.acompletion(**kwargs)
            except Exception as exc:
                if timer.expired():
                    raise AttemptTimedOut(self.config.timeout_s) from None
                if seen.refused is not None:
                    raise seen.refused from None
                if seen.status == 200 and seen.body is not None:  # sent whole, then not understood
                    raise UnreadableReply(
                        modes.body_problem(seen.body) or f"the server's reply could not be read: {_one_line(exc)}"
                    ) from None
                raise

    # -- one HTTP request with transport retries --------------------------------------------
    async def _complete(self, messages: list[dict], shape: dict, counters: dict):
        kwargs = dict(
            model=self.requested_model,
            messages=messages,
            timeout=self.config.timeout_s,
            num_retries=0,
            max_retries=0,
            **shape,
            **self.params,
        )
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        clients = self._clients()
        if clients is not None:
            kwargs["client"] = clients[1]

        def before_sleep(state) -> None:
            counters["retries"] += 1

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.attempts),
            wait=_Wait(self.config),
            retry=retry_if_exception(is_transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                counters["attempts"] += 1
                async with request_slot():  # the run's adaptive in-flight limit (a 429 lowers it)
                    return await self._attempt(kwargs)

    def _cost(self, response, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float | None:
        """USD for one response: the configured price if any (cached input at its own price), else
        litellm's own figure (computed during the call from its price map, which bills cached input
        as the provider does), else None — unknown, never silently zero."""
        priced = self.config.priced((self.requested_model, self.model), prompt_tokens, cached_tokens, completion_tokens)
        if priced is not None:
            return priced
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

    # -- building the prompt for a mode ---------------------------------------------------------
    def sent_schema(self, rubric: Rubric, mode: str) -> dict | None:
        """The schema a request in `mode` carries (json_object_schema: the grammar-friendly
        narrowing, bounded by the reply budget; see output_modes.grammar_schema)."""
        return modes.sent_schema(
            mode, response_format(rubric), self.params.get("max_tokens"), self.config.rationale_max_chars
        )

    def sent_schema_hashes(self, rubric: Rubric) -> dict[str, str]:
        """sha256 of the schema sent in each mode where it is not the rubric's own: part of the
        cache key (the request differs, and so may the answer)."""
        own = response_format(rubric)["json_schema"]["schema"]
        out = {}
        for mode in modes.MODES:
            sent = self.sent_schema(rubric, mode)
            if sent is not None and sent != own:
                text = json.dumps(sent, separators=(",", ":"), ensure_ascii=False)  # order matters to a grammar
                out[mode] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return out

    def _messages(self, bundle: dict, rubric: Rubric, mode: str) -> list[dict]:
        messages = render_messages(bundle, rubric)
        if modes.schema_in_prompt(mode):
            stated = self.sent_schema(rubric, mode) or response_format(rubric)["json_schema"]["schema"]
            messages.append(modes.schema_instruction(stated))
        if self.provider == "anthropic":  # Anthropic caches only up to a mark; OpenAI-style, by order
            messages = with_cache_marks(messages)
        return messages

    def count_tokens(self, messages: list[dict], shape: dict) -> int:
        extra = [{"role": "system", "content": json.dumps(shape["tools"])}] if "tools" in shape else []
        return int(litellm.token_counter(model=self.requested_model, messages=messages + extra))

    def _fit(self, bundle: dict, rubric: Rubric, mode: str, shape: dict):
        return fit(
            bundle,
            lambda b: self._messages(b, rubric, mode),
            lambda msgs: self.count_tokens(msgs, shape),
            self.max_input_tokens,
        )

    # -- errors a person can act on ---------------------------------------------------------------
    async def _offered_models(self, exc: BaseException) -> list[str] | None:
        """What the server lists, when a 404 says the model is unknown there (the same client as
        the calls: no redirect is followed, so the key goes nowhere else)."""
        clients = self._clients() if isinstance(exc, litellm.NotFoundError) and self.api_base else None
        return await model_ids(clients[0], self.api_base, self._key() or "no-key") if clients else None

    def _fatal_message(self, exc: BaseException, offered: list[str] | None = None) -> str:
        where = self.api_base or self.model
        if connection_refused(exc):
            return f"nothing listening at {where} (connection refused): start the server or fix --api-base"
        if is_missing_key(exc) or isinstance(exc, litellm.AuthenticationError):
            missing = self._missing_keys()
            hint = (
                f"set {' or '.join(missing)}"
                if missing and is_missing_key(exc)
                else "check the API key in the environment"
            )
            return f"{self.model}: {_describe(exc)} — not retried; {hint}"
        if isinstance(exc, litellm.NotFoundError) and self.api_base:
            ids = offered
            name = self.requested_model.split("/", 1)[-1]
            if ids:
                return f"{self.api_base} has no model {name!r}; it offers: {', '.join(ids)} (use --model openai/<id>)"
            return f"{self.api_base} has no model {name!r} (404: {_server_says(exc)})"
        return f"{self.model}: {_describe(exc)} — not retried; check the model name, --api-base and the API key"

    def _over_limit(self, values: dict) -> str | None:
        """The reason a valid reply is still refused: a rationale too long to store."""
        rationale = values.get("rationale")
        limit = self.config.rationale_limit_chars
        if isinstance(rationale, str) and len(rationale) > limit:
            return (
                f"rationale: {len(rationale)} characters, over the limit of {limit} ([request].rationale_limit_chars)"
            )
        return None

    def check_reply(self, model_cls, mode: str, text: str) -> tuple[dict | None, str, str | None]:
        """(values, raw, problem) of a reply's text, live or from a batch: the text is redacted
        here, the one place a reply enters evalkit; values is None when it does not validate."""
        raw = redact(text)
        try:
            values = model_cls.model_validate_json(modes.extract_json(mode, raw)).model_dump(mode="json")
        except ValidationError as exc:
            return (
                None,
                raw,
                "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()[:8]),
            )
        cleaned = redact_value(values)
        if cleaned != values:  # a key written with JSON escapes: store what was parsed
            values, raw = cleaned, json.dumps(cleaned, ensure_ascii=False)
        return values, raw, self._over_limit(values)

    @property
    def settled(self) -> bool:
        """Whether the output mode is known to be accepted (else the next call probes it)."""
        return self._settled

    # -- provider batches (the logic is judges/batch.py; these are its calls to the provider) ------
    def batch_unsupported(self) -> str | None:
        """Why this judge cannot use a provider batch, or None when it can."""
        if self.provider in ("openai", "anthropic"):
            return None
        return (
            f"{self.model}: --batch needs the OpenAI Batch API (openai/<model>, or an OpenAI-compatible "
            "--api-base server) or Anthropic's Message Batches (anthropic/<model>); provider "
            f"{self.provider or 'unknown'} has neither"
        )

    def batches(self):
        """This judge's provider batches (judges/batch.py's BatchProvider): Anthropic's Message
        Batches (judges/anthropic_batch.py; litellm cannot create them) over evalkit's bounded
        client of the running loop, else the OpenAI Batch API through litellm
        (judges/openai_batch.py)."""
        if self.provider == "anthropic":
            from evalkit.judges.anthropic_batch import AnthropicBatches

            def client():
                loop = asyncio.get_running_loop()
                if self._batch_http is None or self._batch_http[0] is not loop:
                    http = outbound.http_client(self.config.reply_max_bytes, self.config.timeout_s, REQUESTS)
                    self._batch_http = (loop, http)
                return self._batch_http[1]

            return AnthropicBatches(
                self.model,
                api_base=self.api_base,
                key=lambda: self._api_key or os.environ.get("ANTHROPIC_API_KEY"),
                client=client,
                timeout_s=self.config.timeout_s,
                to_params=anthropic_params,
                to_chat=anthropic_chat,
                attempts=self.config.attempts,
            )
        from evalkit.judges.openai_batch import OpenAIBatches

        kwargs: dict = {"custom_llm_provider": "openai", "timeout": self.config.timeout_s, "max_retries": 0}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._key():
            kwargs["api_key"] = self._key()
        return OpenAIBatches(litellm, kwargs, self._fatal_message)

    def batch_line(self, bundle: dict, rubric: Rubric) -> tuple[dict, dict, int] | Annotation:
        """(request body, request record, elided events) for a batch file in the current mode,
        built exactly as a live request would be; an Annotation when the bundle cannot fit."""
        mode = self.output_mode
        shape = modes.request_shape(
            mode, response_format(rubric), self.params.get("max_tokens"), self.config.rationale_max_chars
        )
        try:
            fitted = self._fit(bundle, rubric, mode, shape)
        except DoesNotFit as exc:
            return Annotation(
                status="judge_error",
                error=str(exc),
                output_mode=mode,
                request={"model": self.model, "output_mode": mode, "params": dict(self.params)},
            )
        messages = self._messages(fitted.bundle, rubric, mode)
        body = {"model": self.model.split("/", 1)[-1], "messages": messages, **shape, **self.params}
        record = {"model": self.model, "messages": messages, "output_mode": mode, **shape, "params": dict(self.params)}
        return body, record, fitted.elided_events

    def batch_cost(self, usage: dict, prompt: int, completion: int, cached: int) -> float | None:
        """USD for one batch answer at the batch rate: the `[prices]` entry x its batch_factor,
        else litellm's batch prices (`input_cost_per_token_batches`, ...), else unknown."""
        priced = self.config.priced((self.requested_model, self.model), prompt, cached, completion, batch=True)
        if priced is not None:
            return priced
        try:
            info = litellm.get_model_info(self.requested_model)
            if not (info.get("input_cost_per_token_batches") or info.get("input_cost_per_token")):
                return None
            from litellm.cost_calculator import batch_cost_calculator  # not exported as litellm.batch_cost_calculator

            costs = batch_cost_calculator(usage=litellm.Usage(**usage), model=self.requested_model)
            return float(sum(costs))
        except Exception:
            return None

    def input_price(self, batch: bool = False) -> float | None:
        """USD per uncached input token, live or in a batch (for estimates), or None if unknown."""
        priced = self.config.priced((self.requested_model, self.model), 1_000_000, 0, 0, batch=batch)
        if priced is not None:
            return priced / 1e6
        try:
            info = litellm.get_model_info(self.requested_model)
        except Exception:
            return None
        live = info.get("input_cost_per_token")
        if not batch:
            return live
        return info.get("input_cost_per_token_batches") or (None if live is None else live / 2)

    def estimate_batch_cost(self, body: dict) -> float | None:
        """The input cost of one batch request before it is sent (its prompt tokens, uncached)."""
        shape = {k: v for k, v in body.items() if k == "tools"}
        tokens = self.count_tokens(body["messages"], shape)
        return self.batch_cost({"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}, tokens, 0, 0)

    async def annotate(self, bundle: dict, rubric: Rubric) -> Annotation:
        if not self._settled:
            async with self._probe:  # one call at a time until a mode is known to be accepted
                if not self._settled:
                    return await self._annotate(bundle, rubric)
        return await self._annotate(bundle, rubric)

    async def _annotate(self, bundle: dict, rubric: Rubric) -> Annotation:
        model_cls = annotation_model(rubric)
        base_format = response_format(rubric)
        counters = {"attempts": 0, "retries": 0}
        tokens: list[int | None] = [0, 0, 0]  # prompt, completion, cached (of prompt)
        cost: float | None = 0.0
        raw: str | None = None
        start = time.perf_counter()
        mode = self.output_mode
        request: dict = {}
        elided = [0]

        def finish(status: str, **extra) -> Annotation:  # the Annotation redacts the request and error
            return Annotation(
                status=status,
                raw_response=raw,
                request=request,
                prompt_tokens=tokens[0],
                completion_tokens=tokens[1],
                cached_tokens=tokens[2],
                cost_usd=cost,
                latency_ms=(time.perf_counter() - start) * 1000.0,
                attempts=counters["attempts"],
                retries=counters["retries"],
                output_mode=mode,
                elided_events=elided[0],
                **extra,
            )

        def step_down(to: str, note: str) -> None:
            if self.output_mode == mode:  # another call may have stepped already
                self.output_mode = to
                self.notes.append(note)

        ask = 0
        messages: list[dict] = []
        fresh = True  # build the prompt for `mode` (again) before the next request
        for _ in range(len(modes.MODES) + self.config.reask + 1):
            shape = modes.request_shape(
                mode, base_format, self.params.get("max_tokens"), self.config.rationale_max_chars
            )
            if fresh:
                try:
                    fitted = self._fit(bundle, rubric, mode, shape)
                except DoesNotFit as exc:
                    request = {"model": self.model, "output_mode": mode, "params": dict(self.params)}
                    return finish("judge_error", error=str(exc))
                elided[0] = fitted.elided_events
                messages = self._messages(fitted.bundle, rubric, mode)
                fresh = False
            request = {
                "model": self.model,
                "messages": messages,
                "output_mode": mode,
                **shape,
                "params": dict(self.params),
            }
            try:
                response = await self._complete(messages, shape, counters)
            except litellm.ContextWindowExceededError as exc:
                return finish(
                    "judge_error", error=f"{_describe(exc)} (set --max-input-tokens below the server's context size)"
                )
            except AttemptTimedOut as exc:
                return finish("judge_error", error=f"after {counters['attempts']} attempts: {exc}")
            except (outbound.ReplyRefused, UnreadableReply) as exc:
                return finish("judge_error", error=str(exc))
            except outbound.Redirected as exc:
                raise JudgeFatalError(str(exc), finish("judge_error", error=str(exc))) from None
            except Exception as exc:
                refused = rejected_parameter(exc)
                if refused is not None:
                    said = _server_says(exc)
                    after = modes.next_mode(mode, refused, error_text(exc)) if self.mode_setting == modes.AUTO else None
                    head = f"{self.api_base or self.model} refused {refused} in {mode} mode ({said})"
                    if after is None:
                        hint = (
                            "no output mode is left to try"
                            if self.mode_setting == modes.AUTO
                            else f"try --output-mode {modes.next_mode(mode, refused, error_text(exc)) or 'prompt'} "
                            "or --output-mode auto"
                        )
                        raise JudgeFatalError(f"{head}; {hint}", finish("judge_error", error=head)) from None
                    step_down(after, f"{head}; trying {after} mode next")
                    mode, fresh = (self.output_mode if self.output_mode != mode else after), True
                    continue
                if not (isinstance(exc, _FATAL) or is_missing_key(exc) or connection_refused(exc)):
                    return finish("judge_error", error=f"after {counters['attempts']} attempts: {_describe(exc)}")
                raise JudgeFatalError(
                    self._fatal_message(exc, await self._offered_models(exc)),
                    finish("judge_error", error=_describe(exc)),
                ) from None
            self._settled = True
            self.accepted_mode = mode  # the server took this request shape, whatever the model answered
            usage = getattr(response, "usage", None)
            p_tok = modes.token_count(getattr(usage, "prompt_tokens", 0) or 0)
            c_tok = modes.token_count(getattr(usage, "completion_tokens", 0) or 0)
            k_tok = modes.token_count(cached_tokens(usage))
            tokens = [None if t is None or n is None else t + n for t, n in zip(tokens, (p_tok, c_tok, k_tok))]
            call_cost = (
                self._cost(response, p_tok, c_tok, k_tok or 0) if p_tok is not None and c_tok is not None else None
            )
            cost = None if cost is None or call_cost is None else cost + call_cost
            choices = getattr(response, "choices", None) or []
            if not choices:
                return finish("judge_error", error="the reply has no choices")
            message = getattr(choices[0], "message", None)
            shape_fault = modes.content_problem(getattr(message, "content", None))
            if shape_fault is not None:
                return finish("judge_error", error=shape_fault)
            values, raw, problem = self.check_reply(model_cls, mode, modes.reply_text(mode, message))
            if values is None:
                if modes.ignored_format(mode, raw):
                    if self.mode_setting == modes.AUTO:
                        step_down(
                            "prompt",
                            f"{self.api_base or self.model} ignored {mode} mode (a prose reply "
                            "around JSON); trying prompt mode next",
                        )
                        mode, fresh = "prompt", True
                        continue
                    problem += (
                        f" (the reply is prose around JSON: the server seems to ignore {mode} mode; "
                        "try --output-mode prompt)"
                    )
            if problem is not None:
                if ask < self.config.reask:
                    ask += 1
                    messages = messages + [{"role": "assistant", "content": reply_excerpt(raw)}, reask_message(problem)]
                    continue
                return finish("judge_error", error=f"invalid reply after {ask + 1} asks: {problem}")
            return finish("ok", values=values)
        return finish("judge_error", error="no output mode produced a reply")
