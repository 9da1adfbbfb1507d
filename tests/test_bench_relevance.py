"""`mnemonist bench relevance`: the relevance model fitted on a small LoCoMo-format file,
cross-validated by conversation, written with a checksum that the loader accepts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from mnemonist.bench.relevance_fit import fit_logistic
from mnemonist.cli.bench_inject import relevance
from mnemonist.search.relevance import FEATURES, load_model
from test_bench_locomo import write_data


def test_logistic_fit_recovers_a_separable_rule() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] - 0.5 * x[:, 1] > 0).astype(float)
    model = fit_logistic(x, y)
    p = model.predict(x)
    assert ((p > 0.5) == (y > 0.5)).mean() > 0.95
    assert model.weights[0] > 0 > model.weights[1]


def test_the_command_fits_reports_and_writes_a_loadable_model(tmp_path: Path) -> None:
    data = write_data(tmp_path)
    target = tmp_path / "model.json"
    result = CliRunner().invoke(relevance, ["--data", str(data), "--write", str(target),
                                            "--json", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["queries"]["questions"] >= 3 and report["queries"]["offtopic"] > 0
    assert report["fitted_rows"] > 0 and len(report["conversations"]) == 4  # 2 + agent halves
    for row in report["calibration"]:
        assert 0 <= row["predicted"] <= 1 and 0 <= row["observed"] <= 1 and row["n"] > 0
    hook = report["hook_selection"]
    assert 0 <= hook["hit"] <= 1 and 0 <= hook["offtopic_with_any"] <= 1
    assert set(report["weights"]["hit"]) == set(FEATURES)
    model = load_model(target)  # the checksum the command wrote holds
    assert model.meta["data_sha256"] == report["data_sha256"]
    assert model.predict(np.zeros((1, len(FEATURES)))).shape == (1,)
