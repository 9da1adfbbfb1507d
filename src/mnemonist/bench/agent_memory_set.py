"""A small labelled set of agent-memory questions over a synthetic corpus (not LoCoMo).

What a coding agent's memory holds: preferences, decisions, bugs and their fixes, procedures,
facts about people and systems. The questions are worded the way an agent asks later — often
with none of the memory's own words ("how do we ship to production?" for the deploy procedure)
— plus a few that hinge on an exact token (an error code, a flag). Written for mnemonist, so
no default is tuned to one dataset. Each question names the keys of the memories that answer it.
"""

from __future__ import annotations

#: key -> (type, content)
MEMORIES: dict[str, tuple[str, str]] = {
    "pref-tabs": ("preference", "Ana prefers tabs over spaces in Go files and gofmt on save."),
    "pref-tests": ("preference", "Run the unit tests with pytest -x -q before every commit; "
                                 "the full suite only in CI."),
    "pref-commit": ("preference", "Commit messages are imperative and under 72 characters, "
                                  "no trailing period."),
    "pref-review": ("preference", "Ben wants small pull requests: one concern each, under 400 "
                                  "changed lines."),
    "pref-dark": ("preference", "Ana reads the dashboard in dark mode and hates animations."),
    "pref-python": ("preference", "New services are written in Python 3.12 with type hints; "
                                  "no Python 2 compatibility shims."),
    "dec-postgres": ("decision", "We chose PostgreSQL over MongoDB for the billing service "
                                 "because invoices need transactions."),
    "dec-queue": ("decision", "Background jobs go through Redis streams, not RabbitMQ: one "
                              "less broker to operate."),
    "dec-auth": ("decision", "Authentication uses short-lived JWTs (15 minutes) with refresh "
                             "tokens stored server-side."),
    "dec-monorepo": ("decision", "All frontend packages live in one monorepo managed with "
                                 "pnpm workspaces."),
    "dec-freeze": ("decision", "No production deploys on Fridays after 14:00 UTC; hotfixes "
                               "need two approvals."),
    "dec-logging": ("decision", "Logs are structured JSON shipped to Loki; plain-text logging "
                                "is being removed."),
    "dec-api-version": ("decision", "The public API is versioned in the URL path (/v2/...), "
                                    "never with headers."),
    "bug-timezone": ("issue", "The nightly report was empty because the cron container ran in "
                             "UTC while the query assumed Europe/Paris; fixed by passing "
                             "the timezone explicitly."),
    "bug-leak": ("issue", "The image resizer leaked file descriptors: Pillow images were never "
                         "closed; a with-block fixed it."),
    "bug-e1042": ("issue", "Error E1042 from the payment gateway means the card issuer timed "
                          "out; retry once after 2 seconds."),
    "bug-flaky": ("issue", "test_checkout_flow was flaky because two tests shared the same "
                          "Stripe idempotency key."),
    "bug-n1": ("issue", "The orders page was slow because of an N+1 query on line items; "
                       "select_related fixed it (4 s to 120 ms)."),
    "bug-oom": ("issue", "The search indexer was killed by the kernel at night: it loaded the "
                        "whole catalogue into RAM; it now streams in batches of 500."),
    "bug-cors": ("issue", "Safari blocked the widget because the CORS preflight lacked "
                         "Access-Control-Allow-Credentials."),
    "proc-deploy": ("procedural", "To ship a release: tag vX.Y.Z on main, wait for the green "
                                 "pipeline, then run ./scripts/promote.sh staging prod."),
    "proc-rotate": ("procedural", "Rotating the database password: create the new secret in "
                                 "Vault, roll the pods, then revoke the old credential."),
    "proc-oncall": ("procedural", "When paged, acknowledge in PagerDuty within 5 minutes and "
                                 "open an incident channel named inc-<date>-<topic>."),
    "proc-migrate": ("procedural", "Schema migrations run with alembic upgrade head from the "
                                  "migrations job, never from a developer laptop."),
    "proc-local": ("procedural", "To run the stack locally: docker compose up db redis, then "
                                "make dev; seed data with make seed."),
    "proc-release-notes": ("procedural", "Release notes are drafted from merged PR titles by "
                                        "the changelog bot and edited by the release captain."),
    "fact-ana": ("fact", "Ana leads the payments team and is the owner of the billing "
                         "service."),
    "fact-ben": ("fact", "Ben maintains the mobile app and is on leave in August."),
    "fact-staging": ("fact", "Staging lives at staging.internal.example and is reset every "
                             "Sunday night."),
    "fact-budget": ("fact", "The cloud budget for the quarter is 18,000 euros; we used 60 % "
                            "by the end of May."),
    "fact-sla": ("fact", "The checkout API promises 99.95 % availability to partners."),
    "fact-gpu": ("fact", "The ML team trains on two rented A100 machines booked through "
                         "Lambda."),
    # distractors: near topics, not the answers
    "dis-mongo": ("fact", "MongoDB is still used by the analytics prototype for raw events."),
    "dis-rabbit": ("fact", "RabbitMQ dashboards were archived in March."),
    "dis-friday": ("fact", "Friday team lunch moved to the rooftop cafe."),
    "dis-python2": ("fact", "The legacy reporting scripts still run on an old interpreter."),
    "dis-safari": ("fact", "Safari users are 11 % of checkout traffic."),
    "dis-vault": ("fact", "Vault was upgraded to 1.15 last month."),
    "dis-docker": ("fact", "Docker Desktop licences were replaced by Colima on laptops."),
    "dis-pager": ("fact", "PagerDuty invoices go to the finance mailbox."),
    "dis-go-lint": ("fact", "golangci-lint runs in CI with the default linters plus errcheck."),
    "dis-commit-hook": ("fact", "The pre-commit hook formats YAML files and strips trailing "
                                "whitespace."),
    "dis-pr-template": ("fact", "The pull request template asks for a screenshot of UI "
                                "changes."),
    "dis-ui-fonts": ("fact", "The dashboard uses the Inter font; icons come from Lucide."),
    "dis-py-deps": ("fact", "Python dependencies are pinned with uv lock files."),
    "dis-billing-cron": ("fact", "The billing service sends invoice emails at 06:00 UTC."),
    "dis-billing-bug": ("issue", "Invoices showed a rounding error of one cent on VAT; "
                                 "amounts are now stored in integer cents."),
    "dis-redis-mem": ("fact", "The Redis cache instance has 4 GB of memory and evicts with "
                              "allkeys-lru."),
    "dis-session-cookie": ("fact", "The session cookie is HttpOnly, Secure and SameSite=Lax."),
    "dis-frontend-build": ("fact", "The frontend build uses Vite; bundles are served from "
                                   "the CDN."),
    "dis-deploy-time": ("fact", "A full production deploy takes about 12 minutes."),
    "dis-log-retention": ("fact", "Loki keeps logs for 30 days; audit logs go to S3 for "
                                  "a year."),
    "dis-api-docs": ("fact", "API documentation is generated from the OpenAPI file on every "
                             "merge."),
    "dis-report-owner": ("fact", "The nightly report is read by the sales team every "
                                 "morning."),
    "dis-resizer-lang": ("fact", "The image resizer is a small Python service behind the "
                                 "upload API."),
    "dis-gateway": ("fact", "The payment gateway contract renews in November."),
    "dis-checkout-ui": ("fact", "The checkout page was redesigned in April with a one-step "
                                "form."),
    "dis-orders-export": ("fact", "Orders can be exported to CSV from the admin panel."),
    "dis-indexer-sched": ("fact", "The search indexer runs at 02:00 every night."),
    "dis-widget": ("fact", "The embeddable widget is loaded by 40 partner sites."),
    "dis-release-cadence": ("fact", "We release every two weeks on Tuesday."),
    "dis-db-size": ("fact", "The production database is 220 GB and grows 5 GB a month."),
    "dis-incident-review": ("procedural", "Every incident gets a written review within five "
                                          "working days."),
    "dis-schema-naming": ("rule", "Table names are plural snake_case."),
    "dis-laptop": ("fact", "New developers get a laptop with 32 GB of RAM."),
    "dis-changelog-format": ("rule", "The changelog follows the Keep a Changelog format."),
    "dis-ana-timezone": ("fact", "Ana works from Lisbon."),
    "dis-ben-phone": ("fact", "Ben tests the mobile app on an old Android phone."),
    "dis-staging-data": ("fact", "Staging uses anonymised copies of production data."),
    "dis-budget-owner": ("fact", "Finance reviews cloud spending every month."),
    "dis-sla-internal": ("fact", "Internal tools have no availability target."),
    "dis-ml-data": ("fact", "The ML team's training data lives in a versioned S3 bucket."),
    "dis-tokens-api": ("fact", "Partner API keys are created in the admin panel and never "
                               "expire."),
    "dis-mobile-release": ("procedural", "Mobile releases go through TestFlight for a week "
                                         "before the store."),
    "dis-timezone-users": ("fact", "Most customers are in Europe/Paris and Europe/Berlin."),
    "dis-flaky-e2e": ("issue", "End-to-end tests time out on the shared CI runner when two "
                               "pipelines run at once."),
    "dis-cors-api": ("fact", "The public API allows any origin for GET requests."),
    "dis-oom-worker": ("issue", "A worker once ran out of memory parsing a 2 GB CSV upload; "
                                "uploads are now capped at 100 MB."),
}

