"""The learned ranker's model (search/trees.py) and its fitting (search/boosting.py): trees
walked as written, files that do not make an ensemble refused, boosting that learns an
interaction a linear model cannot, and fitting on top of a starting margin."""

from __future__ import annotations

import numpy as np
import pytest

from mnemonist.search.boosting import Boosting, fit_trees
from mnemonist.search.trees import TreeEnsemble, TreeError


def _stump_pair() -> TreeEnsemble:
    # tree 0: x0 >= 0.5 ? (x1 >= 2 ? 3 : 2) : (x1 >= 1 ? 1 : 0)  (leaves 0..3)
    # tree 1: every row to the first leaf (threshold inf), worth 0.25
    return TreeEnsemble(
        init=-1.0, depth=2,
        features=np.array([[0, 1, 1], [0, 0, 0]]),
        thresholds=np.array([[0.5, 1.0, 2.0], [np.inf, np.inf, np.inf]]),
        leaves=np.array([[0.0, 1.0, 2.0, 3.0], [0.25, 9.0, 9.0, 9.0]]),
    )


def test_each_row_goes_right_where_its_feature_reaches_the_threshold() -> None:
    trees = _stump_pair()
    x = np.array([[0.0, 0.0], [0.0, 1.0], [0.5, 1.9], [0.9, 2.0]])
    assert trees.margin(x).tolist() == [-0.75, 0.25, 1.25, 2.25]
    p = trees.predict(x)
    assert np.allclose(p, 1 / (1 + np.exp(-trees.margin(x))))
    assert trees.margin(np.zeros((0, 2))).shape == (0,)


def test_the_json_form_round_trips_and_bad_arrays_are_refused() -> None:
    trees = _stump_pair()
    data = trees.to_json()
    again = TreeEnsemble.from_json(data, n_features=2)
    x = np.random.default_rng(1).normal(size=(20, 2))
    assert np.allclose(again.margin(x), trees.margin(x))
    with pytest.raises(TreeError, match="feature"):
        TreeEnsemble.from_json(data, n_features=1)  # reads x1, which a 1-feature model lacks
    short = {**data, "leaves": data["leaves"][:1]}
    with pytest.raises(TreeError, match="number of trees"):
        TreeEnsemble.from_json(short, n_features=2)
    with pytest.raises(TreeError, match="depth"):
        TreeEnsemble.from_json({**data, "depth": 0}, n_features=2)


def test_boosting_learns_an_interaction_no_line_separates() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=(3000, 3))
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).astype(float)  # exclusive or; x2 is noise
    trees = fit_trees(x, y, Boosting(trees=60, depth=2, learning_rate=0.3))
    test = rng.uniform(-1, 1, size=(1000, 3))
    truth = (test[:, 0] > 0) ^ (test[:, 1] > 0)
    assert ((trees.predict(test) > 0.5) == truth).mean() > 0.95
    used = set(trees.features[np.isfinite(trees.thresholds)].tolist())
    assert used <= {0, 1, 2} and {0, 1} <= used
    # the same rows give the same trees
    again = fit_trees(x, y, Boosting(trees=60, depth=2, learning_rate=0.3))
    assert np.array_equal(again.thresholds, trees.thresholds)


def test_trees_fitted_on_top_of_a_margin_extend_it() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2000, 2))
    y = (x[:, 0] > 0).astype(float)
    base = fit_trees(x, y, Boosting(trees=20, depth=2))
    flipped = 1.0 - y  # a home whose labels say the opposite
    more = fit_trees(x, flipped, Boosting(trees=40, depth=2), start=base.margin(x))
    assert more.init == 0.0
    both = base.extended(more)
    assert both.size == base.size + more.size
    assert np.allclose(both.margin(x), base.margin(x) + more.margin(x))
    # what the added trees learned moves the ensemble toward the new labels
    assert ((both.predict(x) > 0.5) == (flipped > 0.5)).mean() > \
        ((base.predict(x) > 0.5) == (flipped > 0.5)).mean()
    with pytest.raises(TreeError, match="depth"):
        base.extended(fit_trees(x, y, Boosting(trees=2, depth=3)))


def test_no_rows_give_an_empty_ensemble_at_the_starting_value() -> None:
    trees = fit_trees(np.zeros((0, 3)), np.zeros(0), Boosting(trees=5, depth=2))
    assert trees.size == 0
    assert trees.margin(np.zeros((2, 3))).tolist() == [trees.init, trees.init]
