"""agent.yaml: defaults, ranges with clear errors, legacy keys, `config show`, bind safety."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mnemonist.cli.main import cli
from mnemonist.daemon import serve
from mnemonist.settings import ConfigError, Paths, load_config


def write(home, data) -> Paths:
    home.mkdir(parents=True, exist_ok=True)
    (home / "agent.yaml").write_text(yaml.safe_dump(data))
    return Paths(home)


def test_defaults_follow_the_documents(tmp_path):
    cfg = load_config(Paths(tmp_path))
    assert cfg.memory.decay_rate == 0.95
    assert cfg.search.alpha == 0.7 and cfg.search.min_score == 0.1  # measured (benchmarks.md)
    p = cfg.memory.pipeline_v2
    assert p.enabled and not p.shadow_mode and p.extraction.timeout == 45000
    assert p.extraction.provider == "none"  # nothing leaves the machine unless configured
    assert p.worker.lease_timeout_ms == 300000 and p.embedding_tracker.batch_size == 8
    assert cfg.memory.retention.tombstone_days == 30 and cfg.memory.retention.batch_limit == 500
    assert (cfg.server.host, cfg.server.port) == ("127.0.0.1", 3850)
    assert Paths(tmp_path).database == tmp_path / "memory" / "memories.db"


def test_home_defaults_to_dot_agents_unless_env(monkeypatch, tmp_path):
    from mnemonist.settings import home_dir

    monkeypatch.delenv("MNEMONIST_HOME", raising=False)
    assert home_dir().name == ".agents"
    monkeypatch.setenv("MNEMONIST_HOME", str(tmp_path))
    assert home_dir() == tmp_path


@pytest.mark.parametrize(
    ("data", "key", "value", "allowed"),
    [
        ({"search": {"alpha": 1.5}}, "search.alpha", "1.5", "0.0–1.0"),
        ({"memory": {"pipelineV2": {"extraction": {"timeout": 10}}}},
         "memory.pipelineV2.extraction.timeout", "10", "5000–300000"),
        ({"memory": {"decay_rate": "fast"}}, "memory.decay_rate", "'fast'", "0.5–1.0"),
        ({"embedding": {"provider": "magic"}}, "embedding.provider", "'magic'", "local"),
        ({"memory": {"retention": {"batchLimit": 0}}}, "memory.retention.batchLimit", "0",
         "1–100000"),
    ],
)
def test_bad_values_name_key_value_and_range(tmp_path, data, key, value, allowed):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, data))
    message = str(err.value)
    assert key in message and value in message and allowed in message


def test_nested_keys_win_over_legacy_flat_keys(tmp_path):
    paths = write(tmp_path, {"memory": {"pipelineV2": {
        "workerPollMs": 700, "graphEnabled": False,
        "extraction": {"model": "qwen3:4b"}, "extractionModel": "ignored-flat",
    }}})
    p = load_config(paths).memory.pipeline_v2
    assert p.worker.poll_ms == 700  # flat key applied where no nested one exists
    assert p.graph.enabled is False
    assert p.extraction.model == "qwen3:4b"  # nested wins


def test_other_tools_sections_are_ignored_and_snake_case_accepted(tmp_path):
    paths = write(tmp_path, {"harnesses": ["claude-code"], "identity": {"name": "x"},
                             "memory": {"pipelineV2": {"shadow_mode": True}}})
    assert load_config(paths).memory.pipeline_v2.shadow_mode is True


def test_invalid_yaml_is_a_clear_error(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "agent.yaml").write_text("memory: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(Paths(tmp_path))


def test_config_show_prints_the_effective_configuration(tmp_path):
    write(tmp_path, {"search": {"alpha": 0.6}, "embedding": {"api_key": "sk-secret-value-123"}})
    result = CliRunner().invoke(cli, ["config", "show", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.output)
    assert shown["search"]["alpha"] == 0.6
    assert shown["memory"]["pipelineV2"]["worker"]["pollMs"] == 2000
    assert "sk-secret-value-123" not in result.output


def test_config_show_reports_bad_values(tmp_path):
    write(tmp_path, {"search": {"min_score": -1}})
    result = CliRunner().invoke(cli, ["config", "show", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert "search.min_score" in result.output and "-1" in result.output


def test_serve_refuses_a_public_bind_without_a_token(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMONIST_TOKEN", raising=False)
    with pytest.raises(SystemExit, match="token"):
        serve(str(tmp_path), host="0.0.0.0", port=1)


def test_the_documented_reference_is_the_schema():
    """docs/configuration.md carries the table `mnemonist config reference` prints."""
    printed = CliRunner().invoke(cli, ["config", "reference"]).output.strip()
    assert printed.startswith("| key | default | allowed | meaning |")
    assert "| `search.alpha` | `0.7` | 0.0–1.0 |" in printed
    docs = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
    assert printed in docs, "docs/configuration.md is stale: paste `mnemonist config reference`"
