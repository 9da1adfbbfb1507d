"""`text.same_fact.relation`: when two statements state the same fact, when the newer one
replaces the older, and the neighbours that only look alike. The aspect similarity is the real
embedding model's cosine of the masked sentences, as the engine computes it."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding import create_embedding_provider
from mnemonist.text.same_fact import is_event, masked, relation, shared_subject, tokens


@pytest.fixture(scope="module")
def aspect(tmp_path_factory: pytest.TempPathFactory):
    provider = create_embedding_provider(EmbeddingConfig(),
                                         home=tmp_path_factory.mktemp("same-fact"))

    @functools.cache
    def vector(text: str) -> np.ndarray:
        v = provider.embed([text])[0]
        return v / np.linalg.norm(v)

    yield lambda a, b: float(vector(a) @ vector(b))
    provider.close()


@pytest.mark.parametrize(("older", "newer", "kind"), [
    # a newer value, and the newer statement says it changed
    ("The orders cluster runs in region ca-central-1.",
     "The orders cluster now runs in region eu-north-1.", "replaces"),
    ("The orders cluster runs in region ca-central-1.",
     "We moved the orders cluster to eu-north-1.", "replaces"),
    ("Dmitri lives in Valencia.", "Dmitri relocated to Berlin over the summer.", "replaces"),
    # the same sentence ending on another value
    ("The API listens on port 8080.", "The API listens on port 9090.", "replaces"),
    # said again in other words
    ("Dmitri relocated to Berlin over the summer.", "These days Dmitri is settled in Berlin.",
     "restates"),
    ("The orders cluster was moved; its nodes now sit in eu-north-1.",
     "Latency to the orders cluster is best from eu-north-1, where it lives now.", "restates"),
    ("Deploys need two approvals.", "All deploys need two approvals.", "restates"),
    # about the same thing, disagreeing, nothing says which is current
    ("The Team plan costs $49 per month.", "Sales quotes $12 a month for the Team plan.",
     "review"),
])
def test_the_same_fact(aspect, older, newer, kind):
    found = relation(older, newer, aspect)
    assert found is not None and found.kind == kind, found


@pytest.mark.parametrize(("older", "newer"), [
    # events are appended, never replaced
    ("Ran 12 km at an easy pace along the lake shore.",
     "Ran 15 km at an easy pace along the lake shore."),
    ("Gym: squats, 4 sets of 5.", "Gym: squats, 4 sets of 12."),  # one log, two days
    # one frame, two things changed: two facts side by side
    ("The weekly pager swap for the platform team is Wednesday.",
     "The weekly pager swap for the payments team is Thursday."),
    ("Health checks for checkout-api should probe 6200.",
     "Health checks for auth-broker should probe 5050."),
    # a shared noun with different modifiers
    ("Keep the travel budget under 18,000 euros.",
     "After the board meeting, the marketing budget was reset to 12,000 euros."),
    ("The Pro plan is priced at $19 monthly.",
     "Pricing update: customers now pay $12 a month for the annual Basic plan."),
    # the same person, another aspect
    ("Lucia is the team's engineering manager.", "Lucia migrated every notebook over to Bear."),
    # a technology both name is a value, not the subject
    ("The reporting replica is on PostgreSQL 16.",
     "The version change of the analytics warehouse finished; it is PostgreSQL 14 from now on."),
    # a name swapped before the end: about someone else
    ("Coffee beans from Kenya taste of blueberries with the pour-over.",
     "Coffee beans from Sumatra taste of blueberries with the pour-over."),
    # a plain word swapped: another item of a list
    ("The dryer at home makes a clicking noise; call a repair person.",
     "The dishwasher at home makes a clicking noise; call a repair person."),
    # a memory of several facts is not replaced by a newer statement of one of them
    ("Ana lives in Lisbon. She leads the billing team.",
     "Ana relocated to Porto over the summer."),
    ("To deploy: run the tests, then tag the commit, then push, then announce it.",
     "To deploy: run the tests, then tag the commit, then push it now."),
    # a value of another kind is another aspect, not a new value
    ("The webhook dispatcher runs on Go 9 with FastAPI.",
     "Rosa Kowalczyk joined in June and now owns the webhook dispatcher."),
])
def test_neighbours_that_only_look_alike(aspect, older, newer):
    assert relation(older, newer, aspect) is None


def test_a_noun_is_not_news_of_a_change(aspect):
    # "the migration runner" names a thing; only a verb says it changed: listed, not settled
    found = relation("The migration runner uses Express.",
                     "The migration runner runs on Rust 6 with Cloudflare.", aspect)
    assert found is not None and found.kind == "review"
    found = relation("The migration runner uses Express.",
                     "The migration runner migrated to Rust 6 with Cloudflare.", aspect)
    assert found is not None and found.kind == "replaces"


def test_the_projects_own_name_is_never_the_subject(aspect):
    older = "crimson-summit uses Terraform for the deploy scripts."
    newer = "In crimson-summit the auth service now listens on port 4370."
    ignore = frozenset({"crimson-summit", "crimson", "summit"})
    assert relation(older, newer, aspect, ignore=ignore) is None


def test_the_parts():
    assert is_event("Bought honey and leeks at the farmers market.")
    assert is_event("Garden log: planted kale along the front path.")
    assert not is_event("The orders cluster runs in region ca-central-1.")
    assert tokens("checkout-api listens on eu-west-1") == ["checkout-api", "listen", "on",
                                                          "eu-west-1"]
    a, b = "Ana lives in Lisbon.", "Ana relocated to Porto over the summer."
    subject = shared_subject(a, b, tokens(a), tokens(b))
    assert subject == {"ana"}
    assert masked(a, subject, {"lisbon"}) == "X lives in Y"
