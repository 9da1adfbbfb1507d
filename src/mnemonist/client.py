"""The HTTP client of the faces that run outside the daemon (CLI, stdio MCP, hooks): the
daemon is the only writer, so they all talk to it over HTTP."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO, Any

import httpx

from mnemonist.settings import ConfigError, Paths, home_dir, load_config

#: methods a client may repeat: the second try cannot do more than the first
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
#: seconds a command waits for the daemon unless told otherwise (MNEMONIST_TIMEOUT)
DEFAULT_TIMEOUT_S = 30.0
#: what to do when the daemon cannot be reached
ADVICE = "start it with `mnemonist serve`, or check --url / MNEMONIST_URL"
#: the connection went away under a request (a kept-alive one the server had dropped)
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class DaemonError(Exception):
    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def default_url() -> tuple[str, str]:
    """(base url, token) from MNEMONIST_URL / MNEMONIST_TOKEN or the config's server section."""
    url = os.environ.get("MNEMONIST_URL", "")
    token = os.environ.get("MNEMONIST_TOKEN", "")
    if url and token:
        return url.rstrip("/"), token
    try:
        server = load_config(Paths(home_dir())).server
    except ConfigError:
        server = None
    host = server.host if server else "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    port = server.port if server else 3850
    return (url or f"http://{host}:{port}").rstrip("/"), token or (server.token if server else "")


def default_timeout() -> float:
    """MNEMONIST_TIMEOUT (seconds) when set to a positive number, else DEFAULT_TIMEOUT_S."""
    try:
        value = float(os.environ.get("MNEMONIST_TIMEOUT", ""))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


class Client:
    def __init__(self, base_url: str | None = None, token: str | None = None,
                 timeout: float | None = None, identity: dict[str, str] | None = None,
                 ) -> None:
        """`identity`: {"agent_id": ..., "user_id": ...}, sent as the X-Mnemonist-Agent /
        X-Mnemonist-User headers (who reads: docs/scopes.md)."""
        url, tok = default_url()
        self.base_url = (base_url or url).rstrip("/")
        token = tok if token is None else token
        self.timeout = timeout or default_timeout()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        for field, header in (("agent_id", "X-Mnemonist-Agent"), ("user_id", "X-Mnemonist-User")):
            if (identity or {}).get(field):
                headers[header] = (identity or {})[field]
        self._http = httpx.Client(base_url=self.base_url, timeout=self.timeout,
                                  headers=headers)

    def request(self, method: str, path: str, *, idempotent: bool | None = None,
                **kwargs: Any) -> Any:
        """One call; `idempotent` (default: by method) allows one retry on a new connection
        when the daemon dropped a kept-alive one without answering."""
        retry = method.upper() in IDEMPOTENT_METHODS if idempotent is None else idempotent
        try:
            try:
                resp = self._http.request(method, path, **kwargs)
            except DROPPED:
                if not retry:
                    raise
                resp = self._http.request(method, path, **kwargs)
        except httpx.ConnectError as exc:
            raise DaemonError(
                f"the daemon is not running at {self.base_url}: {ADVICE}") from exc
        except httpx.TimeoutException as exc:
            raise DaemonError(
                f"the daemon at {self.base_url} did not answer within {self.timeout:g} s"
                f" (busy or hung?): restart it with `mnemonist serve`, check --url /"
                f" MNEMONIST_URL, or wait longer with --timeout") from exc
        except DROPPED as exc:
            raise DaemonError(
                f"the daemon at {self.base_url} closed the connection without answering: {exc}"
            ) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise DaemonError(f"cannot reach the daemon at {self.base_url}: {exc}; check --url"
                              " / MNEMONIST_URL") from exc
        try:
            body = resp.json()
        except ValueError:
            body = {"message": resp.text}
        if resp.status_code >= 400:
            message = body.get("message") if isinstance(body, dict) else str(body)
            code = body.get("error") if isinstance(body, dict) else None
            raise DaemonError(f"{code or resp.status_code}: {message}", resp.status_code, body)
        return body

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: dict[str, Any], *, idempotent: bool = False) -> Any:
        """POST `body`; `idempotent=True` for a read-only POST (recall) that may be retried."""
        return self.request("POST", path, idempotent=idempotent,
                            json={k: v for k, v in body.items() if v is not None})

    def stream_lines(self, path: str, **params: Any) -> Iterator[str]:
        """GET `path` and yield its body line by line as it arrives (an export)."""
        try:
            with self._http.stream("GET", path, timeout=None, params={
                    k: v for k, v in params.items() if v is not None}) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    try:
                        body = resp.json()
                    except ValueError:
                        body = {"message": resp.text}
                    raise DaemonError(f"{body.get('error', resp.status_code)}:"
                                      f" {body.get('message')}", resp.status_code, body)
                yield from resp.iter_lines()
        except httpx.ConnectError as exc:
            raise DaemonError(
                f"the daemon is not running at {self.base_url} (start it: mnemonist serve)"
            ) from exc

    def download(self, path: str, body: dict[str, Any], sink: IO[bytes]) -> dict[str, str]:
        """POST `body` and write the answer's bytes into `sink` as they arrive (a backup);
        returns the answer's headers."""
        try:
            with self._http.stream("POST", path, timeout=None, json=body) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    try:
                        err = resp.json()
                    except ValueError:
                        err = {"message": resp.text}
                    raise DaemonError(f"{err.get('error', resp.status_code)}:"
                                      f" {err.get('message')}", resp.status_code, err)
                for block in resp.iter_bytes(1 << 20):
                    sink.write(block)
                return dict(resp.headers)
        except httpx.ConnectError as exc:
            raise DaemonError(
                f"the daemon is not running at {self.base_url}: {ADVICE}") from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise DaemonError(f"cannot reach the daemon at {self.base_url}: {exc}") from exc

    def close(self) -> None:
        self._http.close()
