"""A deterministic corpus of synthetic memories, and queries about them.

What an agent would store over months of work: preferences, decisions, project facts, bugs,
procedures, people, dates and events, rules and lessons learned, spread over a few hundred
projects (a skewed distribution: some projects are far more common than others), with tool
names, versions, tickets, ports, paths and dates, 8 to 60 words long. No external data.

Memory `i` is a pure function of `(seed, i)` (its own `random.Random`), so a corpus of 100,000
memories is never held in memory: queries about memory `i` regenerate it. `generate(n)` makes
every memory unique (what the daemon would otherwise deduplicate) by moving to the next
variant of an index on the rare collision, and remembers those variants.

Queries come in two kinds: `lexical` ones reuse words of their target memory (what BM25
finds) and `paraphrase` ones name the same thing in other words (a synonym of the component,
the kind of tool instead of its name, ...), which only the vector leg can match.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from mnemonist.text.tokens import STOP_WORDS

# --- vocabulary ---------------------------------------------------------------------------

FIRST_NAMES = (
    "Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farah", "Gustavo", "Hana", "Ibrahim",
    "Jonas", "Keiko", "Lars", "Maya", "Nikhil", "Olga", "Pedro", "Quentin", "Rosa", "Sanjay",
    "Tamara", "Umar", "Valeria", "Wei", "Ximena", "Yusuf", "Zofia", "Amara", "Bjorn", "Carmen",
    "Diego", "Esther", "Felix", "Greta", "Hugo", "Ines", "Jamal", "Kira", "Leon", "Mirela",
    "Noah", "Oren", "Priya", "Rafael", "Sofia", "Tariq", "Ulla", "Viktor", "Wanda", "Yara",
    "Zane", "Aiko", "Beatriz", "Caspar", "Dalia", "Emeka", "Fiona", "Goran", "Helga", "Ivan",
    "Julia",
)  # fmt: skip
LAST_NAMES = (
    "Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Haddad", "Silva", "Kowalski",
    "Fischer", "Rossi", "Nakamura", "Petrov", "Garcia", "Jensen", "Dubois", "Schmidt", "Chen",
    "Kaur", "Mendes", "Ivanova", "Brennan", "Achebe", "Varga", "Horvath", "Larsen", "Costa",
    "Yilmaz", "Kim", "Nguyen", "Oduya", "Berg", "Sato", "Weber", "Romero", "Andersen", "Patel",
    "Ferrari", "Kowalczyk", "Mbeki", "Olsen", "Park", "Reyes", "Sokolov", "Takahashi",
    "Ueda", "Vasquez", "Walsh", "Zhang", "Abbott", "Baptiste",
)  # fmt: skip
PROJECT_FIRST = (
    "amber", "silver", "quiet", "rapid", "cobalt", "crimson", "lunar", "solar", "north",
    "iron", "velvet", "hollow", "bright", "stone", "copper", "misty", "golden", "azure",
    "frozen", "wild", "emerald", "scarlet", "polar", "coral", "obsidian", "sable", "ivory",
    "jade", "onyx", "rustic",
)  # fmt: skip
PROJECT_SECOND = (
    "heron", "falcon", "otter", "lynx", "harbor", "summit", "meadow", "comet", "beacon",
    "anvil", "cedar", "fjord", "glacier", "kestrel", "lantern", "marble", "nebula", "orchid",
    "pylon", "quartz", "raven", "sparrow", "tundra", "willow", "yarrow", "badger", "canyon",
    "dune", "ember", "forge",
)  # fmt: skip
N_PROJECTS = 240

#: (name, its paraphrase)
COMPONENTS = (
    ("auth service", "login backend"), ("billing worker", "invoicing job"),
    ("ingestion pipeline", "data import flow"), ("search indexer", "indexing process"),
    ("admin dashboard", "back-office console"), ("mobile app", "phone client"),
    ("notification service", "alerting sender"), ("payment gateway", "card processing layer"),
    ("reporting job", "nightly analytics batch"), ("feature flag service", "toggle system"),
    ("rate limiter", "request throttling"), ("image resizer", "thumbnail generator"),
    ("export worker", "download builder"), ("webhook dispatcher", "callback sender"),
    ("session store", "login state storage"), ("audit log", "change trail"),
    ("public API", "external endpoints"), ("GraphQL gateway", "query layer"),
    ("cron scheduler", "periodic task runner"), ("warehouse sync", "analytics replication"),
    ("onboarding flow", "signup wizard"), ("checkout page", "purchase screen"),
    ("email renderer", "mail templating"), ("metrics exporter", "telemetry emitter"),
    ("PDF generator", "document printer"), ("sync client", "offline replication client"),
    ("plugin loader", "extension system"), ("migration runner", "schema upgrade tool"),
    ("inventory service", "stock tracking backend"), ("pricing engine", "price calculator"),
    ("recommendation model", "suggestion ranker"), ("chat widget", "support messenger"),
    ("file uploader", "attachment intake"), ("geocoding service", "address lookup"),
    ("CLI", "command line tool"), ("load balancer", "traffic distributor"),
)  # fmt: skip
#: (name, what kind of tool it is: used by paraphrased queries instead of the name)
TOOLS = (
    ("PostgreSQL", "relational database"), ("MySQL", "relational database"),
    ("SQLite", "embedded database"), ("Redis", "in-memory cache"), ("Memcached", "cache"),
    ("Kafka", "event streaming platform"), ("RabbitMQ", "message broker"),
    ("NATS", "message bus"), ("Terraform", "infrastructure as code tool"),
    ("Pulumi", "infrastructure as code tool"), ("Ansible", "configuration management tool"),
    ("Docker", "container runtime"), ("Kubernetes", "container orchestrator"),
    ("Nomad", "workload scheduler"), ("GitHub Actions", "CI system"),
    ("GitLab CI", "CI system"), ("Buildkite", "CI system"), ("Jenkins", "build server"),
    ("pytest", "Python test runner"), ("Jest", "JavaScript test runner"),
    ("Playwright", "browser testing framework"), ("Cypress", "end-to-end test tool"),
    ("Grafana", "dashboarding tool"), ("Prometheus", "metrics system"),
    ("Datadog", "monitoring service"), ("Sentry", "error tracker"),
    ("OpenTelemetry", "tracing library"), ("Elasticsearch", "full-text search engine"),
    ("Meilisearch", "full-text search engine"), ("ClickHouse", "columnar analytics store"),
    ("DuckDB", "columnar analytics store"), ("S3", "object storage"),
    ("MinIO", "object storage"), ("Nginx", "reverse proxy"), ("Envoy", "service proxy"),
    ("FastAPI", "Python web framework"), ("Django", "Python web framework"),
    ("Express", "Node web framework"), ("Next.js", "React framework"),
    ("Tailwind", "CSS framework"), ("Vite", "frontend bundler"), ("esbuild", "bundler"),
    ("Poetry", "Python packaging tool"), ("uv", "Python package manager"),
    ("pnpm", "JavaScript package manager"), ("ruff", "Python linter"),
    ("ESLint", "JavaScript linter"), ("Prettier", "code formatter"),
    ("mypy", "static type checker"), ("Celery", "task queue"), ("Sidekiq", "job queue"),
    ("Temporal", "workflow engine"), ("Airflow", "pipeline scheduler"),
    ("dbt", "data transformation tool"), ("Vault", "secrets manager"),
    ("Stripe", "payments provider"), ("Twilio", "SMS provider"),
    ("SendGrid", "email delivery service"), ("Auth0", "identity provider"),
    ("Keycloak", "identity provider"), ("Cloudflare", "CDN"), ("Fastly", "CDN"),
    ("Vercel", "hosting platform"), ("gRPC", "RPC framework"),
    ("Alembic", "schema migration tool"), ("Flyway", "schema migration tool"),
    ("Helm", "Kubernetes package manager"), ("Argo CD", "GitOps deployment tool"),
    ("Renovate", "dependency update bot"), ("Jira", "issue tracker"),
    ("Linear", "issue tracker"),
)  # fmt: skip
RUNTIMES = ("Python", "Node", "Go", "Rust", "Java", "Ruby", "Elixir", "Kotlin", "Deno", ".NET")
ENVIRONMENTS = (
    "staging", "production", "the dev cluster", "eu-west-1", "us-east-1",
    "the preview environment", "the on-prem cluster", "the QA sandbox",
)  # fmt: skip
ROLES = (
    "tech lead", "product manager", "on-call engineer", "security reviewer", "designer",
    "data engineer", "SRE", "QA lead", "engineering manager", "release captain", "DBA",
    "frontend lead", "mobile lead", "customer success contact",
)  # fmt: skip
TEAMS = (
    "platform", "payments", "growth", "data", "infrastructure", "mobile", "security", "search",
    "developer experience", "billing", "identity", "observability",
)  # fmt: skip
CITIES = (
    "Lisbon", "Berlin", "Nairobi", "Toronto", "Osaka", "Warsaw", "Austin", "Bangalore",
    "Melbourne", "Oslo", "Bogota", "Dublin", "Seoul", "Lagos", "Prague", "Montreal", "Madrid",
    "Singapore", "Helsinki", "Cape Town",
)  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
#: (topic, option a, option b, paraphrase of the topic)
PREFERENCES = (
    ("indentation", "tabs", "spaces", "indent style"),
    ("commits", "small atomic commits", "large squashed commits", "how changes are split"),
    ("tests", "table-driven tests", "one test function per case", "test layout"),
    ("naming", "snake_case identifiers", "camelCase identifiers", "variable naming"),
    ("errors", "explicit error returns", "exceptions", "failure handling"),
    ("reviews", "written review comments", "pairing calls", "code review format"),
    ("imports", "absolute imports", "relative imports", "module references"),
    ("logging", "structured JSON logs", "plain text logs", "log format"),
    ("dates", "ISO 8601 dates", "locale formatted dates", "timestamp formatting"),
    ("branches", "trunk-based development", "long-lived feature branches", "branching model"),
    ("typing", "strict type hints", "untyped prototypes", "type annotations"),
    ("docs", "docstrings next to the code", "a separate wiki page", "documentation location"),
    ("config", "YAML files", "environment variables", "settings storage"),
    ("answers", "short answers without preamble", "long tutorial explanations", "reply length"),
    ("dependencies", "pinned versions", "version ranges", "package versioning"),
    ("meetings", "async updates", "daily standups", "status reporting"),
)
STYLES = (
    "are short and skip the preamble", "include a runnable code sample",
    "link to the exact file and line", "explain the trade-offs before the recommendation",
    "use British spelling", "show the diff instead of the whole file",
    "never use emojis", "list the commands to run at the end",
)  # fmt: skip
REASONS = (
    "it was twice as fast in the load test", "the team already knows it well",
    "the licence of the alternative was a problem for customers",
    "it cuts the monthly hosting bill by about a third", "it supports row-level security",
    "the old setup kept timing out under peak traffic", "it has first-class retry support",
    "the vendor dropped support for the previous option", "it runs fine on ARM machines",
    "on-call asked for fewer moving parts", "it keeps the data inside the EU",
    "the benchmark showed lower tail latency",
)  # fmt: skip
#: (symptom, paraphrase)
SYMPTOMS = (
    ("requests time out after 30 seconds", "calls hanging until they give up"),
    ("memory grows until the pod is killed", "a leak that ends in the container dying"),
    ("duplicate emails are sent", "customers receiving the same message twice"),
    ("the page renders blank", "an empty white screen"),
    ("totals are off by one cent", "rounding mistakes in the amounts"),
    ("jobs are processed twice", "tasks running more than once"),
    ("the login redirect loops", "sign-in bouncing back and forth forever"),
    ("uploads over 10 MB are rejected", "large attachments failing"),
    ("timestamps shift by one hour", "clock times being an hour wrong"),
    ("search returns stale results", "outdated hits showing up in lookups"),
    ("the worker deadlocks", "the background process freezing"),
    ("CSV exports drop the last row", "spreadsheet downloads missing a line"),
    ("webhooks arrive out of order", "callbacks delivered in the wrong sequence"),
    ("the cache never expires", "cached entries living forever"),
)
CONDITIONS = (
    "the cache is cold", "two users edit the same record", "daylight saving time starts",
    "the queue holds more than 10k messages", "a retry overlaps with the original request",
    "the locale is set to German", "the connection pool is exhausted",
    "the upstream API returns a 429", "a tenant has more than 500 users",
    "the deploy happens during a batch run", "the network drops for a few seconds",
)  # fmt: skip
CAUSES = (
    "a missing index on the orders table", "an off-by-one in the pagination cursor",
    "a race between the writer and the cache invalidation",
    "a retry policy that was not idempotent", "a naive datetime compared with an aware one",
    "an unbounded in-memory buffer", "a stale DNS entry", "float arithmetic on money",
    "a connection leak in the error path", "a regex with catastrophic backtracking",
    "the wrong default timezone in the container", "a lock held across a network call",
)  # fmt: skip
ERRORS = (
    "ECONNRESET", "HTTP 502", "a deadlock detected error", "OOMKilled",
    "an SSL handshake failure", "a null pointer exception", "UnicodeDecodeError",
    "serialization failure 40001", "a segfault in the native extension", "EADDRINUSE",
)  # fmt: skip
WORKAROUNDS = (
    "restart the worker", "clear the cache key by hand", "pin the client to the previous version",
    "raise the pool size to 20", "run the backfill script again", "disable the feature flag",
    "rerun the job with a smaller batch", "roll back the last deploy",
)  # fmt: skip
#: (task, paraphrase)
TASKS = (
    ("deploy a hotfix", "ship an urgent patch"),
    ("rotate the database credentials", "change the DB passwords"),
    ("cut a release", "publish a new version"),
    ("restore a backup", "recover data from a snapshot"),
    ("onboard a new engineer", "set up a newcomer"),
    ("add a feature flag", "introduce a toggle"),
    ("run the database migrations", "apply schema changes"),
    ("reindex search", "rebuild the lookup index"),
    ("roll back a deploy", "revert a bad rollout"),
    ("upgrade the runtime", "move to a newer language version"),
    ("bump dependencies", "update third-party packages"),
    ("add a new tenant", "provision a customer account"),
    ("renew the TLS certificates", "refresh the HTTPS certs"),
    ("replay failed webhooks", "resend lost callbacks"),
)
STEPS = (
    "open a ticket in {tracker}", "run the migration with {migrator}",
    "tag the commit as v{version}", "wait for {ci} to go green",
    "announce it in the #{team} channel", "check the {component} dashboard in Grafana",
    "ask {person} for approval", "snapshot the database", "drain the {component}",
    "bump the version in the manifest", "update the changelog",
    "run the smoke tests against {env}", "enable the flag for 5 percent of users",
    "watch the error rate in Sentry for ten minutes", "merge the release branch into main",
)  # fmt: skip
#: (forbidden action, paraphrase)
FORBIDDEN = (
    ("run migrations on production", "change the live schema"),
    ("force-push to main", "rewrite the shared history"),
    ("deploy on Friday afternoon", "ship right before the weekend"),
    ("change the public API", "break the external contract"),
    ("log customer email addresses", "write personal data into logs"),
    ("disable the rate limiter", "turn off request throttling"),
    ("delete a storage bucket", "remove blob containers"),
    ("merge without a review", "skip the approval of a peer"),
    ("store secrets in the repository", "commit credentials"),
)
GOOD_HABITS = (
    "run the full test suite", "update the changelog", "take a database snapshot",
    "notify the on-call engineer", "check the error budget", "read the runbook",
    "write a migration plan", "ping the release captain",
)  # fmt: skip
#: (behaviour, paraphrase)
BEHAVIOURS = (
    ("caches DNS lookups forever unless configured", "never refreshes name resolution"),
    ("silently truncates strings longer than 255 characters", "cuts long text without warning"),
    ("retries non-idempotent requests by default", "repeats unsafe calls on its own"),
    ("runs cron schedules in UTC", "uses universal time for periodic tasks"),
    ("loads the whole file into memory", "reads everything at once into RAM"),
    ("does not follow redirects by default", "ignores 3xx responses"),
    ("returns rows in random order without ORDER BY", "gives no stable result ordering"),
    ("needs about two minutes to warm up", "is slow right after startup"),
    ("rejects payloads over 1 MB", "refuses big request bodies"),
    ("holds a global lock during compaction", "blocks everything while compacting"),
)
EXTRAS = (
    "{person} confirmed this on {date}.", "See {ticket} for the details.",
    "This came up during the {team} retro.", "It affects roughly {count} customers.",
    "Double-check with {person} before changing it.", "Last verified on {date}.",
    "The discussion is in the #{team} channel.", "It was mentioned again in the {month} planning.",
    "Keep this in mind when touching the {component}.", "The runbook is in docs/{slug}.md.",
    "Revisit after the {version} release.", "{person} from the {team} team agreed.",
    "Nobody objected in the design review.", "Cost so far is about {count} dollars a month.",
)  # fmt: skip
WHO = ("claude-code", "codex", "cursor", "opencode", "aider", "user")
TAG_POOL = ("backend", "frontend", "infra", "ops", "security", "perf", "ux", "data", "ci", "docs")


# --- records ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticMemory:
    index: int
    kind: str  # preference decision fact bug procedure person event rule learning
    content: str
    project: str | None
    tags: list[str]
    who: str
    importance: float | None
    slots: dict[str, str] = field(default_factory=dict, compare=False)

    def request_body(self) -> dict[str, Any]:
        """The body of POST /api/memory/remember (and of `RememberRequest`)."""
        body: dict[str, Any] = {"content": self.content, "who": self.who}
        if self.project is not None:
            body["project"] = self.project
        if self.tags:
            body["tags"] = self.tags
        if self.importance is not None:
            body["importance"] = self.importance
        return body


@dataclass(frozen=True)
class SyntheticQuery:
    text: str
    target: int  # index of the memory it is about
    kind: str  # lexical | paraphrase


# --- the corpus ---------------------------------------------------------------------------


def _digest(*parts: str) -> int:
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "big")


class SyntheticCorpus:
    """`memory(i)` is deterministic for a seed; `generate(n)` yields n unique memories."""

    KINDS = (
        ("fact", 22), ("decision", 14), ("bug", 14), ("preference", 10), ("procedure", 9),
        ("person", 10), ("event", 9), ("rule", 6), ("learning", 6),
    )  # fmt: skip

    def __init__(self, seed: int = 7) -> None:
        self.seed = seed
        rng = random.Random(f"mnemonist-bench/{seed}/projects")
        combos = [f"{a}-{b}" for a in PROJECT_FIRST for b in PROJECT_SECOND]
        self.projects = rng.sample(combos, N_PROJECTS)
        # Zipf-like: the first projects are far more common than the last ones.
        self._project_weights = [1.0 / (rank + 1) ** 0.9 for rank in range(N_PROJECTS)]
        self._kinds = [k for k, _ in self.KINDS]
        self._kind_weights = [w for _, w in self.KINDS]
        self._variants: dict[int, int] = {}
        self._seen: set[int] = set()

    # -- memories ------------------------------------------------------------------------
    def generate(self, n: int) -> Iterator[SyntheticMemory]:
        """Memories 0..n-1, each with distinct content (so that none is deduplicated and
        each has its own embedding, which is keyed by content alone)."""
        self._seen = set()
        for index in range(n):
            variant = self._variants.get(index, 0)
            while True:
                mem = self._make(index, variant)
                key = _digest(mem.content.lower().rstrip(".,!?;:"))
                if key not in self._seen:
                    break
                variant += 1
            self._seen.add(key)
            if variant:
                self._variants[index] = variant
            yield mem
        self._seen = set()

    def memory(self, index: int) -> SyntheticMemory:
        return self._make(index, self._variants.get(index, 0))

    def _make(self, index: int, variant: int) -> SyntheticMemory:
        rng = random.Random(f"mnemonist-bench/{self.seed}/{index}/{variant}")
        kind = rng.choices(self._kinds, self._kind_weights)[0]
        project = rng.choices(self.projects, self._project_weights)[0]
        slots = self._slots(rng, project)
        main, slots = getattr(self, f"_{kind}")(rng, slots)
        slots["main"] = main
        content = self._sized(rng, main, slots)
        global_pref = kind == "preference" and rng.random() < 0.4
        tags = rng.sample(TAG_POOL, rng.choice((0, 0, 1, 1, 2, 3)))
        if rng.random() < 0.3:
            tags.append(kind)
        importance = round(rng.uniform(0.3, 1.0), 2) if rng.random() < 0.1 else None
        return SyntheticMemory(
            index=index,
            kind=kind,
            content=content,
            project=None if global_pref or rng.random() < 0.08 else project,
            tags=tags,
            who=rng.choice(WHO),
            importance=importance,
            slots=slots,
        )

    def _slots(self, rng: random.Random, project: str) -> dict[str, str]:
        comp, comp_para = rng.choice(COMPONENTS)
        tool, tool_desc = rng.choice(TOOLS)
        tool2, _ = rng.choice([t for t in TOOLS if t[0] != tool])
        day = self._date(rng)
        return {
            "project": project,
            "component": comp,
            "component_para": comp_para,
            "tool": tool,
            "tool_desc": tool_desc,
            "tool2": tool2,
            "person": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "person2": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "team": rng.choice(TEAMS),
            "env": rng.choice(ENVIRONMENTS),
            "date": day.isoformat(),
            "date2": (day + timedelta(days=rng.randint(2, 60))).isoformat(),
            "month": rng.choice(MONTHS),
            "version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
            "ticket": f"{project.split('-')[1][:4].upper()}-{rng.randint(100, 9999)}",
            "count": str(rng.choice((3, 12, 40, 75, 120, 300, 800, 2500))),
            "slug": comp.lower().replace(" ", "-"),
            "runtime": f"{rng.choice(RUNTIMES)} {rng.randint(1, 22)}",
            "port": str(rng.randint(3000, 9900)),
        }

    def _context(self, rng: random.Random, project: str) -> dict[str, str]:
        """Fresh values for a padding sentence (another person, date, ticket, ...)."""
        comp, _ = rng.choice(COMPONENTS)
        return {
            "person": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "date": self._date(rng).isoformat(),
            "ticket": f"{project.split('-')[1][:4].upper()}-{rng.randint(100, 9999)}",
            "team": rng.choice(TEAMS),
            "count": str(rng.choice((3, 12, 40, 75, 120, 300, 800, 2500))),
            "month": rng.choice(MONTHS),
            "component": comp,
            "slug": comp.lower().replace(" ", "-"),
            "version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
        }

    @staticmethod
    def _date(rng: random.Random) -> date:
        return date(rng.randint(2023, 2026), rng.randint(1, 12), rng.randint(1, 28))

    def _sized(self, rng: random.Random, main: str, slots: dict[str, str]) -> str:
        """Pad with context sentences (other people, dates, tickets) to a target of 8-60
        words (mode about 16; the main sentence alone is often longer)."""
        target = int(rng.triangular(8, 60, 16))
        words = main.split()
        extras = list(EXTRAS)
        rng.shuffle(extras)
        while len(words) < target and extras:
            context = {**slots, **self._context(rng, slots["project"])}
            words += extras.pop().format(**context).split()
        if len(words) > 60:
            words = words[:60]
            words[-1] = words[-1].rstrip(".,;:") + "."
        return " ".join(words)

    # -- one builder per kind: (main sentence, slots the queries may use) ------------------
    def _preference(self, rng, s):
        topic, a, b, topic_para = rng.choice(PREFERENCES)
        s = {**s, "topic": topic, "a": a, "b": b, "topic_para": topic_para}
        first = s["person"].split()[0]
        main = rng.choice((
            f"{s['person']} prefers {a} over {b} when working on {s['project']}.",
            f"The user likes {a} rather than {b} for {topic_para}; ask before switching to {b}.",
            f"{first} wants answers that {rng.choice(STYLES)}, and prefers {a} to {b}.",
            f"In {s['project']} {first} prefers {s['tool']} to {s['tool2']} and {a} over {b}.",
        ))  # fmt: skip
        return main, s

    def _decision(self, rng, s):
        reason = rng.choice(REASONS)
        s = {**s, "reason": reason}
        main = rng.choice((
            f"Decided on {s['date']} to use {s['tool']} for the {s['component']} of "
            f"{s['project']} because {reason}.",
            f"We agreed to move the {s['component']} in {s['project']} from {s['tool2']} to "
            f"{s['tool']} by {s['date']}; {reason}.",
            f"The {s['team']} team chose {s['tool']} over {s['tool2']} for {s['project']} "
            f"after {s['person']} showed that {reason}.",
        ))  # fmt: skip
        return main, s

    def _fact(self, rng, s):
        main = rng.choice((
            f"The {s['component']} of {s['project']} runs on {s['runtime']} and is deployed to "
            f"{s['env']} with {s['tool']}.",
            f"In {s['project']} the {s['component']} listens on port {s['port']} and keeps its "
            f"data in {s['tool']}.",
            f"{s['project']} uses {s['tool']} for the {s['component']}; its config lives in "
            f"services/{s['slug']}/config.yaml.",
            f"The {s['component']} of {s['project']} is owned by the {s['team']} team and pinned "
            f"to {s['tool']} {s['version']}.",
        ))  # fmt: skip
        return main, s

    def _bug(self, rng, s):
        symptom, symptom_para = rng.choice(SYMPTOMS)
        s = {**s, "symptom": symptom, "symptom_para": symptom_para}
        main = rng.choice((
            f"Bug in the {s['project']} {s['component']}: {symptom} when "
            f"{rng.choice(CONDITIONS)}. Root cause was {rng.choice(CAUSES)}; fixed in "
            f"{s['ticket']}.",
            f"{s['ticket']}: the {s['component']} of {s['project']} fails with "
            f"{rng.choice(ERRORS)} and {symptom}; workaround is to {rng.choice(WORKAROUNDS)}.",
            f"Known problem in {s['project']}: {symptom} in the {s['component']} since "
            f"{s['tool']} {s['version']}.",
        ))  # fmt: skip
        return main, s

    def _procedure(self, rng, s):
        task, task_para = rng.choice(TASKS)
        s = {
            **s,
            "task": task,
            "task_para": task_para,
            "tracker": rng.choice(("Jira", "Linear")),
            "migrator": rng.choice(("Alembic", "Flyway")),
            "ci": rng.choice(("GitHub Actions", "GitLab CI", "Buildkite")),
        }
        steps = [st.format(**s) for st in rng.sample(STEPS, rng.randint(2, 4))]
        main = f"To {task} in {s['project']}: " + ", then ".join(steps) + "."
        return main, s

    def _person(self, rng, s):
        role = rng.choice(ROLES)
        s = {**s, "role": role}
        main = rng.choice((
            f"{s['person']} is the {role} for {s['project']}; ask them about the "
            f"{s['component']}. Based in {rng.choice(CITIES)}.",
            f"{s['person']} joined the {s['team']} team in {s['month']} and now owns the "
            f"{s['component']} of {s['project']}.",
            f"{s['person']} is out of office from {s['date']} to {s['date2']}; "
            f"{s['person2']} covers the {s['component']} meanwhile.",
        ))  # fmt: skip
        return main, s

    def _event(self, rng, s):
        main = rng.choice((
            f"The {s['project']} {s['version']} release is scheduled for {s['date']}; code "
            f"freeze starts {s['date2']}.",
            f"Incident on {s['date']}: the {s['component']} of {s['project']} was down for "
            f"{rng.randint(4, 180)} minutes because of {rng.choice(CAUSES)}.",
            f"The {s['tool']} contract for {s['project']} renews on {s['date']} and costs "
            f"{s['count']}00 dollars per month.",
            f"Quarterly planning of the {s['team']} team is on {s['date']} in "
            f"{rng.choice(CITIES)}.",
        ))  # fmt: skip
        return main, s

    def _rule(self, rng, s):
        bad, bad_para = rng.choice(FORBIDDEN)
        s = {**s, "bad": bad, "bad_para": bad_para}
        main = rng.choice((
            f"Never {bad} in {s['project']} without approval from {s['person']}.",
            f"Always {rng.choice(GOOD_HABITS)} before touching the {s['component']} of "
            f"{s['project']}, and never {bad}.",
        ))  # fmt: skip
        return main, s

    def _learning(self, rng, s):
        behaviour, behaviour_para = rng.choice(BEHAVIOURS)
        s = {**s, "behaviour": behaviour, "behaviour_para": behaviour_para}
        main = rng.choice((
            f"Learned that {s['tool']} {behaviour}; the {s['component']} of {s['project']} "
            f"needed a fix for it.",
            f"Turns out the {s['component']} in {s['project']} {behaviour} since the move to "
            f"{s['tool']}.",
        ))  # fmt: skip
        return main, s

    # -- queries -------------------------------------------------------------------------
    def queries(
        self, count: int, among: int, *, seed: int | None = None, lexical_share: float = 0.5
    ) -> list[SyntheticQuery]:
        """`count` distinct queries about memories 0..among-1 (distinct strings, so that a
        query-embedding cache never answers one of them)."""
        if among <= 0:
            raise ValueError("among must be positive")
        rng = random.Random(f"mnemonist-bench/{self.seed if seed is None else seed}/queries")
        out: list[SyntheticQuery] = []
        seen: set[str] = set()
        attempts = 0
        while len(out) < count:
            attempts += 1
            if attempts > count * 50:
                raise RuntimeError(f"could not make {count} distinct queries")
            mem = self.memory(rng.randrange(among))
            lexical = rng.random() < lexical_share
            text = self._lexical(rng, mem) if lexical else self._paraphrase(rng, mem)
            if text.lower() in seen:
                continue
            seen.add(text.lower())
            out.append(SyntheticQuery(text, mem.index, "lexical" if lexical else "paraphrase"))
        return out

    @staticmethod
    def _lexical(rng: random.Random, mem: SyntheticMemory) -> str:
        """3-6 words of the memory's main sentence (in order), sometimes with a lead-in."""
        words = [w.strip(".,;:()") for w in mem.slots.get("main", mem.content).split()]
        words = [w for w in words if len(w) > 2 and w.lower() not in STOP_WORDS]
        if len(words) < 3:
            words = mem.content.split()
        picks = sorted(rng.sample(range(len(words)), min(len(words), rng.randint(3, 6))))
        phrase = " ".join(words[i] for i in picks)
        lead = rng.choice(("", "", "what about ", "remind me: ", "notes on "))
        return lead + phrase

    @staticmethod
    def _paraphrase(rng: random.Random, mem: SyntheticMemory) -> str:
        """The same subject in other words: synonyms, the kind of tool instead of its name."""
        s = mem.slots
        first = s["person"].split()[0]
        by_kind = {
            "preference": (
                f"what does {first} like better for {s.get('topic_para', '')}",
                f"which {s.get('topic_para', '')} is favoured by the user",
            ),
            "decision": (
                f"which {s['tool_desc']} did we pick for the {s['component_para']}",
                f"why was a new {s['tool_desc']} selected for {s['project']}",
            ),
            "fact": (
                f"where is the {s['component_para']} of {s['project']} hosted",
                f"what {s['tool_desc']} sits behind the {s['component_para']}",
            ),
            "bug": (
                f"{s.get('symptom_para', '')} in the {s['component_para']}",
                f"why did {s['project']} have {s.get('symptom_para', '')}",
            ),
            "procedure": (
                f"steps to {s.get('task_para', '')} for {s['project']}",
                f"how do I {s.get('task_para', '')}",
            ),
            "person": (
                f"who is responsible for the {s['component_para']} in {s['project']}",
                f"contact person for the {s['component_para']}",
            ),
            "event": (
                f"upcoming dates for {s['project']}",
                f"outage or schedule of the {s['component_para']} at {s['project']}",
            ),
            "rule": (
                f"is it allowed to {s.get('bad_para', '')} in {s['project']}",
                f"policy about how we {s.get('bad_para', '')}",
            ),
            "learning": (
                f"surprising behaviour: {s.get('behaviour_para', '')}",
                f"gotcha with the {s['tool_desc']} that {s.get('behaviour_para', '')}",
            ),
        }
        return " ".join(rng.choice(by_kind[mem.kind]).split())
