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
