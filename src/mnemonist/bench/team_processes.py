"""The processes of `bench team`: an LLM stub on loopback that counts its calls per memory, and
real daemons (`mnemonist serve`, one process each, own home, port and token) on one database."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml


class StubLlm:
    """An Ollama-protocol server on loopback answering every extraction with no facts, and
    counting the extraction calls per memory text (a job processed twice calls twice)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, data: Any) -> None:
                body = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send({"models": [{"name": "stub:1b", "model": "stub:1b"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                prompt = str(body.get("prompt", ""))
                m = re.search(r"<<<MEMORY>>>\n(.*)\n<<<END MEMORY>>>", prompt, re.S)
                if m:
                    with stub._lock:
                        stub.calls[m.group(1).strip()] += 1
                self._send({"model": body.get("model", "stub:1b"), "done": True,
                            "response": '{"facts": []}', "prompt_eval_count": 1,
                            "eval_count": 1})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StubLlm:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def daemon_config(url: str, token: str, llm_url: str, *, pool_size: int = 16) -> dict[str, Any]:
    """One team member's agent.yaml: the shared database, its own token, the stub LLM."""
    return {
        "storage": {"url": url, "pool_size": pool_size},
        "server": {"token": token},
        "memory": {"pipelineV2": {
            # no hourly cap on the stub's calls: every job runs during the benchmark
            "extraction": {"provider": "ollama", "baseUrl": llm_url, "model": "stub:1b",
                           "timeout": 120000, "hourlyBudget": 100000},
            "worker": {"pollMs": 100, "maxRetries": 3},
            "structural": {"enabled": False},
        }},
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DaemonProcess:
    """`mnemonist serve` in its own process, with its own home, port and token."""

    def __init__(self, home: Path, config: dict[str, Any]) -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "agent.yaml").write_text(yaml.safe_dump(config))
        self.home = home
        self.port = _free_port()
        self.token = config["server"]["token"]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "serve.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 180.0) -> DaemonProcess:
        env = {**os.environ, "MNEMONIST_HOME": str(self.home)}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from mnemonist.cli.main import cli; cli()", "serve",
                 "--home", str(self.home), "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited: {self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code < 500:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"daemon did not answer in {timeout_s:.0f} s")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120.0,
                            headers={"Authorization": f"Bearer {self.token}"})

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextmanager
def team(url: str, daemons: int, llm_url: str, work: Path) -> Iterator[list[DaemonProcess]]:
    started: list[DaemonProcess] = []
    try:
        for i in range(daemons):
            config = daemon_config(url, f"team-token-{i}-{os.urandom(8).hex()}", llm_url)
            started.append(DaemonProcess(work / f"daemon-{i}", config).start())
        yield started
    finally:
        for d in started:
            d.stop()
