"""The ``evalkit view`` web app (Starlette + Jinja2): pages rendered on the server, no script.

Pages: ``/runs`` (filter, sort, page; score columns and charts once revealed), ``/runs/{run_id}``
(one run explained, the review form), ``/disagreements`` (the audit's ranked list as a queue:
filters, progress, review next), ``/label`` (label samples, the label-next queue) and ``/compare``
(two runs of a scenario side by side). JSON: ``GET /api/runs``, ``GET /api/runs/{run_id}``,
``GET /api/disagreements``, ``POST /api/queue/next``, ``GET /api/label``, ``POST /api/label/samples``,
``POST /api/label/{sample}/next``, ``POST /api/runs/{run_id}/reviews`` and ``GET /api/session`` (the
CSRF token a script sends back in ``X-CSRF-Token``). A queue's *next* claims the run it serves
(evalkit.db.reviews): the only state a POST changes besides the reviews.

The reviewer is the ``reviewer`` query parameter, else the ``evalkit_reviewer`` cookie (set when a
queue form names one), else ``--reviewer``: two people reviewing through one server each see their
own progress and claims.

Blind by default, pages and JSON alike: without ``reveal=1`` no answer carries a command's class, a
checklist result, a score, a judge value or rationale, a pairing or the audit's ranking
(:func:`evalkit.view.drilldown.blind`, the blind lists and queue of :class:`ViewData`). Every
answer that shows a run's scores records it for the reviewer (:meth:`ViewData.mark_revealed`), so
that their review saved afterwards, by the form or a script, is not blind.

A local server is still reachable by every web page the user opens, so (:class:`LocalOnly`):

- a request whose ``Host`` is not the address the server was bound to is refused (421), which is
  what stops DNS rebinding (an attacker's name resolving to 127.0.0.1);
- beyond loopback (or with ``--token``) every request carries the access token
  (:mod:`evalkit.config.access`): the first one as ``?token=``, answered with an HttpOnly
  SameSite=Strict cookie and a redirect to the same URL without it; none is 401, a wrong one 403;
- a request body is read as a stream and refused (413) past :data:`MAX_BODY`, before it is
  parsed: a declared ``Content-Length`` over the limit is refused before anything is read;
- a POST must carry the process's CSRF token (the form's hidden field, or the ``X-CSRF-Token``
  header), and one whose ``Origin`` is another site (or ``null``: a sandboxed frame, a file) is
  refused (the referrer policy is ``same-origin``: ``no-referrer`` would make the browser send
  ``Origin: null`` with the page's own form); the JSON POST must be
  ``application/json``, which no cross-site form can send;
- every response has a strict Content-Security-Policy: nothing loads from anywhere, styles only
  with the response's nonce, scripts only with it (the pages have none), no framing;
- text from runs and judges is escaped everywhere: Jinja2 autoescapes, and every value printed
  passes :func:`shown` first, which shows control and bidi characters escaped as the terminal
  and the report do (:func:`evalkit.present.safe.sanitize`; line breaks are kept).

The database is opened read-only; the review tables are the only thing written
(:class:`evalkit.db.reviews.ReviewTables`). Requests are served one at a time on the event loop's
thread, which owns the SQLite connections.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.requests import Request, cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from evalkit.config.access import TOKEN_COOKIE, presented_token, token_ok
from evalkit.db.reviews import VERDICTS
from evalkit.errors import InputError
from evalkit.present.safe import sanitize
from evalkit.trajectory.safe_json import loads
from evalkit.view import drilldown
from evalkit.view.queries import QUEUE_FILTERS, NotFound, ReviewError, ViewData, number

CSP = (
    "default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_BODY = 1 << 20  # a review (JSON or form) is a few KiB; its note at most 10,000 characters
MAX_QUEUE_PAGE = 1000  # per_page of /api/disagreements: a larger one is clamped to it
REVIEWER_COOKIE = "evalkit_reviewer"
# the verdicts by the first letter a focused <select> jumps to: the pages hold no script
SHORTCUTS = (
    ("j", "judge_right"),
    ("m", "mechanical_right"),
    ("b", "both_wrong"),
    ("g", "ground_truth_wrong"),
    ("u", "unclear"),
)


def shown(value: Any) -> Any:
    """What a template prints for a value: None as nothing, text with every control or bidi
    character shown escaped (line breaks kept), markup (already escaped) as it is."""
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return "\n".join(sanitize(part) for part in value.split("\n"))
    return value


def allowed_hosts(host: str, port: int, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The ``Host`` header values accepted: the bound address (and the loopback names when it is
    a loopback or wildcard address) with the port, plus ``extra`` names."""
    names = {host.lower(), *(h.lower() for h in extra)}
    if host in LOOPBACK or host in ("0.0.0.0", "::"):
        names |= set(LOOPBACK)
    names -= {"0.0.0.0", "::"}
    return frozenset(f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names)


