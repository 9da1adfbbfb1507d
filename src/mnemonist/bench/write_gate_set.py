"""Hand-written cases for `mnemonist bench write-gate` (and tests/test_write_gate.py).

- UPDATES: a stored statement and a genuine update of it, as people and agents write them —
  a version, a day, a tool, a team, a count, a negation, a flag. Embeddings put many of these
  close together (0.52 to 0.99 with MiniLM): the write gate must never drop the second one.
- RESTATEMENTS: the same statement said again with other punctuation, articles or word order,
  and a few rewordings that add or change a word (which the gate keeps: it cannot tell them
  from an update).
- SESSIONS: agent sessions of one project in order, each labelled `routine` (nothing worth a
  summary: running the tests or the linter again) or `substantive` (a decision, a fix, a
  convention — short ones too); `KNOWN` are curated memories the project holds before them.
"""

from __future__ import annotations

UPDATES: tuple[tuple[str, str], ...] = (
    ("The API uses Python 3.11.", "The API uses Python 3.12."),
    ("We deploy to production on Tuesdays.", "We deploy to production on Thursdays."),
    ("We use Redis for the session cache.", "We no longer use Redis for the session cache."),
    ("The frontend team owns the dashboard.", "The platform team owns the dashboard."),
    ("Logs are kept for 30 days.", "Logs are kept for 90 days."),
    ("The user prefers tabs over spaces.", "The user prefers spaces over tabs."),
    ("Always run the linter before committing.", "Never run the linter before committing."),
    ("Feature flag new-checkout is enabled in staging.",
     "Feature flag new-checkout is disabled in staging."),
    ("The billing service talks to Stripe.", "The billing service talks to Adyen."),
    ("Staging runs on PostgreSQL 15.", "Staging now runs on PostgreSQL 16."),
    ("The build uses webpack.", "The build uses vite."),
    ("Alice reports to Bob.", "Bob reports to Alice."),
    ("The team standup is at 9:30.", "The team standup is at 10:00."),
    ("The user likes dark mode in the editor.", "The user dislikes dark mode in the editor."),
    ("Tests run on every push.", "Tests run only on pull requests."),
    ("The mobile app targets iOS 16 and later.", "The mobile app targets iOS 17 and later."),
    ("The docs site is built with MkDocs.", "The docs site is built with Docusaurus."),
    ("Code review needs one approval.", "Code review needs two approvals."),
    ("The cache is shared between workers.", "The cache is private to each worker."),
    ("Config lives in config/settings.yaml.", "Config lives in config/app.toml."),
    ("Maria leads the payments team.", "Maria left; Jonas leads the payments team."),
    ("The main branch is protected.", "The main branch is no longer protected."),
    ("The nightly backup runs at 2 am.", "The nightly backup runs at 4 am."),
    ("We store uploads in S3.", "We store uploads in Google Cloud Storage."),
    ("The user prefers short answers.", "The user prefers detailed answers with examples."),
    ("Error reporting goes to Sentry.", "Error reporting goes to the self-hosted GlitchTip."),
    ("Orders use PostgreSQL and billing uses MySQL.", "Orders use MySQL."),
    ("Deploys happen on Fridays.", "Deploys happen only on Fridays."),
    ("Ana was the release manager.", "Ana is the release manager."),
    ("Merge requests need a green pipeline.", "Merge requests need a green pipeline and a"
                                              " changelog entry."),
)

RESTATEMENTS: tuple[tuple[str, str], ...] = (
    ("The user prefers pnpm over npm.", "User prefers pnpm over npm"),
    ("CI runs on GitHub Actions.", "The CI runs on GitHub Actions"),
    ("The staging database is PostgreSQL 16.", "Staging database: PostgreSQL 16"),
    ("Ana prefers tabs over spaces in Go files.", "In Go files, Ana prefers tabs over spaces."),
    ("Use ruff for linting.", "Use ruff for the linting"),
    ("Secrets live in Vault, never in the repo.", "Secrets live in Vault - never in the repo!"),
    ("Release notes are written in CHANGELOG.md.", "Release notes: written in CHANGELOG.md"),
    ("The orders service owns the invoices table.", "The invoices table is owned by the orders"
                                                    " service."),
    ("Ben reviews all database migrations.", "All database migrations are reviewed by Ben."),
    ("We chose Postgres for billing because invoices need transactions.",
     "Billing uses Postgres: invoices need transactions."),
)

KNOWN: tuple[str, ...] = (
    "Background jobs go through Redis streams, not RabbitMQ.",
    "CI runs on GitHub Actions; the main branch needs a green pipeline.",
    "Production runs PostgreSQL 16 behind PgBouncer.",
    "The checkout service takes payments through Stripe.",
)

_TESTS_1 = (
    ("user", "Run the unit tests for me, please."),
    ("assistant", "Ran the unit tests: all 214 tests pass."),
    ("user", "Great, thanks."),
)
_TESTS_2 = (
    ("user", "Can you run the unit tests again?"),
    ("assistant", "Ran the unit tests again: all 214 tests pass."),
    ("user", "Thanks!"),
)
_TESTS_3 = (
    ("user", "Please run the unit tests once more."),
    ("assistant", "Ran the unit tests once more: all 215 tests pass."),
    ("user", "ok"),
)
_LINT_1 = (
    ("user", "Run the linter on the repository."),
    ("assistant", "Ran the linter: no warnings, the repository is clean."),
    ("user", "Nice."),
)
_LINT_2 = (
    ("user", "Could you run the linter once again?"),
    ("assistant", "Ran the linter again: no warnings, everything is clean."),
)

SESSIONS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("queue-decision", "substantive", (
        ("user", "The RabbitMQ consumers keep dying under load. What do we do?"),
        ("assistant", "We already run Redis streams for background jobs; moving the email"
                      " consumers there removes the second broker."),
        ("user", "Agreed, move the email consumers to Redis streams and drop RabbitMQ."),
        ("assistant", "Moved the email consumers to Redis streams and removed the RabbitMQ"
                      " client from the worker image."),
    )),
    ("tests-1", "routine", _TESTS_1),
    ("tests-2", "routine", _TESTS_2),
    ("deploy-key", "substantive", (
        ("user", "Note that the deploy key for GitHub Actions rotates on the first of every"
                 " month."),
        ("assistant", "Noted: the GitHub Actions deploy key rotates monthly, on the first."),
    )),
    ("lint-1", "routine", _LINT_1),
    ("tests-3", "routine", _TESTS_3),
    ("pool-fix", "substantive", (
        ("user", "Checkout requests time out under load since Monday."),
        ("assistant", "PgBouncer runs out of server connections: the pool size is 20 while"
                      " checkout opens 40 connections at peak."),
        ("user", "Raise the pool to 60 and add an alert."),
        ("assistant", "Raised the PgBouncer pool to 60 and added an alert at 80 percent use."),
    )),
    ("lint-2", "routine", _LINT_2),
    ("bun", "substantive", (
        ("user", "From now on use Bun instead of npm to run the package scripts."),
        ("assistant", "Switched the package scripts to Bun and updated the README."),
    )),
    ("tests-4", "routine", _TESTS_2),
)
