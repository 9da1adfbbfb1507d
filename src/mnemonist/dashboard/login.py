"""How a browser presents the token: `/login` checks it once and keeps it in a cookie.

The cookie (`mnemonist_token`) holds an HMAC of the token under a secret the daemon drew at
start (`BoundaryPolicy.session_cookie`), never the token; HttpOnly (page scripts cannot read
it) and SameSite=Strict (no other site's page makes the browser send it); the boundary
accepts it wherever it accepts the bearer header. With no token configured every
page just works and `/login` sends the browser on to the dashboard.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from mnemonist.api.boundary import TOKEN_COOKIE
from mnemonist.api.routes_memory import body_json
from mnemonist.dashboard.html import CSP, esc

router = APIRouter()

LOGIN_FORM = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>Log in · mnemonist</title>"
    '<link rel="stylesheet" href="/ui/static/dashboard.css">'
    '<script src="/ui/static/login.js" defer></script></head><body class="login"><main>'
    "<h1>mnemonist</h1><p>This daemon has a token (<code>server.token</code>). Paste it once;"
    " the browser keeps it in an HttpOnly cookie for this host.</p>"
    '<form id="login"><label>Token <input type="password" name="token" id="token"'
    ' autocomplete="current-password" required></label><button type="submit">Log in</button>'
    '<p class="error" role="alert">{problem}</p></form></main></body></html>'
)


def configured_token(request: Request) -> str:
    return request.app.state.policy.token


def matches(request: Request, given: str) -> bool:
    token = configured_token(request)
    return bool(token) and hmac.compare_digest(given.encode(), token.encode())


def with_cookie(request: Request, response: Response) -> Response:
    value = request.app.state.policy.session_cookie()
    response.set_cookie(TOKEN_COOKIE, value, httponly=True, samesite="strict", path="/")
    return response


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, token: str = "") -> Response:
    """The form; `?token=…` logs in at once (a link a person can be given) and forgets the
    token from the address by redirecting."""
    if not configured_token(request):
        return RedirectResponse("/", status_code=303)
    if token:
        if matches(request, token):
            return with_cookie(request, RedirectResponse("/", status_code=303))
        problem = "That token is not this daemon's."
        status = 401
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
    if not configured_token(request):
        return Response(status_code=204)
    if not matches(request, given):
        return JSONResponse({"error": "unauthorized", "message": "that token is not this"
                             " daemon's"}, status_code=401)
    return with_cookie(request, Response(status_code=204))


@router.post("/ui/logout")
def logout() -> Response:
    response = Response(status_code=204)
    response.delete_cookie(TOKEN_COOKIE, path="/", httponly=True, samesite="strict")
    return response
