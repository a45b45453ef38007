"""The inspector's web app: Starlette routes rendering Jinja2 templates, no front-end build.

    app = create_app(deps, secret=load_secret(home), temporal_ui="http://127.0.0.1:8233")
    uvicorn.run(app, host="127.0.0.1", port=8234)

Pages (every one but ``/healthz`` and ``/login`` needs a viewer token, see
:mod:`dossier.inspector.auth`):

    /                              the account's conversations
    /conversations/{id}?branch=    branch tree, the branch's human transcript, model runs
    /runs/{id}                     a model run: assembled context beside legacy replay, decisions, Temporal link
    /records/{kind}/{id}?reveal=1  provenance of a memory, artifact, tool call or message, down to the raw bytes
                                   (a secret-class artifact's only when the token may reveal and the URL asks)
    /runs/{id}/why-not?record=     why a record was or was not in a run's context
    /runs/{id}/diff?against=       two runs' assemblies compared
    /what-if?policy=&conversation= a conversation's assemblies replayed under another policy version

Safety: the viewer's account comes from the token only, and every read goes
through :mod:`dossier.inspector.reads` with it. A foreign id and an unknown
one get the same 404 page (which names neither). Templates autoescape
everything; tool text is never marked safe, control characters are shown as
escapes, and a strict Content-Security-Policy forbids scripts altogether.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from activities.deps import GraphDeps
from dossier.inspector import audit_views, reads
from dossier.inspector.auth import COOKIE, TOKEN_TTL_SECONDS, Viewer, verify_viewer
from policy.errors import UnknownPolicyVersionError
from policy.explain import epoch_state
from policy.lines import escape_invisible
from store.errors import NotFoundError

HERE = Path(__file__).parent

CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
       "frame-ancestors 'none'")
"""No scripts at all, styles and images from the inspector only, forms only back to it."""

SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def visible(value: Any) -> str:
    """Text with control, format (zero-width, bidi, tag) and separator characters shown as ``\\xNN`` /
    ``\\uNNNN`` escapes, newlines and tabs kept: :func:`policy.lines.escape_invisible`, as the CLI prints them.

    Applied before autoescaping: the result is still plain text, escaped by the template as any other.
    """
    return escape_invisible("" if value is None else str(value))


def short(value: Any) -> str:
    """The first 8 characters of an id, as the README and the CLI shorten them."""
    return str(value or "")[:8]


def templates() -> Jinja2Templates:
    """The template environment: autoescaping on for every template, undefined names fail loudly in tests."""
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(visible=visible, short=short, pretty=lambda v: json.dumps(v, indent=2, ensure_ascii=False,
                                                                                   default=str, sort_keys=True))
    env.globals.update(record_link=reads.record_link, epoch_state=epoch_state, quote=lambda v: quote(str(v), safe=""))
    return Jinja2Templates(env=env)


class _Headers(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response


Page = Callable[[Request, str], Awaitable[Response]]


@dataclass(frozen=True)
class _Inspector:
    """What every page reads, kept in the app's state by :func:`create_app`."""

    deps: GraphDeps
    secret: bytes
    render: Jinja2Templates
    temporal_ui: str | None
    namespace: str

    def ui_url(self, workflow_id: str | None) -> str | None:
        if not self.temporal_ui or not workflow_id:
            return None
        return (f"{self.temporal_ui}/namespaces/{quote(self.namespace, safe='')}"
                f"/workflows/{quote(workflow_id, safe='')}")


def _state(request: Request) -> _Inspector:
    return request.app.state.inspector


def _page(template: str, request: Request, status_code: int = 200, **context: Any) -> Response:
    state = _state(request)
    return state.render.TemplateResponse(request, template, {"ui_url": state.ui_url, **context},
                                         status_code=status_code)


def _viewer(request: Request) -> Viewer | None:
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else request.cookies.get(COOKIE)
    return verify_viewer(_state(request).secret, token)