class LocalOnly:
    """ASGI middleware: the Host check, the access token (when ``token`` is set), the cross-site
    POST check and the security headers."""

    def __init__(self, app, hosts: frozenset[str], token: str | None = None):
        self.app = app
        self.hosts = hosts
        self.origins = frozenset(f"http://{h}" for h in hosts)
        self.token = token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return await _plain(
                421,
                "evalkit view: this server answers only to its own address (Host "
                f"{sanitize(host) or 'missing'} refused)",
            )(scope, receive, send)
        if self.token is not None:
            refused = self._access(scope, headers)
            if refused is not None:
                return await refused(scope, receive, send)
        if scope["method"] not in ("GET", "HEAD"):
            origin = headers.get("origin")
            if (origin is not None and origin not in self.origins) or headers.get("sec-fetch-site") == "cross-site":
                return await _plain(403, "evalkit view: cross-site request refused")(scope, receive, send)
        nonce = secrets.token_urlsafe(18)
        scope.setdefault("state", {})["nonce"] = nonce

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [
                    *message.get("headers", []),
                    *SECURITY_HEADERS,
                    (b"content-security-policy", CSP.format(nonce=nonce).encode()),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _access(self, scope, headers: dict[str, str]) -> Response | None:
        """None when the request carries the access token; else the answer: 401 without one, 403
        with a wrong one, and for a GET with the right ``?token=`` a redirect to the same URL
        without it that sets the token's cookie."""
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given:
            if len(given) > 1 or not token_ok(self.token, given[0]):
                return _plain(403, "evalkit view: wrong access token")
            if scope["method"] not in ("GET", "HEAD"):
                return None
            path = "/" + scope.get("raw_path", scope["path"].encode()).decode("latin-1").lstrip("/\\")
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            response = RedirectResponse(path + ("?" + rest if rest else ""), status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/")
            response.raw_headers.extend(SECURITY_HEADERS)
            return response
        presented = presented_token(headers, "", cookie_parser(headers.get("cookie", "")))
        if presented is None:
            return _plain(
                401,
                "evalkit view: this server needs its access token: open the URL it printed at start "
                "(http://HOST:PORT/?token=...)",
            )
        if not token_ok(self.token, presented):
            return _plain(403, "evalkit view: wrong access token")
        return None


def _plain(status: int, text: str) -> Response:
    return PlainTextResponse(
        text + "\n",
        status_code=status,
        headers=dict((k.decode(), v.decode()) for k, v in SECURITY_HEADERS)
        | {"content-security-policy": "default-src 'none'"},
    )


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("evalkit.view", "templates"),
        autoescape=True,
        finalize=shown,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["runurl"] = lambda run_id: "/runs/" + quote(str(run_id), safe="")
    env.filters["j"] = lambda v: json.dumps(v, ensure_ascii=False, indent=1, sort_keys=False)
    env.filters["label"] = lambda v: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    env.filters["num"] = _num
    env.filters["cite"] = lambda text, steps: Markup(drilldown.link_citations(str(escape(shown(text or ""))), steps))
    return env


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value == value else "n/a"
    return str(value)


def create_app(
    data: ViewData,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    reviewer: str | None = None,
    extra_hosts: tuple[str, ...] = (),
    csrf_token: str | None = None,
    access_token: str | None = None,
) -> Any:
    """The ASGI app over ``data`` (opened on startup, in the serving thread, and closed on
    shutdown), accepting requests addressed to ``host:port``, and only those carrying
    ``access_token`` when it is set."""
    view = _View(data, reviewer, csrf_token)
    app = Starlette(routes=view.routes(), lifespan=view.lifespan)
    return LocalOnly(app, allowed_hosts(host, port, extra_hosts), access_token)


class _View:
    """The pages and the JSON of the view over one ViewData: the handlers of :func:`create_app`'s
    routes, with what they share (the data, the templates, the form token, the reviewer named at
    start)."""

    def __init__(self, data: ViewData, reviewer: str | None, csrf_token: str | None) -> None:
        self.data = data
        self.reviewer = reviewer
        self.env = _environment()
        self.token = csrf_token or secrets.token_urlsafe(32)
        self.db_name = Path(data.path).name

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        revealed = context.pop("revealed", False)
        context.setdefault("title", name.removesuffix(".html"))
        html = self.env.get_template(name).render(
            nonce=request.state.nonce,
            db_name=self.db_name,
            revealed=revealed,
            reveal_qs="?reveal=1" if revealed else "",
            qs=lambda **changes: _qs(request, changes),
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def error_page(self, request: Request, status: int, heading: str, message: str) -> HTMLResponse:
        return self.page(request, "error.html", status, heading=heading, message=message, title=heading)

    def refreshed(self) -> None:
        self.data.refresh()

    def is_revealed(self, request: Request) -> bool:
        return request.query_params.get("reveal") == "1"

    # -- pages ------------------------------------------------------------------------------
    def listed_runs(self, request: Request) -> dict[str, Any]:
        """A page of the Runs list, blind unless ``reveal=1`` (ValueError for a bad parameter); the
        runs of a revealed page are recorded as shown to the reviewer."""
        revealed = self.is_revealed(request)
        params = _params(request)
        if revealed:  # the disagreements column: wait for the list (the blind page never does)
            self.data.ensure_disagreements()
        result = self.data.list_runs(params, blind=not revealed)
        if revealed:
            self.data.mark_revealed((r["run_id"] for r in result["runs"]), self.who_is(request))
        return result

    async def runs_page(self, request: Request) -> Response:
        self.refreshed()
        revealed = self.is_revealed(request)
        try:
            result = self.listed_runs(request)
            charts = self.data.charts(_params(request)) if revealed else None
        except ValueError as exc:
            return self.error_page(request, 400, "Bad filter", str(exc))
        return self.page(
            request, "runs.html", page=result, facets=self.data.facets(), title="Runs", revealed=revealed, charts=charts
        )

    async def run_page(self, request: Request) -> Response:
        self.refreshed()
        run_id = request.path_params["run_id"]
        try:
            run = self.data.run(run_id, _start(request))
        except NotFound:
            return self.error_page(request, 404, "No such run", f"no run {run_id!r} in {self.db_name}")
        except ValueError as exc:
            return self.error_page(request, 400, "Bad parameter", str(exc))
        return self._run_page(request, run, self.who_is(request))

    def shown_run(self, request: Request, run: dict[str, Any], who: str | None) -> tuple[dict[str, Any], dict | None]:
        """The run as ``who`` may see it, and their current review of it. The scores are shown when
        the request asks (``reveal=1``, or ``saved=1`` after a save), when ``who`` has reviewed the
        run, or when they were shown to ``who`` before; showing them is recorded, so that a review
        ``who`` saves afterwards is not blind, whether the page or a script shows and saves it.
        Else the run is :func:`evalkit.view.drilldown.blind`."""
        current = next((r for r in run["reviews"] if r["current"] and r["reviewer"] == who), None) if who else None
        revealed = (
            self.is_revealed(request)
            or request.query_params.get("saved") == "1"
            or current is not None
            or self.data.revealed_to(run["run_id"], who)
        )
        if not revealed:
            return drilldown.blind(run), current
        self.data.mark_revealed([run["run_id"]], who)
        return dict(run, revealed=True), current

    def who_is(self, request: Request, form: dict[str, str] | None = None) -> str | None:
        named = (form or {}).get("reviewer") or request.query_params.get("reviewer")
        named = named or unquote(request.cookies.get(REVIEWER_COOKIE) or "") or self.reviewer
        return named.strip()[:100] if named and named.strip() else None

    def remember(self, response: Response, who: str | None) -> Response:
        if who:
            response.set_cookie(REVIEWER_COOKIE, quote(who, safe=""), httponly=True, samesite="strict", path="/")
        return response

    def queue_context(self, source: Any) -> dict[str, Any]:
        """Where a run page was served from (its query or its form's hidden fields): the queue,
        the design a review from it records, the sample, the disagreement queue's filters."""
        queue = source.get("queue") or ""
        if queue == "label" and source.get("sample"):
            try:
                design = self.data.sample(str(source["sample"]))["design"]
            except NotFound:
                return {"queue": "", "design": "by_hand", "sample": "", "filters": {}}
            return {"queue": "label", "design": design, "sample": str(source["sample"]), "filters": {}}
        if queue == "disagreement":
            filters = {k: str(source.get("qf." + k) or source.get(k) or "") for k in QUEUE_FILTERS}
            ranked = source.get("ranked") == "1"  # served from the revealed queue, in the audit's order
            return {
                "queue": "disagreement",
                "design": "disagreement",
                "sample": "",
                "filters": filters,
                "ranked": ranked,
            }
        return {"queue": "", "design": "by_hand", "sample": "", "filters": {}}

    def queue_qs(self, ctx: dict[str, Any]) -> dict[str, str]:
        if ctx["queue"] == "label":
            return {"queue": "label", "sample": ctx["sample"]}
        if ctx["queue"] == "disagreement":
            ranked = {"ranked": "1", "reveal": "1"} if ctx["ranked"] else {}
            return {"queue": "disagreement", **{k: v for k, v in ctx["filters"].items() if v}, **ranked}
        return {}

    def _run_page(
        self, request: Request, run: dict[str, Any], who: str | None, error: str | None = None, status: int = 200
    ) -> HTMLResponse:
        ctx = self.queue_context(request.query_params)
        run, current = self.shown_run(request, run, who)
        saved = request.query_params.get("saved") == "1"
        revealed = run["revealed"]
        pairings = sorted({d["pairing"] for d in run["disagreements"]}, key=run["pairings"].index) if revealed else []
        return self.page(
            request,
            "run.html",
            status,
            run=run,
            title=run["run_id"],
            revealed=revealed,
            saved=saved,
            saved_blind=request.query_params.get("blind") == "1",
            csrf=self.token,
            reviewer=who,
            current=current if revealed else None,
            verdicts=VERDICTS,
            verdict_pairings=pairings,
            error=error,
            steps=drilldown.run_steps(run["transcript"]),
            ctx=ctx,
            shortcuts=SHORTCUTS,
        )

    async def review_form(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        body = {
            "reviewer": form.get("reviewer", ""),
            "ratings": {k.removeprefix("rating."): v for k, v in form.items() if k.startswith("rating.")},
            "verdicts": {k.removeprefix("verdict."): v for k, v in form.items() if k.startswith("verdict.")},
            "note": form.get("note", ""),
            "blind": form.get("blind") != "0",
        }
        ctx = self.queue_context(form)
        body |= {"design": ctx["design"], "sample": ctx["sample"] or None}
        try:
            stored = self.data.add_review(run_id, body, self.reviewer)
        except NotFound:
            return self.error_page(request, 404, "No such run", f"no run {run_id!r} in {self.db_name}")
        except ReviewError as exc:
            self.refreshed()
            return self._run_page(
                request, self.data.run(run_id), self.who_is(request, form), error=str(exc), status=400
            )
        except InputError as exc:
            return self.error_page(request, 500, "Cannot save the review", str(exc))
        if form.get("then") == "next" and ctx["queue"]:
            return self.remember(self.serve_next(ctx, stored["reviewer"]), stored["reviewer"])
        target = (
            "/runs/"
            + quote(run_id, safe="")
            + "?"
            + urlencode(
                {
                    "saved": "1",
                    "blind": "1" if stored["blind"] else "0",
                    "reviewer": stored["reviewer"],
                    **self.queue_qs(ctx),
                }
            )
        )
        return self.remember(RedirectResponse(target, status_code=303), stored["reviewer"])

    def serve_next(self, ctx: dict[str, Any], who: str) -> Response:
        """Claim the queue's next run for ``who`` and open it; back to the queue when none is left."""
        if ctx["queue"] == "label":
            run_id = self.data.next_label(ctx["sample"], who)
            back = "/label?" + urlencode({"done": ctx["sample"], "reviewer": who})
        else:
            run_id = self.data.next_disagreement(ctx["filters"], who, ranked=ctx["ranked"])
            shown = {k: v for k, v in ctx["filters"].items() if v} | ({"reveal": "1"} if ctx["ranked"] else {})
            back = "/disagreements?" + urlencode({**shown, "done": "1"})
        if run_id is None:
            return RedirectResponse(back, status_code=303)
        return RedirectResponse(
            "/runs/" + quote(run_id, safe="") + "?" + urlencode({"reviewer": who, **self.queue_qs(ctx)}),
            status_code=303,
        )

    async def checked_form(self, request: Request) -> dict[str, str] | Response:
        try:
            form = await _form(request)
        except BodyRefused as exc:
            return self.error_page(request, exc.status, "Refused", str(exc))
        if form is None or not hmac.compare_digest(form.get("csrf", ""), self.token):
            return self.error_page(
                request, 403, "Refused", "the form's CSRF token is missing or wrong: reload the page"
            )
        return form

    async def queue_next(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        self.refreshed()
        who = self.who_is(request, form)
        if not who:
            return self.error_page(request, 400, "Who are you?", "reviewer: give your name to take runs from a queue")
        ctx = self.queue_context(form)
        if not ctx["queue"]:
            return self.error_page(request, 400, "Bad queue", "queue: disagreement or label (with its sample)")
        try:
            if ctx["queue"] == "disagreement":
                ctx["filters"] = self.data.queue_filters(ctx["filters"], blind=not ctx["ranked"])
            return self.remember(self.serve_next(ctx, who), who)
        except ValueError as exc:
            return self.error_page(request, 400, "Bad filter", str(exc))

    async def label_page(self, request: Request) -> Response:
        self.refreshed()
        return self.page(
            request,
            "label.html",
            samples=self.data.samples(),
            csrf=self.token,
            reviewer=self.who_is(request),
            done=request.query_params.get("done"),
            facets=self.data.facets(),
            title="Label next",
        )

    async def new_sample(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        self.refreshed()
        try:
            self.data.create_sample(form, self.who_is(request, form))
        except ValueError as exc:
            return self.error_page(request, 400, "Bad sample", str(exc))
        return RedirectResponse("/label", status_code=303)

    async def compare_page(self, request: Request) -> Response:
        self.refreshed()
        try:
            params = _params(request)
            a, b = params.get("a") or "", params.get("b") or ""
            if not a or not b:
                raise ValueError("a and b: the two runs to compare (run ids)")
            if not self.is_revealed(request):  # the two runs' classes and scores: shown only when asked
                for run_id in (a, b):
                    if not self.data.has_run(run_id):
                        raise NotFound(run_id)
                return self.page(request, "compare.html", cmp=None, a=a, b=b, title="Side by side")
            result = self.data.compare(a, b)
        except NotFound as exc:
            return self.error_page(request, 404, "No such run", f"no run {str(exc)!r} in {self.db_name}")
        except ValueError as exc:
            return self.error_page(request, 400, "Bad parameter", str(exc))
        self.data.mark_revealed([a, b], self.who_is(request))
        return self.page(request, "compare.html", cmp=result, title="Side by side", revealed=True)

    def queue_page(self, request: Request, per_page: int) -> dict[str, Any]:
        """A page of the disagreement queue, blind unless ``reveal=1`` (ValueError for a bad
        parameter); the runs of a revealed page are recorded as shown to the reviewer."""
        who, revealed = self.who_is(request), self.is_revealed(request)
        filters = self.data.queue_filters(_params(request), blind=not revealed)
        page_no = _int_param(request, "page", 1, 1)
        result = self.data.disagreements(page_no, per_page, filters=filters, reviewer=who, blind=not revealed)
        if revealed:
            self.data.mark_revealed({d["run_id"] for d in result["disagreements"]}, who)
        return result

    async def disagreements_page(self, request: Request) -> Response:
        self.refreshed()
        who = self.who_is(request)
        try:
            result = self.queue_page(request, 100)
        except ValueError as exc:
            return self.error_page(request, 400, "Bad filter", str(exc))
        return self.page(
            request,
            "disagreements.html",
            page=result,
            title="Disagreements",
            revealed=self.is_revealed(request),
            csrf=self.token,
            reviewer=who,
            pairings=[p.name for p in self.data.pairings],
            dimensions=sorted({p.judge_dimension for p in self.data.pairings}),
            facets=self.data.facets(),
            done=request.query_params.get("done") == "1",
        )

    # -- JSON -------------------------------------------------------------------------------
    async def api_runs(self, request: Request) -> Response:
        self.refreshed()
        try:
            return JSONResponse(self.listed_runs(request))
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def api_run(self, request: Request) -> Response:
        self.refreshed()
        run_id = request.path_params["run_id"]
        try:
            return JSONResponse(
                self.shown_run(request, self.data.run(run_id, _start(request)), self.who_is(request))[0]
            )
        except NotFound:
            return JSONResponse({"error": f"no run {run_id!r}"}, status_code=404)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def api_disagreements(self, request: Request) -> Response:
        self.refreshed()
        try:
            return JSONResponse(self.queue_page(request, min(_int_param(request, "per_page", 100, 1), MAX_QUEUE_PAGE)))
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def json_body(self, request: Request) -> dict[str, Any] | Response:
        """The checked JSON body of a POST (CSRF header, type, size, an object), or the error answer."""
        if not hmac.compare_digest(request.headers.get("x-csrf-token", ""), self.token):
            return JSONResponse({"error": "missing or wrong X-CSRF-Token (GET /api/session gives it)"}, status_code=403)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "the body must be application/json"}, status_code=415)
        try:
            body = loads(await read_body(request))
        except BodyRefused as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        except ValueError as exc:
            return JSONResponse({"error": f"the body is not JSON ({exc})"}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        return body

    async def api_next(self, request: Request) -> Response:
        """``{"reviewer", ...filters}`` for the disagreement queue, or a label sample's next (path)."""
        body = await self.json_body(request)
        if isinstance(body, Response):
            return body
        self.refreshed()
        who = str(body.get("reviewer") or self.who_is(request) or "").strip()[:100]
        if not who:
            return JSONResponse({"error": "reviewer: a name is required"}, status_code=400)
        sample = request.path_params.get("sample")
        try:
            if sample is not None:
                run_id = self.data.next_label(sample, who)
                return JSONResponse({"run_id": run_id, "design": self.data.sample(sample)["design"], "sample": sample})
            ranked = body.get("reveal") is True  # the audit's order, which tells the verdicts
            filters = self.data.queue_filters({k: str(body.get(k) or "") for k in QUEUE_FILTERS}, blind=not ranked)
            run_id = self.data.next_disagreement(filters, who, ranked=ranked)
            return JSONResponse({"run_id": run_id, "design": "disagreement"})
        except NotFound:
            return JSONResponse({"error": f"no label sample {sample!r}"}, status_code=404)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def api_label(self, request: Request) -> Response:
        self.refreshed()
        return JSONResponse({"samples": self.data.samples()})

    async def api_new_sample(self, request: Request) -> Response:
        body = await self.json_body(request)
        if isinstance(body, Response):
            return body
        self.refreshed()
        try:
            return JSONResponse(self.data.create_sample(body, self.who_is(request)), status_code=201)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def api_session(self, request: Request) -> Response:
        # readable by this origin only: no CORS header, and the Host check stops rebinding
        return JSONResponse({"csrf_token": self.token, "reviewer": self.reviewer})

    async def api_review(self, request: Request) -> Response:
        body = await self.json_body(request)
        if isinstance(body, Response):
            return body
        run_id = request.path_params["run_id"]
        try:
            return JSONResponse(self.data.add_review(run_id, body, self.reviewer), status_code=201)
        except NotFound:
            return JSONResponse({"error": f"no run {run_id!r}"}, status_code=404)
        except ReviewError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except InputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=500)

    async def home(self, request: Request) -> Response:
        return RedirectResponse("/runs", status_code=303)

    async def no_icon(self, request: Request) -> Response:
        return Response(status_code=204)

    @contextlib.asynccontextmanager
    async def lifespan(self, app):
        self.data.open()
        try:
            yield
        finally:
            self.data.close()

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home),
            Route("/favicon.ico", self.no_icon),
            Route("/runs", self.runs_page),
            Route("/runs/{run_id:path}/reviews", self.review_form, methods=["POST"]),
            Route("/runs/{run_id:path}", self.run_page),
            Route("/disagreements", self.disagreements_page),
            Route("/queue/next", self.queue_next, methods=["POST"]),
            Route("/label", self.label_page),
            Route("/label/samples", self.new_sample, methods=["POST"]),
            Route("/compare", self.compare_page),
            Route("/api/queue/next", self.api_next, methods=["POST"]),
            Route("/api/label", self.api_label),
            Route("/api/label/samples", self.api_new_sample, methods=["POST"]),
            Route("/api/label/{sample}/next", self.api_next, methods=["POST"]),
            Route("/api/session", self.api_session),
            Route("/api/runs", self.api_runs),
            Route("/api/runs/{run_id:path}/reviews", self.api_review, methods=["POST"]),
            Route("/api/runs/{run_id:path}", self.api_run),
            Route("/api/disagreements", self.api_disagreements),
        ]


class BodyRefused(Exception):
    """A request body refused before it is parsed; ``status`` is 400 or 413, ``str()`` says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The request body, read as a stream and given up as soon as it passes ``limit`` bytes
    (BodyRefused 413); a declared ``Content-Length`` is checked before any byte is read."""
    declared = request.headers.getlist("content-length")
    if declared:
        if len(declared) > 1 or not declared[0].isascii() or not declared[0].strip().isdigit():
            raise BodyRefused(400, "the Content-Length header is not one whole number")
        if int(declared[0].strip()[:20]) > limit:
            raise BodyRefused(413, f"the body is larger than {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyRefused(413, f"the body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _form(request: Request) -> dict[str, str] | None:
    """An ``application/x-www-form-urlencoded`` body (what the review form sends) as a dict of its
    last values; None for any other body (the form has no file field, so no multipart parser).
    BodyRefused for one that is too large."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        return None
    raw = await read_body(request)
    try:
        return dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
    except (UnicodeDecodeError, ValueError):
        return None


def _params(request: Request) -> dict[str, str]:
    """The query's parameters, each given at most once (ValueError naming a repeated one)."""
    params = request.query_params
    for key in params:
        if len(params.getlist(key)) > 1:
            raise ValueError(f"{key} is given more than once: give it once")
    return dict(params)


def _int_param(request: Request, name: str, default: int, low: int) -> int:
    return number(_params(request).get(name), name, default, low)


def _start(request: Request) -> int:
    """``t``: the first transcript entry shown (0 to :data:`evalkit.view.queries.MAX_NUMBER`)."""
    return _int_param(request, "t", 0, 0)


def _qs(request: Request, changes: dict[str, Any]) -> str:
    params = dict(request.query_params)
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = str(value)
    params.pop("saved", None)
    return "?" + urlencode(params) if params else ""
