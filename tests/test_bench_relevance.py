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
    folds = tmp_path / "folds"
    result = CliRunner().invoke(relevance, ["--data", str(data), "--write", str(target),
                                            "--write-folds", str(folds), "--json", "-q"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["queries"]["questions"] >= 3 and report["queries"]["offtopic"] > 0
    assert report["fitted_rows"]["hit"] > 0 and report["fitted_rows"]["answerable"] > 0
    assert len(report["conversations"]) == 4  # 2 + agent halves
    for row in report["calibration"]:
        assert 0 <= row["predicted"] <= 1 and 0 <= row["observed"] <= 1 and row["n"] > 0
    hook = report["hook_selection"]
    assert 0 <= hook["hit"] <= 1 and 0 <= hook["offtopic_with_any"] <= 1
    assert set(report["weights"]["hit_splits"]) <= set(FEATURES)
    ranked = report["ranking"]["locomo"]
    assert ranked["questions"] >= 3
    for way in ("ranker", "fused"):
        assert 0 <= ranked[way]["recall@5"] <= ranked[way]["recall@10"] <= 1
    model = load_model(target)  # the checksum the command wrote holds
    assert model.meta["data_sha256"] == report["data_sha256"]
    assert model.predict(np.zeros((1, len(FEATURES)))).shape == (1,)
    # one model per left-out conversation, each loadable and naming what it left out
    written = sorted(p.stem for p in folds.glob("*.json"))
    assert written == sorted(report["conversations"])
    for name in written:
        assert load_model(folds / f"{name}.json").meta["left_out"] == name


def test_bench_locomo_ranks_each_conversation_by_its_held_out_model(tmp_path: Path) -> None:
    """`--held-out-models` installs each conversation's own model: a model whose trees put the
    fused first hit last ranks differently from the shipped one, and a folder missing a
    conversation's model is refused before anything runs."""
    from mnemonist.cli.bench_locomo import locomo
    from mnemonist.search.relevance import FEATURES, MODEL_PATH, RelevanceModel, model_from_json
    from mnemonist.search.trees import TreeEnsemble

    data = write_data(tmp_path)
    shipped = model_from_json(json.loads(MODEL_PATH.read_text()))
    # one tree: the fused first hit (log_rank 0) gets -5, every other +5: the order turns over
    flip = TreeEnsemble(0.0, 1, np.array([[FEATURES.index("log_rank")]]), np.array([[0.3]]),
                        np.array([[-5.0, 5.0]]))
    folds = tmp_path / "flip"
    folds.mkdir()
    for conv in ("syn-a", "syn-b"):
        model = RelevanceModel(flip, shipped.answerable, {"left_out": conv})
        (folds / f"{conv}.json").write_text(json.dumps(model.to_json()))

    def run(*extra: str) -> dict:
        out = CliRunner().invoke(locomo, ["--data", str(data), "--out", str(tmp_path / "out"),
                                          "--json", "-q", *extra], catch_exceptions=False)
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)

    plain, flipped = run(), run("--held-out-models", str(folds))
    assert flipped["config"]["held_out_models"] == str(folds)
    firsts = [(q["first_rank"]["mnemonist"], r["first_rank"]["mnemonist"])
              for q, r in zip(plain["questions"], flipped["questions"], strict=True)]
    assert any(a == 1 and b != 1 for a, b in firsts), firsts
    (folds / "syn-b.json").unlink()
    refused = CliRunner().invoke(locomo, ["--data", str(data), "--held-out-models", str(folds),
                                          "-q"])
    assert refused.exit_code == 1 and "syn-b" in refused.output