#: (question, keys of the memories that answer it)
QUESTIONS: list[tuple[str, set[str]]] = [
    ("How should indentation look in Go code for Ana?", {"pref-tabs"}),
    ("What do I run before committing?", {"pref-tests"}),
    ("How should I write a commit message?", {"pref-commit"}),
    ("How big can a PR be for Ben to review it?", {"pref-review"}),
    ("Which colour theme does Ana like for the UI?", {"pref-dark"}),
    ("Which language version for a new microservice?", {"pref-python"}),
    ("Why didn't we pick a document store for billing?", {"dec-postgres"}),
    ("Which database does the billing service use?", {"dec-postgres"}),
    ("What message broker do background tasks use?", {"dec-queue"}),
    ("How long do access tokens live?", {"dec-auth"}),
    ("How is the frontend code organised across packages?", {"dec-monorepo"}),
    ("Can I ship to production on a Friday afternoon?", {"dec-freeze"}),
    ("Where do application logs go?", {"dec-logging"}),
    ("How do we version the public API?", {"dec-api-version"}),
    ("Why was the nightly report blank?", {"bug-timezone"}),
    ("The thumbnail service runs out of file handles, seen before?", {"bug-leak"}),
    ("What does E1042 mean?", {"bug-e1042"}),
    ("Why did the checkout test fail randomly?", {"bug-flaky"}),
    ("Why was the orders page so slow?", {"bug-n1"}),
    ("Why did the indexer crash overnight with memory problems?", {"bug-oom"}),
    ("Why did the embedded widget fail in Apple's browser?", {"bug-cors"}),
    ("How do we ship a new version to production?", {"proc-deploy"}),
    ("How do I change the DB credentials safely?", {"proc-rotate"}),
    ("What do I do when I get paged at night?", {"proc-oncall"}),
    ("How are database schema changes applied?", {"proc-migrate"}),
    ("How do I start everything on my machine for development?", {"proc-local"}),
    ("Who writes the changelog for a release?", {"proc-release-notes"}),
    ("Who owns billing?", {"fact-ana", "dec-postgres"}),
    ("Is Ben available in the summer?", {"fact-ben"}),
    ("What is the URL of the pre-production environment?", {"fact-staging"}),
    ("How much cloud money is left this quarter?", {"fact-budget"}),
    ("What uptime do we guarantee partners for checkout?", {"fact-sla"}),
    ("What hardware does the ML team train on?", {"fact-gpu"}),
]
