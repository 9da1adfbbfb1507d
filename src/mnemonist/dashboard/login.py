"""How a browser presents the token: `/login` checks it once and keeps it in a cookie.

The cookie (`mnemonist_token`) holds an HMAC of the token under a secret the daemon drew at
start (`BoundaryPolicy.session_cookie`; a named token's cookie also names it,
`api/tokens.py`), never the token; HttpOnly (page scripts cannot read it) and
SameSite=Strict (no other site's page makes the browser send it); the boundary accepts it
wherever it accepts the bearer header. With no token configured every page just works and
`/login` sends the browser on to the dashboard.

The dashboard shows every scope (`html.OWNER`): where named tokens exist, it is an owner
token's alone (`server.token`, or one made with `--owner`). Another token is refused at
login and on every page (403 `owner_only`); its holder reads their own memories through the
API, the CLI and MCP.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from mnemonist.api.boundary import TOKEN_COOKIE
from mnemonist.api.deps import require_owner
from mnemonist.api.routes_memory import body_json
from mnemonist.dashboard.html import CSP, esc

router = APIRouter()

LOGIN_FORM = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>Log in · mnemonist</title>"
    '<link rel="stylesheet" href="/ui/static/dashboard.css">'
    '<script src="/ui/static/login.js" defer></script></head><body class="login"><main>'
    "<h1>mnemonist</h1><p>This daemon has a token (<code>server.token</code>, or an owner's"
    " named token). Paste it once; the browser keeps it in an HttpOnly cookie for this"
    " host.</p>"
    '<form id="login"><label>Token <input type="password" name="token" id="token"'
    ' autocomplete="current-password" required></label><button type="submit">Log in</button>'
    '<p class="error" role="alert">{problem}</p></form></main></body></html>'
)


def needs_login(request: Request) -> bool:
    """A token is required here (server.token is set, or named tokens exist)."""
    return request.app.state.authority.required()


def check(request: Request, given: str) -> tuple[int, str]:
    """(200, cookie value) for an owner's token; (401 | 403, why) for another."""
    authority = request.app.state.authority
    auth = authority.check_secret(given)
    if not auth.valid:
        return 401, "That token is not this daemon's."
    if auth.principal is not None and not auth.principal.owner:
        return 403, (f"The dashboard shows every scope: the token {auth.principal.name!r} is"
                     " not an owner's.")
    return 200, authority.session_cookie(given) or ""


def with_cookie(value: str, response: Response) -> Response:
    response.set_cookie(TOKEN_COOKIE, value, httponly=True, samesite="strict", path="/")
    return response


def owner_console(request: Request) -> None:
    """Every dashboard page: where named tokens exist, an owner's alone (module doc)."""
    require_owner(request, "the dashboard (it shows every scope)")


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, token: str = "") -> Response:
    """The form; `?token=…` logs in at once (a link a person can be given) and forgets the
    token from the address by redirecting."""
    if not needs_login(request):
        return RedirectResponse("/", status_code=303)
    if token:
        status, answer = check(request, token)
        if status == 200:
            return with_cookie(answer, RedirectResponse("/", status_code=303))
        problem = answer
    else:
        problem, status = "", 200
    return HTMLResponse(LOGIN_FORM.replace("{problem}", esc(problem)), status_code=status,
                        headers={"content-security-policy": CSP, "cache-control": "no-store"})


@router.post("/login")
async def login(request: Request) -> Response:
    """`{"token": "…"}` → 204 with the cookie, or 401."""
    data = await body_json(request)
    given = data.get("token")
    if not isinstance(given, str) or not given:
        return JSONResponse({"error": "invalid_request", "message": "token is required",
                             "field": "token"}, status_code=400)
    if not await run_in_threadpool(needs_login, request):
        return Response(status_code=204)
    status, answer = await run_in_threadpool(check, request, given)
    if status != 200:
        code = "unauthorized" if status == 401 else "owner_only"
        return JSONResponse({"error": code, "message": answer[0].lower() + answer[1:]},
                            status_code=status)
    return with_cookie(answer, Response(status_code=204))


@router.post("/ui/logout")
def logout() -> Response:
    response = Response(status_code=204)
    response.delete_cookie(TOKEN_COOKIE, path="/", httponly=True, samesite="strict")
    return response
