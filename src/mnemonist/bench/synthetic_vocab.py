"""Word lists of the synthetic corpus (bench.synthetic)."""

from __future__ import annotations

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


