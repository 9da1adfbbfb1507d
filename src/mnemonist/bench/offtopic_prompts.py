"""Prompts a coding agent's user types that have nothing to do with a store of personal
conversations: `bench inject` sends them through the prompt hook and counts how many get a
memory injected (the off-topic rate). Written for mnemonist; no data set's text.

Half are used to fit the relevance model (`FIT`), the other half only to measure (`HELD`),
so the off-topic rate reported is never measured on prompts the model was fitted on.
"""

from __future__ import annotations

PROMPTS: tuple[str, ...] = (
    "add a unit test for the date parser",
    "why does the build fail on the CI runner but not locally?",
    "refactor the payment service to use dependency injection",
    "rename the variable tmp to buffer everywhere in utils.py",
    "write a docstring for the retry decorator",
    "fix the off-by-one error in the pagination helper",
    "run the linter and fix what it reports",
    "bump the version to 2.4.1 and update the changelog",
    "how do I squash the last three commits?",
    "make the CLI print a progress bar while downloading",
    "add type hints to the config loader",
    "the websocket reconnect logic leaks timers, find out why",
    "convert this callback-based function to async/await",
    "set up a GitHub Actions workflow that runs pytest on push",
    "explain what this regular expression matches: ^[a-z]+\\d{2,}$",
    "migrate the users table to add a nullable email_verified column",
    "profile the JSON serializer and make it faster",
    "write a Dockerfile for the API server with a slim base image",
    "add a --dry-run flag to the deploy script",
    "the test test_upload_large_file is flaky, investigate",
    "split the 900-line handlers.py into smaller modules",
    "replace the hand-written argument parsing with argparse",
    "add logging around the database connection pool",
    "why is mypy complaining about Optional[str] here?",
    "implement an LRU cache for the thumbnail generator",
    "document the REST endpoints in the README",
    "add pagination to the /orders endpoint",
    "write a migration script that backfills the slug column",
    "make the retry backoff exponential with jitter",
    "add a health check endpoint that pings redis",
    "fix the race condition in the job scheduler",
    "remove the deprecated v1 API routes",
    "upgrade the project to Python 3.12 and fix the warnings",
    "generate a requirements.txt from pyproject.toml",
    "add input validation for the signup form",
    "write a benchmark for the tokenizer",
    "the frontend bundle is 4 MB, what is making it so large?",
    "configure prettier and eslint for the web folder",
    "add a React component that shows a sortable table",
    "center this div horizontally and vertically with flexbox",
    "write a SQL query that finds duplicate invoice numbers",
    "add an index to speed up the search by created_at",
    "implement rate limiting middleware for the API",
    "translate the error messages into French",
    "add a pre-commit hook that runs black",
    "why does this goroutine never exit?",
    "port the bash install script to PowerShell",
    "write a makefile target that builds the docs",
    "add a feature flag for the new checkout flow",
    "mock the S3 client in the uploader tests",
    "clean up the unused imports in the project",
    "add a CONTRIBUTING.md with the development setup",
    "the Kubernetes pod keeps restarting with OOMKilled",
    "write a helm chart for the worker deployment",
    "set the terraform backend to an S3 bucket with locking",
    "add retries to the HTTP client for 502 and 503 responses",
    "implement a binary search over the sorted timestamps",
    "how do I read a large CSV in chunks with pandas?",
    "plot the latency histogram with matplotlib",
    "add a command that exports the report as PDF",
    "parse the nginx access log and count status codes",
    "write a regex to validate semantic version strings",
    "make the tests run in parallel with pytest-xdist",
    "fix the timezone bug in the scheduling code",
    "add OpenTelemetry tracing to the request handler",
    "write a GraphQL resolver for the products query",
    "add a dark mode toggle to the settings page",
    "the login form submits twice on enter, fix it",
    "write a property-based test for the URL normalizer",
    "add a CLI subcommand to list all registered plugins",
    "cache the compiled templates between requests",
    "replace print statements with the logging module",
    "add a timeout to every outgoing HTTP request",
    "implement the visitor pattern for the AST nodes",
    "write a script that renames image files by their EXIF date",
    "explain the difference between a mutex and a semaphore",
    "add gzip compression to the static file server",
    "refactor the long if/elif chain into a dispatch table",
    "add a config option for the maximum upload size",
    "fix the memory leak in the image resize worker",
    "write an end-to-end test for the checkout flow with playwright",
    "add a Rust FFI binding for the hashing function",
    "set up sphinx autodoc for the package",
    "write a cron expression that runs every weekday at 6am",
    "make the API return 404 instead of 500 for missing records",
    "add a websocket endpoint that streams build logs",
    "convert the settings from INI to TOML",
    "write a function that flattens nested dictionaries",
    "add a unit test for the currency rounding function",
    "the docker compose stack cannot reach postgres, why?",
    "add a makefile with lint, test and format targets",
    "implement optimistic locking on the inventory update",
    "show me how to use itertools.groupby on sorted records",
    "add a circuit breaker around the payment gateway client",
    "generate OpenAPI docs for the flask app",
    "add a retry queue for failed webhook deliveries",
    "write a migration that drops the legacy_sessions table",
    "add an integration test against a real redis",
    "speed up the slow test suite, it takes ten minutes",
    "lint the shell scripts with shellcheck and fix the warnings",
    "add an admin page that lists the latest signups",
    "write a bloom filter class with add and contains",
    "fix the broken links in the documentation site",
    "add support for environment variable overrides in the config",
    "implement a trie for the autocomplete feature",
    "make the error page show a request id",
    "add a job that deletes expired password reset tokens",
    "write a git alias that shows a compact log graph",
    "upgrade react-router from v5 to v6",
    "add a streaming parser for the large XML feed",
    "why does the coverage report miss the async functions?",
    "write a small load test with locust for the search endpoint",
    "add a serializer for the Order model with nested items",
    "configure the logger to write JSON lines",
    "the ORM generates N+1 queries on the dashboard, fix it",
    "write a function to compute the Levenshtein distance",
    "add a cancel button to the long running export",
    "implement exponential moving average for the metrics",
    "set up a devcontainer for this repository",
    "add a stale issue bot configuration",
    "create an enum for the order states and use it",
    "format all python files with ruff format",
    "add a signal handler so the worker shuts down gracefully",
    "write a decorator that measures function execution time",
    "review this pull request for security issues",
    "add CSV import for the contacts list",
    "why is the docker image 2 GB?",
    "add a unit test for the slugify helper",
    "implement token refresh in the OAuth client",
    "replace moment.js with date-fns",
    "write a script that checks all URLs in the sitemap",
    "add keyboard shortcuts to the editor component",
    "make the search endpoint case insensitive",
    "compute the p95 latency from the request logs",
    "add a README badge for the build status",
    "split the monorepo package into two libraries",
    "add a seed script that fills the dev database",
    "implement server-sent events for notifications",
    "add a column to the report with the tax amount",
    "use a connection pool in the postgres client",
    "write a test that the API rejects oversized payloads",
    "add i18n support to the email templates",
    "fix the flaky snapshot test in the header component",
    "add a cron job that rotates the log files",
    "write a CLI command to verify the database schema",
    "refactor the class to use dataclasses",
    "add caching headers to the image responses",
    "implement a simple plugin loader using entry points",
    "why does the recursive function hit the recursion limit?",
    "add a benchmark comparing orjson and json",
)

FIT: tuple[str, ...] = PROMPTS[0::2]
HELD: tuple[str, ...] = PROMPTS[1::2]


def nonsense(n: int = 40, seed: int = 4471) -> tuple[str, ...]:
    """Strings stored nowhere ("ZEBRA-QUOKKA-4471"-like: made-up words, codes, numbers),
    the same every time: a recall of one of them should return nothing."""
    import random

    rng = random.Random(seed)
    consonants, vowels = "bdfgklmnprstvzxq", "aeiou"

    def word() -> str:
        return "".join(rng.choice(consonants) + rng.choice(vowels)
                       for _ in range(rng.randint(2, 4)))

    out = []
    for i in range(n):
        parts = [word() for _ in range(rng.randint(1, 3))]
        if i % 3 == 0:
            parts = [p.upper() for p in parts] + [str(rng.randint(1000, 9999))]
        out.append(("-" if i % 2 else " ").join(parts))
    return tuple(out)


NONSENSE: tuple[str, ...] = nonsense()
