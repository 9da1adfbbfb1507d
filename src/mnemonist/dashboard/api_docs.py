"""`/docs` (Swagger UI) served from the daemon's own files, so it works offline: FastAPI's
default page loads its script and style from a CDN and is blank without the network."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter()

SWAGGER = "/ui/static/vendor/swagger-ui"


@router.get("/docs", include_in_schema=False)
def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url or "/openapi.json",
        title=f"{request.app.title} · API",
        swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
        swagger_css_url=f"{SWAGGER}/swagger-ui.css",
        swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
        # no badge from the public validator service: nothing leaves the machine
        swagger_ui_parameters={"validatorUrl": None},
    )
