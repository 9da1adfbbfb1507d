"""Hand-labelled entities, relations and aliases for judging the knowledge-graph extractor.

Each item is one memory (1-3 sentences) as an agent or a person would store it, labelled by
hand from the policy below and never from what the extractor does. Kinds: `coding`, `ops`,
`personal`, and `chat` (LoCoMo-style turns written "Speaker: text").

Entities — label every mention of:
- a proper name: person, pet, organisation, product, technology (in any case: "postgres",
  "k8s"), language, place, project, named service; a PascalCase, camelCase or snake_case
  identifier used as a name (CheckoutApi, userService, tbl_orders); a domain (github.com);
  the speaker label of a chat turn.
- a noun phrase whose head noun has an identifying modifier before it: a noun, a gerund or a
  name ("checkout API", "nightly backup job", "pottery class", "Q3 roadmap", "running club"),
  or a classifying adjective, one that says which kind rather than how good or in what state
  ("mobile app", "internal wiki", "primary database", "static assets", "dark mode"). The test
  is syntactic, so generic compounds count too ("adoption agencies", "release notes").
Display form: words as written (case, singular or plural), without leading articles,
determiners, quantifiers or possessive pronouns (the, a, this, every, my, our, their, ...),
and without evaluative or state adjectives (new, old, legacy, slow, little, favourite), which
never make an entity on their own ("the new server" is nothing). A possessive name stays
("Caroline's adoption agency"). Take the longest phrase, not its parts, and stop at the head
("the Kubernetes cluster in Frankfurt" → "Kubernetes cluster" and "Frankfurt").
A name inside a phrase headed by a common noun is an entity too ("Stripe webhook handler"
and "Stripe", "Caroline's adoption agency" and "Caroline", "Cost Explorer API" and "Cost
Explorer"); a capitalised multi-word proper name is one entity and is not split ("GitHub
Actions", "Oakland Youth Orchestra", "St. Mary's Hospital"). Descriptors such as "LGBTQ" and
acronyms of common nouns, protocols or formats (API, CLI, SDK, CI, ML, DNS, TLS, VPN, SFTP,
HTML, XML, PDF, CSV, WAL) are not names: they make a phrase an entity ("ML pipeline") but
are not entities alone. Not entities: pronouns; bare common nouns ("the database", "the
team", "the API", "the repo", "staging", "production", "the kids", "the lake"); an abstract
head even with a modifier ("error rate", "disk usage", "exchange rates", "mental health",
"customer data"); times, days, dates, durations, numbers, money and versions; kinship and
roles, compound or not ("my sister", "her mom", "team lead", "on-call engineer"); a
possessive name before a bare noun gives only the name ("Caroline's mom", "Rosa's bakery" →
"Caroline", "Rosa"); greetings, interjections and ordinary words capitalised because they
start a sentence ("Thanks", "Understood").

Aliases: when one text names one thing in two entity forms (parentheses, "i.e.", "a.k.a.",
"or", apposition, "called", "who everyone calls"), the form written first is the primary and
goes in `entities`; the other goes in `aliases` as (alias, primary) and relations use the
primary. An apposition with a bare noun is no alias ("the CDN, CloudFront" → "CloudFront").

Relations: (source, type, target), only where the text states it and both ends are labelled
entities (or alias primaries); a relative clause speaks of its noun ("Dr. Patel, who works
at X" gives a relation). Types, source first:
- depends_on: depends on, relies on, requires, needs, uses, runs on, is hosted or deployed
  on, is built with, is written in, is a wrapper around, calls, talks to, connects to, imports.
- writes_to: writes, sends, pushes, publishes, posts, uploads, reports, forwards, routes,
  stores, saves, dumps or logs to/in. What is sent, pushed, published or shipped is a payload
  and gets no relation ("publishes audit events to Kafka" → only X writes_to Kafka).
- reads_from: reads, pulls, consumes, queries, fetches, loads or syncs from; subscribes to;
  scrapes. "X dumps / backs up / copies Y to Z" → X reads_from Y and X writes_to Z.
- owned_by: "S is owned / maintained / run by T", "T owns / maintains / runs S" → (S,
  owned_by, T), for systems, businesses and clubs.
- part_of: is part of, is a module of, belongs to, lives in; "T contains S" → (S, part_of, T).
- moved_to: a system moved or migrated to a target.
- replaced: "S replaced T", "T was replaced by / swapped out for S", "switched from T to S",
  "replaced T with S" → (S, replaced, T).
- works_at: a person works at or for, joined, leads or manages an organisation or a work
  team, or holds a job there ("X leads team T at O" → works_at T and works_at O).
- lives_in: a person lives in or moved house to a place ("is from", "grew up in": nothing).
- member_of: a person is a member of, joined or attends a group, club or class.
Passive voice: the agent is the source. A subject "we", "I" or a pronoun gives no relation,
except that moved_to and replaced relate the object to the target ("we moved X to Y" → (X,
moved_to, Y)); in chat "I" is not resolved to the speaker. Lists distribute. No relation
for negations, questions, hypotheticals and conditionals, undecided plans, verbs outside the
list (provisions, pings, shares, is generated from, was written by, volunteers at) or mere
co-mention.
"""

from __future__ import annotations

from typing import NamedTuple


class Labelled(NamedTuple):
    text: str  # one memory as an agent or person would store it: 1-3 sentences
    kind: str  # "coding", "ops", "personal" or "chat"
    entities: tuple[str, ...]  # every entity the text names, in display form
    relations: tuple[tuple[str, str, str], ...] = ()  # (source entity, type, target entity)
    aliases: tuple[tuple[str, str], ...] = ()  # (alias as written, entity it names)


KINDS = ("coding", "ops", "personal", "chat")
RELATION_TYPES = (
    "depends_on", "writes_to", "reads_from", "owned_by", "part_of",
    "moved_to", "replaced", "works_at", "lives_in", "member_of",
)
