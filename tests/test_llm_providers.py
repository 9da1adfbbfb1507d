"""The real LLM provider clients against a local server speaking their protocols, the
`claude` CLI as a real subprocess, and the GuardedLlm wrapper (budget, concurrency, counters)."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterator

import pytest

from llm_servers import FakeLlmServer, Reply, closed_port
from mnemonist.guards import write_tx as txguard
from mnemonist.guards.write_tx import WriteLockViolation
from mnemonist.model.config import ExtractionConfig
from mnemonist.providers.llm import (
    AnthropicLlm,
    ClaudeCliLlm,
    DisabledLlm,
    GuardedLlm,
    LlmError,
    LlmProvider,
    LlmResult,
    LlmTimeout,
    LlmUnavailable,
    OllamaLlm,
    OpenAICompatLlm,
    create_llm,
    create_llm_provider,
)
from mnemonist.providers.llm.base import LlmHttpError


@pytest.fixture
def srv() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


def make(kind: str, url: str, **kw) -> LlmProvider:
    if kind == "ollama":
        return OllamaLlm(kw.pop("model", "qwen3:4b"), base_url=url, **kw)
    if kind == "openai":
        return OpenAICompatLlm(kw.pop("model", "test-model"), base_url=url, **kw)
    return AnthropicLlm(kw.pop("model", "test-model"), base_url=url,
                        api_key=kw.pop("api_key", "sk-test"), **kw)


KINDS = ["ollama", "openai", "anthropic"]


# -- the protocols ----------------------------------------------------------------------------

def test_ollama_request_and_answer(srv):
    llm = make("ollama", srv.url)
    srv.replies.append(Reply(text='{"facts": []}', prompt_tokens=5, completion_tokens=3))
    out = llm.generate("the prompt", system="the system", json_mode=True)
    assert out == LlmResult('{"facts": []}', 5, 3)
    call = srv.generations()[0]
    assert call.path == "/api/generate"
    assert call.body["stream"] is False and call.body["format"] == "json"
    assert (call.body["model"], call.prompt, call.system) == ("qwen3:4b", "the prompt",
                                                              "the system")
    llm.generate("no json")
    assert "format" not in srv.generations()[1].body


def test_ollama_availability_needs_the_model(srv):
    assert make("ollama", srv.url, model="qwen3:4b").available()
    assert make("ollama", srv.url, model="test-model:latest").available()  # implicit tag
    missing = make("ollama", srv.url, model="llama3:8b")
    assert not missing.available()
    assert "ollama pull llama3:8b" in (missing.unavailable_reason() or "")
    assert next(c.path for c in srv.calls if c.protocol == "health") == "/api/tags"


def test_openai_request_json_mode_and_tokens(srv):
    llm = make("openai", srv.url, api_key="sk-local")
    srv.replies.append(Reply(text="ok", prompt_tokens=12, completion_tokens=4))
    out = llm.generate("hello", system="be brief", json_mode=True)
    assert out == LlmResult("ok", 12, 4)
    call = srv.generations()[0]
    assert call.path == "/v1/chat/completions"  # "/v1" added to a base URL without a path
    assert call.body["response_format"] == {"type": "json_object"}
    assert call.body["messages"][0] == {"role": "system", "content": "be brief"}
    assert call.headers["authorization"] == "Bearer sk-local"
    assert llm.available()


def test_openai_retries_once_without_json_mode_and_remembers(srv):
    srv.reject_json_mode = True
    llm = make("openai", srv.url)
    srv.replies.extend(["{}", "{}"])
    assert llm.generate("a", json_mode=True).text == "{}"
    assert llm.generate("b", json_mode=True).text == "{}"
    sent = [("response_format" in c.body) for c in srv.generations()]
    assert sent == [True, False, False]  # rejected once, retried, never sent again
    assert "authorization" not in srv.generations()[0].headers


def test_anthropic_request_headers_and_availability(srv):
    llm = make("anthropic", srv.url, api_key="sk-ant")
    srv.replies.append(Reply(text="answer", prompt_tokens=9, completion_tokens=2))
    assert llm.generate("q", system="sys") == LlmResult("answer", 9, 2)
    call = srv.generations()[0]
    assert call.path == "/v1/messages"
    assert call.headers["x-api-key"] == "sk-ant" and call.headers["anthropic-version"]
    assert call.body["system"] == "sys" and call.body["max_tokens"] > 0
    assert llm.available()
    keyless = make("anthropic", srv.url, api_key="")
    assert not keyless.available() and "ANTHROPIC_API_KEY" in keyless.unavailable_reason()


# -- failures ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_http_500_is_an_error_not_unavailability(srv, kind):
    srv.replies.append(Reply(status=500, body="internal boom"))
    with pytest.raises(LlmError) as err:
        make(kind, srv.url).generate("x")
    assert not isinstance(err.value, LlmUnavailable)
    assert isinstance(err.value, LlmHttpError) and "500" in str(err.value)
    assert "internal boom" in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [503, 429])
def test_busy_server_means_unavailable(srv, kind, status):
    srv.replies.append(Reply(status=status, body="loading"))
    with pytest.raises(LlmUnavailable):
        make(kind, srv.url).generate("x")


@pytest.mark.parametrize("kind", KINDS)
def test_slow_answer_times_out(srv, kind):
    srv.replies.append(Reply(text="{}", delay_s=30.0))
    started = time.monotonic()
    with pytest.raises(LlmTimeout):
        make(kind, srv.url).generate("x", timeout_s=0.3)
    assert time.monotonic() - started < 15  # cut off, not waited out (the server takes 30 s)


@pytest.mark.parametrize("kind", KINDS)
def test_connection_refused_is_unavailable(kind):
    llm = make(kind, f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(LlmUnavailable, match="cannot connect"):
        llm.generate("x")
    if kind != "anthropic":  # anthropic's availability is "a key is configured"
        assert not llm.available() and "cannot connect" in llm.unavailable_reason()


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_protocol_answer_is_an_error(srv, kind):
    srv.replies.append(Reply(body='{"choices": [', status=200))
    with pytest.raises(LlmError, match="malformed JSON"):
        make(kind, srv.url).generate("x")
    srv.replies.append(Reply(body='{"unexpected": true}', status=200))
    with pytest.raises(LlmError):
        make(kind, srv.url).generate("x")


def test_health_endpoint_down_means_unavailable(srv):
    srv.health_status = 500
    assert not make("ollama", srv.url).available()
    assert not make("openai", srv.url).available()


@pytest.mark.parametrize("kind", KINDS)
def test_no_llm_call_inside_the_write_lock(srv, kind):
    llm = make(kind, srv.url)
    txguard.enter()
    try:
        with pytest.raises(WriteLockViolation):
            llm.generate("x")
        with pytest.raises(WriteLockViolation):
            llm.available()
        with pytest.raises(WriteLockViolation):
            GuardedLlm(llm).generate("x")
    finally:
        txguard.leave()
    assert srv.generations() == []


# -- the claude CLI, as a real subprocess -----------------------------------------------------

def fake_claude(tmp_path, body: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "claude"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(bin_dir)


def test_claude_cli_runs_the_documented_command(tmp_path, monkeypatch):
    bin_dir = fake_claude(tmp_path, 'printf "%s\\n" "$@" > "$0.args"\necho \'{"facts": []}\'\n')
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ["PATH"])
    llm = ClaudeCliLlm("haiku", timeout_s=10)
    assert llm.available()
    out = llm.generate("the prompt", system="the system")
    assert out.text.strip() == '{"facts": []}'
    args = (tmp_path / "bin" / "claude.args").read_text().splitlines()
    assert args[0] == "-p" and "the system" in args[1] and "the prompt" in args[-6]
    assert args[-5:] == ["--model", "haiku", "--no-session-persistence", "--output-format",
                         "text"]


def test_claude_cli_failures(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_claude(tmp_path, "sleep 5\n") + os.pathsep
                       + os.environ["PATH"])
    with pytest.raises(LlmTimeout):
        ClaudeCliLlm("haiku").generate("x", timeout_s=0.3)
    fake_claude(tmp_path, "echo 'not logged in' >&2\nexit 3\n")
    with pytest.raises(LlmError, match="exited with 3: not logged in"):
        ClaudeCliLlm("haiku").generate("x")


def test_claude_cli_absent_means_unavailable_and_nothing_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    llm = ClaudeCliLlm("haiku")
    assert not llm.available() and "not on PATH" in llm.unavailable_reason()
    with pytest.raises(LlmUnavailable):
        llm.generate("x")


# -- GuardedLlm -------------------------------------------------------------------------------

def test_guarded_counts_calls_tokens_and_failures(srv):
    llm = GuardedLlm(make("ollama", srv.url), max_concurrency=2, hourly_budget=100)
    srv.replies.extend([Reply(text="a", prompt_tokens=10, completion_tokens=5),
                        Reply(status=500, body="boom"), Reply(text="late", delay_s=1.0)])
    llm.generate("1")
    with pytest.raises(LlmError):
        llm.generate("2")
    with pytest.raises(LlmTimeout):
        llm.generate("3", timeout_s=0.2)
    s = llm.status()
    assert (s["calls"], s["failures"], s["timeouts"]) == (3, 2, 1)
    assert (s["prompt_tokens"], s["completion_tokens"]) == (10, 5)
    assert "LlmTimeout" in s["last_error"] and s["last_call_at"] and s["in_flight"] == 0
    assert s["budget"] == {"hourly": 100, "used_last_hour": 3}


def test_guarded_hourly_budget_makes_jobs_wait(srv):
    now = [1000.0]
    llm = GuardedLlm(make("ollama", srv.url), hourly_budget=2, clock=lambda: now[0])
    srv.script = lambda call: "{}"
    llm.generate("1")
    llm.generate("2")
    with pytest.raises(LlmUnavailable, match="hourly budget"):
        llm.generate("3")
    assert "hourly budget" in llm.unavailable_reason()
    assert len(srv.generations()) == 2 and llm.stats.budget_rejections == 1
    now[0] += 3600
    assert llm.unavailable_reason() is None
    llm.generate("4")


def test_guarded_remembers_an_outage_for_a_while(srv):
    now = [0.0]
    llm = GuardedLlm(make("ollama", srv.url), down_for_s=30, clock=lambda: now[0])
    srv.replies.append(Reply(status=503, body="loading model"))
    with pytest.raises(LlmUnavailable):
        llm.generate("x")
    assert "503" in llm.unavailable_reason()
    now[0] += 31
    assert llm.unavailable_reason() is None


class _Slow(LlmProvider):
    name = "slow"

    def __init__(self) -> None:
        super().__init__("m", timeout_s=5)
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def _generate(self, prompt, *, system, json_mode, timeout_s):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.1)
        with self.lock:
            self.active -= 1
        return LlmResult("{}")

    def _probe(self):
        return True, None


@pytest.mark.parametrize("limit", [1, 2])
def test_guarded_bounds_concurrency(limit):
    slow = _Slow()
    llm = GuardedLlm(slow, max_concurrency=limit)
    threads = [threading.Thread(target=llm.generate, args=("x",)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert slow.peak == limit and llm.stats.calls == 6


# -- configuration ----------------------------------------------------------------------------

def test_factory_maps_config_to_providers(monkeypatch, srv):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    cfg = ExtractionConfig(provider="ollama", base_url=srv.url)
    assert isinstance(create_llm_provider(cfg), OllamaLlm)
    assert create_llm_provider(cfg).model == "qwen3:4b"  # "haiku" means nothing to ollama
    local = create_llm_provider(ExtractionConfig(provider="openai", base_url=srv.url,
                                                 model="test-model"))
    local.generate("x")  # the environment's key is not sent to some other server
    assert "authorization" not in srv.generations()[-1].headers
    assert isinstance(create_llm_provider(ExtractionConfig(provider="claude-code")),
                      ClaudeCliLlm)
    for name in ("none", "opencode"):
        provider = create_llm_provider(ExtractionConfig(provider=name))
        assert isinstance(provider, DisabledLlm) and not provider.available()
    guarded = create_llm(ExtractionConfig(provider="ollama", base_url=srv.url,
                                          max_concurrency=3, hourly_budget=7, timeout=6000))
    assert (guarded.max_concurrency, guarded.hourly_budget) == (3, 7)
    assert guarded.provider.timeout_s == 6.0


@pytest.mark.parametrize(("field", "value"), [("maxConcurrency", 0), ("maxConcurrency", 17),
                                              ("hourlyBudget", 0), ("hourlyBudget", 100001)])
def test_new_extraction_keys_are_range_checked(field, value):
    with pytest.raises(ValueError):
        ExtractionConfig.model_validate({field: value})