def _guarded(handler: Page) -> Callable[[Request], Awaitable[Response]]:
    """A page that needs a viewer (kept in ``request.state.viewer``); a foreign or unknown id is the same 404."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        found = _viewer(request)
        if found is None:
            return _page("unauthorized.html", request, status_code=401)
        request.state.viewer = found
        account = found.account_id
        try:
            return await handler(request, account)
        except NotFoundError:
            return _page("not_found.html", request, status_code=404, account=account)

    return endpoint


async def health(request: Request) -> Response:
    return PlainTextResponse("ok")


async def login(request: Request) -> Response:
    token = request.query_params.get("token")
    if verify_viewer(_state(request).secret, token) is None:
        return _page("unauthorized.html", request, status_code=401)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, token or "", max_age=TOKEN_TTL_SECONDS, httponly=True, samesite="strict",
                        path="/")
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


@_guarded
async def home(request: Request, account: str) -> Response:
    return _page("conversations.html", request, account=account,
                 conversations=await reads.conversation_list(_state(request).deps, account))


@_guarded
async def conversation(request: Request, account: str) -> Response:
    view = await reads.conversation_view(_state(request).deps, account, request.path_params["conversation_id"],
                                         request.query_params.get("branch"))
    return _page("conversation.html", request, account=account, view=view)


@_guarded
async def run(request: Request, account: str) -> Response:
    # What the model saw may hold secret-class output: only for a viewer whose token may reveal, when asked.
    reveal = request.state.viewer.reveal and request.query_params.get("reveal") == "1"
    view = await reads.run_view(_state(request).deps, account, request.path_params["model_run_id"], reveal=reveal)
    return _page("run.html", request, account=account, view=view)


@_guarded
async def record(request: Request, account: str) -> Response:
    # Secret-class raw bytes: only for a viewer whose token may reveal, and only when asked (logged).
    can_reveal = request.state.viewer.reveal
    reveal = can_reveal and request.query_params.get("reveal") == "1"
    found = await reads.provenance(_state(request).deps, account, request.path_params["kind"],
                                   request.path_params["record_id"], reveal=reveal)
    return _page("record.html", request, account=account, found=found, raw_limit=reads.RAW_SHOWN_BYTES,
                 can_reveal=can_reveal)


@_guarded
async def why_not(request: Request, account: str) -> Response:
    run_id = reads.check_uuid(request.path_params["model_run_id"], "model_run")
    ref = request.query_params.get("record", "").strip()
    answer = await audit_views.why_not(_state(request).deps, account, ref, run_id) if ref else None
    return _page("why_not.html", request, account=account, run_id=run_id, ref=ref, answer=answer)


@_guarded
async def diff(request: Request, account: str) -> Response:
    run_id = reads.check_uuid(request.path_params["model_run_id"], "model_run")
    against = request.query_params.get("against") or None
    if against is not None:
        against = reads.check_uuid(against, "model_run")
    try:
        answer = await audit_views.diff(_state(request).deps, account, run_id, against)
    except NotFoundError:
        if against is not None or not await reads.owns_assembly(_state(request).deps, account, run_id):
            raise  # a foreign or unknown run: the same 404 as everywhere
        answer = None  # the viewer's own run, with no previous call to compare with
    return _page("diff.html", request, account=account, run_id=run_id, against=against, answer=answer)


@_guarded
async def what_if(request: Request, account: str) -> Response:
    policy = request.query_params.get("policy", "").strip()
    conversation_id = request.query_params.get("conversation") or None
    if conversation_id is not None:
        conversation_id = reads.check_uuid(conversation_id, "conversation")
    answer, error = None, None
    if policy:
        try:
            answer = await audit_views.what_if(_state(request).deps, account, policy, conversation_id)
        except UnknownPolicyVersionError as unknown:
            error = str(unknown)
    return _page("what_if.html", request, status_code=400 if error else 200, account=account, policy=policy,
                 conversation_id=conversation_id, versions=audit_views.policy_versions(), answer=answer,
                 error=error)


ROUTES = [
    Route("/healthz", health),
    Route("/login", login),
    Route("/logout", logout),
    Route("/", home),
    Route("/conversations/{conversation_id}", conversation),
    Route("/runs/{model_run_id}", run),
    Route("/runs/{model_run_id}/why-not", why_not),
    Route("/runs/{model_run_id}/diff", diff),
    Route("/records/{kind}/{record_id}", record),
    Route("/what-if", what_if),
    Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
]


def create_app(deps: GraphDeps, *, secret: bytes, temporal_ui: str | None = None,
               namespace: str = "default") -> Starlette:
    """The inspector app over ``deps``.

    Viewer tokens are verified with ``secret`` (:func:`dossier.inspector.auth.load_secret`); a run links to
    its workflow in the Temporal UI at ``temporal_ui``, when given.
    """
    app = Starlette(routes=ROUTES, middleware=[Middleware(_Headers)])
    app.state.inspector = _Inspector(deps=deps, secret=secret, render=templates(), temporal_ui=temporal_ui,
                                     namespace=namespace)
    return app


READ_PATHS = (
    "/conversations/{conversation_id}",
    "/conversations/{conversation_id}?branch={branch_id}",
    "/runs/{model_run_id}",
    "/runs/{model_run_id}/why-not?record={record_ref}",
    "/runs/{model_run_id}/diff",
    "/runs/{model_run_id}/diff?against={model_run_id}",
    "/records/memory/{memory_id}",
    "/records/artifact/{artifact_id}",
    "/records/artifact/{artifact_id}?reveal=1",
    "/records/tool_call/{tool_call_id}",
    "/records/message/{message_id}",
    "/what-if?policy={policy}&conversation={conversation_id}",
)
"""Every page that reads by id, as a template of the ids it takes (what the isolation prober tries)."""


__all__ = ["CSP", "READ_PATHS", "SECURITY_HEADERS", "create_app", "templates", "visible"]
