"""A generated stream of facts that change, for `mnemonist bench over-time`.

Each changing fact (a person moves city, a service changes port, a library is replaced, a flag
is switched off...) is stated three times along the stream, each time in other words: the
original value (t0), later its replacement (t1), later again a repeat of the current value
(t2). Two kinds are plain contradictions of one word ("... is enabled" → "... is disabled").
Unrelated filler notes (cooking, running, books, ...) fall between them. Every statement
carries an event time (`occurred_at`) that increases along the stream. Each fact has one or two
questions about its CURRENT value, labelled with the keys of the statements that hold the
current value (t1, t2) and of those that hold a stale one (t0).

Deterministic from its seed; no external data.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

#: when the stream starts; statements follow 20 to 40 hours apart (about a year in all)
START = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
STAGES = ("t0", "t1", "t2")

PEOPLE = ("Ana", "Ben", "Chloe", "Dmitri", "Elif", "Farah", "Gustavo", "Hana", "Ivo", "Jana",
          "Kofi", "Lucia")


@dataclass(frozen=True)
class Kind:
    """One kind of changing fact: its subjects and values, and wordings of each stage."""

    name: str
    change: str  # "replacement" | "negation"
    count: int  # facts of this kind in the full stream
    subjects: tuple[str, ...]
    values: tuple[str, ...]
    t0: tuple[str, ...]
    t1: tuple[str, ...]
    t2: tuple[str, ...]
    queries: tuple[str, ...]


KINDS: tuple[Kind, ...] = (
    Kind("home-city", "replacement", 2, PEOPLE,
         ("Lisbon", "Porto", "Berlin", "Leipzig", "Vienna", "Krakow", "Valencia", "Lyon",
          "Utrecht", "Gothenburg", "Tallinn", "Bologna"),
         ("{s} lives in {v}.", "{s} rents a flat in {v} and works remotely from home."),
         ("{s} relocated to {v} over the summer.",
          "Moving news: {s} packed up and is now a resident of {v}."),
         ("These days {s} is settled in {v}.", "{s} calls {v} home now, so plan visits there."),
         ("where does {s} live now?", "which city is {s} based in these days?")),
    Kind("service-port", "replacement", 2,
         ("checkout-api", "billing-gateway", "inventory-sync", "search-proxy", "auth-broker",
          "report-builder"),
         ("8080", "9090", "8443", "7001", "5050", "3100", "6200", "8800"),
         ("The {s} service listens on port {v}.", "{s} binds to TCP port {v} on every host."),
         ("After the ingress rework, {s} accepts connections on {v} instead.",
          "Heads-up: traffic for {s} now has to go to {v}."),
         ("Point clients of {s} at {v}.", "Health checks for {s} should probe {v}."),
         ("which port does {s} listen on?", "what port do I use to reach {s}?")),
    Kind("cluster-region", "replacement", 2,
         ("the orders cluster", "the analytics cluster", "the staging cluster",
          "the batch cluster", "the ML training cluster"),
         ("eu-west-1", "us-east-2", "ap-southeast-1", "eu-central-1", "us-west-2",
          "ca-central-1", "eu-north-1"),
         ("{s} runs in region {v}.", "{s} is hosted in the {v} region."),
         ("We migrated {s} over to {v} during the maintenance window.",
          "{s} was moved; its nodes now sit in {v}."),
         ("Latency to {s} is best from {v}, where it lives now.",
          "Remember that {s} is deployed in {v}."),
         ("which region is {s} in now?", "where is {s} hosted?")),
    Kind("oncall-day", "replacement", 2,
         ("the platform team", "the payments team", "the data team", "the mobile team",
          "the growth team"),
         ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
         ("{s} hands over on-call every {v}.", "On-call shifts of {s} rotate on {v}."),
         ("{s} changed its rotation: the pager now switches hands on {v}.",
          "Starting this quarter {s} does the pager handoff on {v}."),
         ("The weekly pager swap for {s} is {v}.", "{s} passes duty to the next person each {v}."),
         ("which day does {s} hand over on-call?",
          "when does the on-call rotation of {s} switch?")),
    Kind("plan-price", "replacement", 2,
         ("the Pro plan", "the Team plan", "the Starter plan", "the Enterprise seat",
          "the annual Basic plan"),
         ("$12", "$15", "$19", "$24", "$29", "$39", "$49", "$59"),
         ("{s} costs {v} per month.", "{s} is priced at {v} monthly."),
         ("Pricing update: customers now pay {v} a month for {s}.",
          "After the pricing review, {s} went to {v} per seat each month."),
         ("Invoices for {s} show {v} monthly at the moment.", "Sales quotes {v} a month for {s}."),
         ("how much does {s} cost now?", "what is the current monthly price of {s}?")),
    Kind("person-role", "replacement", 2, PEOPLE,
         ("tech lead", "engineering manager", "staff engineer", "product manager",
          "site reliability engineer", "data scientist", "designer", "QA lead"),
         ("{s} is the team's {v}.", "On the core team, {s} has the {v} job."),
         ("{s} took on a new position: {v}.", "Congrats to {s}, who moved into the {v} role."),
         ("The org chart lists {s} as {v}.", "{s} currently serves as {v}."),
         ("what is {s}'s role now?", "what position does {s} hold?")),
    Kind("http-client", "replacement", 2,
         ("the ingest service", "the billing worker", "the CLI tool", "the notification service",
          "the scraper"),
         ("requests", "httpx", "aiohttp", "urllib3", "pycurl"),
         ("{s} uses {v} for its HTTP calls.", "Outgoing HTTP requests in {s} are made with {v}."),
         ("We ripped out the old client: {s} talks to remote APIs through {v} now.",
          "{s} was ported to {v} for network access."),
         ("When debugging network errors in {s}, look at {v}.",
          "The dependency list of {s} pins {v} as its web client."),
         ("which HTTP library does {s} use now?", "what does {s} use to make HTTP requests?")),
    Kind("orm", "replacement", 2,
         ("the admin backend", "the reporting app", "the orders service",
          "the user-profile service"),
         ("SQLAlchemy", "Peewee", "the Django ORM", "Tortoise ORM", "Pony ORM"),
         ("{s} accesses the database through {v}.", "{s} maps its tables with {v}."),
         ("Database code in {s} has been rewritten on top of {v}.",
          "{s} dropped its previous ORM in favour of {v}."),
         ("Models of {s} are declared using {v}.",
          "New queries in {s} should be written with {v}."),
         ("which ORM does {s} use?", "what library does {s} use to talk to the database?")),
    Kind("test-runner", "replacement", 2,
         ("the web frontend", "the mobile app", "the design system", "the marketing site"),
         ("Jest", "Vitest", "Mocha", "Playwright Test", "Cypress"),
         ("{s} runs its unit tests with {v}.", "The test suite of {s} is built on {v}."),
         ("{s} switched test runners and now relies on {v}.",
          "CI for {s} executes specs through {v} since the migration."),
         ("Write new specs for {s} against {v}.", "{v} is the runner behind every check in {s}."),
         ("which test runner does {s} use now?", "what do we run the tests of {s} with?")),
    Kind("db-version", "replacement", 2,
         ("the production database", "the analytics warehouse", "the staging database",
          "the reporting replica"),
         ("PostgreSQL 12", "PostgreSQL 13", "PostgreSQL 14", "PostgreSQL 15", "PostgreSQL 16",
          "PostgreSQL 17"),
         ("{s} runs {v}.", "{s} is on {v}."),
         ("{s} was migrated to {v} last weekend.",
          "The version change of {s} finished; it is {v} from now on."),
         ("Query planner behaviour in {s} is that of {v}.",
          "Extensions for {s} must support {v}."),
         ("which PostgreSQL version does {s} run?", "what database version is {s} on now?")),
    Kind("meeting-time", "replacement", 2,
         ("the weekly planning meeting", "the architecture review", "the design critique",
          "the sprint demo", "the customer sync"),
         ("9:00", "10:30", "11:00", "13:30", "14:00", "15:30", "16:00"),
         ("{s} starts at {v}.", "{s} is held at {v}."),
         ("{s} got rescheduled to {v} to suit the other time zone.",
          "Calendar change: {s} now begins at {v}."),
         ("Do not book anything at {v}, that slot is {s}.", "{s} kicks off at {v} these weeks."),
         ("what time is {s} now?", "when does {s} start?")),
    Kind("service-owner", "replacement", 2,
         ("the search index", "the email pipeline", "the feature-flag service", "the image CDN",
          "the audit log"),
         ("team Falcon", "team Otter", "team Heron", "team Lynx", "team Badger", "team Marten"),
         ("{s} is owned by {v}.", "{v} maintains {s}."),
         ("Ownership of {s} was handed to {v} in the reorg.",
          "{s} now belongs to {v}; page them for incidents."),
         ("Questions about {s}? Ask {v}.", "The code owners file lists {v} for {s}."),
         ("which team owns {s} now?", "who is responsible for {s}?")),
    Kind("ci-system", "replacement", 2,
         ("the monorepo", "the mobile repository", "the infrastructure repo", "the docs site"),
         ("Jenkins", "GitHub Actions", "GitLab CI", "CircleCI", "Buildkite", "Drone"),
         ("{s} is built by {v}.", "Builds of {s} run on {v}."),
         ("We moved the pipelines of {s} off the old server to {v}.",
          "{s} has its CI jobs defined in {v} after the migration."),
         ("Broken builds in {s} show up in {v}.", "To rerun a job for {s}, open {v}."),
         ("which CI system builds {s}?", "where do the builds of {s} run now?")),
    Kind("email-vendor", "replacement", 2,
         ("transactional email", "the newsletter", "the password-reset mail", "the invoice email"),
         ("SendGrid", "Mailgun", "Postmark", "Amazon SES", "SparkPost"),
         ("{s} is sent through {v}.", "We deliver {s} via {v}."),
         ("{s} goes out through {v} since we changed providers.",
          "The mail provider for {s} is {v} as of the contract renewal."),
         ("Bounces of {s} are reported in the {v} dashboard.", "Delivery logs of {s} live in {v}."),
         ("which provider sends {s}?", "what service do we use to deliver {s}?")),
    Kind("note-tool", "replacement", 2, PEOPLE,
         ("Notion", "Obsidian", "Logseq", "Apple Notes", "OneNote", "Bear"),
         ("{s} keeps personal notes in {v}.", "{s} prefers {v} for note-taking."),
         ("{s} migrated every notebook over to {v}.",
          "{s} gave up on the old app and writes everything in {v} now."),
         ("Share meeting minutes with {s} as a page in {v}.", "{s}'s to-do lists are all in {v}."),
         ("which note-taking app does {s} use now?", "where does {s} keep notes?")),
    Kind("budget", "replacement", 2,
         ("the marketing budget", "the cloud budget", "the travel budget",
          "the hardware budget"),
         ("12,000 euros", "15,000 euros", "18,000 euros", "22,000 euros", "25,000 euros",
          "30,000 euros"),
         ("{s} for this quarter is {v}.", "We can spend {v} out of {s} this quarter."),
         ("Finance revised {s}: the cap is now {v}.",
          "After the board meeting, {s} was reset to {v}."),
         ("Keep {s} under {v}.", "The spreadsheet shows {s} at {v} in total."),
         ("how big is {s} now?", "what is the current limit of {s}?")),
    Kind("default-branch", "replacement", 2,
         ("the api repository", "the website repository", "the sdk repository",
          "the infra repository"),
         ("master", "main", "trunk", "develop", "stable"),
         ("The default branch of {s} is {v}.", "Pull requests in {s} target {v}."),
         ("{s} renamed its primary branch to {v}; update your remotes.",
          "Merges in {s} land on {v} after the branch cleanup."),
         ("Branch protection in {s} guards {v}.", "Check out {v} when you clone {s}."),
         ("what is the default branch of {s}?",
          "which branch do pull requests in {s} target now?")),
    Kind("timeout", "replacement", 2,
         ("the payment client", "the search client", "the upload endpoint",
          "the webhook sender"),
         ("5 seconds", "10 seconds", "15 seconds", "30 seconds", "45 seconds", "60 seconds"),
         ("{s} has a request timeout of {v}.", "Calls from {s} give up after {v}."),
         ("We changed the deadline on {s}; it now waits {v} before failing.",
          "{s} was tuned to abort only after {v}."),
         ("Expect {s} to time out at {v}.", "The configured limit for {s} is {v} per call."),
         ("what is the timeout of {s}?", "how long does {s} wait before timing out?")),
    # plain contradictions: one word flips
    Kind("feature-flag", "negation", 3,
         ("the new checkout flow", "the beta search page", "the one-click reorder button",
          "the referral banner", "the dark mode preview", "the smart compose feature"),
         ("enabled", "disabled"),
         ("{s} is {v} in production.", "{s} is {v} for all customers."),
         ("Since the incident review, {s} has been {v} in production.",
          "Product decided: {s} stays {v} for everyone from today."),
         ("Do not flip it: {s} is meant to be {v}.", "Support confirms {s} is {v} right now."),
         ("is {s} enabled?", "is {s} turned on in production right now?")),
    Kind("setting", "negation", 3,
         ("two-factor login for the admin console", "the nightly backup of the wiki database",
          "auto-merge on the docs repository", "debug logging in the payment worker",
          "self-service sign-up on the community forum", "IPv6 on the edge proxies"),
         ("enabled", "disabled"),
         ("{s} is {v}.", "Currently {s} is {v} in the settings."),
         ("Heads-up: {s} was switched to {v} after the audit.",
          "Following the security review, {s} ended up {v}."),
         ("Double-checked the config: {s} remains {v}.", "{s} stays {v}; that is intentional."),
         ("is {s} enabled right now?", "what is the status of {s}?")),
)

#: filler notes: other topics than any fact (template, then the pools of its slots)
FILLERS: tuple[tuple[str, dict[str, tuple[str, ...]]], ...] = (
    ("Tried a new recipe: {dish} with {ingredient}; {verdict}.",
     {"dish": ("risotto", "shakshuka", "dal", "ramen", "paella", "gnocchi", "tacos", "curry"),
      "ingredient": ("smoked paprika", "fresh basil", "miso", "lemon zest", "roasted garlic",
                     "chili oil", "coconut milk"),
      "verdict": ("would cook it again", "too salty", "the kids loved it", "a bit bland",
                  "perfect for a weeknight")}),
    ("Garden log: planted {plant} along the {spot}.",
     {"plant": ("tomatoes", "lavender", "sunflowers", "garlic", "mint", "strawberries",
                "tulip bulbs", "kale"),
      "spot": ("south fence", "back wall", "herb bed", "shed", "front path", "compost heap")}),
    ("Finished reading {book}; the ending was {adj}.",
     {"book": ("The Left Hand of Darkness", "Middlemarch", "Piranesi", "The Overstory",
               "Beloved", "Station Eleven", "The Dispossessed", "Pachinko"),
      "adj": ("quietly devastating", "rushed", "perfect", "hard to follow", "hopeful",
              "surprising")}),
    ("Ran {n} km at an easy pace along the {route}.",
     {"n": ("5", "7", "8", "10", "12", "15", "21"),
      "route": ("river path", "harbour loop", "forest trail", "old railway line", "lake shore",
                "canal towpath")}),
    ("{friend}'s birthday is coming up; they would like {gift}.",
     {"friend": ("Marta", "Yusuf", "Ingrid", "Pablo", "Noor", "Theo", "Sadie", "Ravi"),
      "gift": ("a good fountain pen", "concert tickets", "a cookbook", "a houseplant",
               "board games", "a climbing day pass")}),
    ("Podcast worth sharing: an episode about {topic}.",
     {"topic": ("the history of maps", "sleep science", "octopus intelligence",
                "medieval bread", "the economics of football", "volcano monitoring",
                "how bridges fail", "urban beekeeping")}),
    ("Watched {movie} with the kids; {adj} film.",
     {"movie": ("Spirited Away", "Paddington 2", "Wall-E", "The Iron Giant", "Coco",
                "My Neighbor Totoro", "Up"),
      "adj": ("a lovely", "a long", "a funny", "a moving", "a noisy")}),
    ("Gym: {exercise}, {sets} sets of {reps}.",
     {"exercise": ("squats", "deadlifts", "pull-ups", "bench press", "lunges", "rows"),
      "sets": ("3", "4", "5"), "reps": ("5", "8", "10", "12")}),
    ("Idea for a blog post: {topic}.",
     {"topic": ("learning to sketch at forty", "what sourdough taught me about patience",
                "a year of cycling to work", "notes from a silent retreat",
                "repairing an old radio", "why I stopped using a smartwatch")}),
    ("The {appliance} at home makes a {noise} noise; call a repair person.",
     {"appliance": ("washing machine", "fridge", "dishwasher", "boiler", "dryer"),
      "noise": ("grinding", "rattling", "humming", "clicking", "squeaking")}),
    ("Bought {food} and {food2} at the farmers market.",
     {"food": ("honey", "goat cheese", "plums", "rye bread", "chanterelles", "cherries"),
      "food2": ("fresh eggs", "walnuts", "leeks", "apple cider", "pickles", "beetroot")}),
    ("Talk notes: {speaker} spoke about {topic} at the meetup.",
     {"speaker": ("Grace", "Linus", "Ada", "Barbara", "Ken", "Margaret"),
      "topic": ("type systems for beginners", "accessible color palettes",
                "keyboard-driven design", "the craft of error messages",
                "writing good commit history")}),
    ("Language practice: learned {n} new {language} words about {theme}.",
     {"n": ("10", "12", "15", "20"),
      "language": ("Italian", "Japanese", "Dutch", "Portuguese", "Greek"),
      "theme": ("food", "weather", "family", "travel", "the body")}),
    ("Bike maintenance: replaced the {part} and cleaned the {part2}.",
     {"part": ("chain", "brake pads", "rear tyre", "handlebar tape", "cassette"),
      "part2": ("derailleur", "rims", "frame", "pedals")}),
    ("Coffee beans from {origin} taste {taste} with the pour-over.",
     {"origin": ("Ethiopia", "Colombia", "Kenya", "Guatemala", "Sumatra", "Rwanda"),
      "taste": ("of blueberries", "nutty", "bright and citrusy", "like dark chocolate",
                "a little sour")}),
    ("Reminder to water the {plant} and turn the {plant2} toward the window.",
     {"plant": ("fern", "monstera", "orchid", "basil pot", "lemon tree"),
      "plant2": ("cactus", "pothos", "snake plant", "rubber plant")}),
    ("Finished a {n}-piece jigsaw of {scene}.",
     {"n": ("500", "750", "1000", "1500"),
      "scene": ("a lighthouse at dusk", "a Venetian canal", "a bookshop window",
                "a mountain lake", "a map of the stars")}),
    ("Weekend trip idea: hike to the {place} and camp by the {water}.",
     {"place": ("ridge hut", "old fire tower", "waterfall", "stone circle", "pass"),
      "water": ("lake", "stream", "reservoir", "bay")}),
    ("The neighbours' {pet} got out again and sat in our {spot}.",
     {"pet": ("cat", "tortoise", "beagle", "rabbit", "parrot"),
      "spot": ("garden", "porch", "kitchen", "car", "shed")}),
    ("Sketchbook: drew {subject} in {medium} this morning.",
     {"subject": ("the harbour cranes", "a sleeping dog", "the market stalls", "pine cones",
                  "the view from the balcony"),
      "medium": ("ink", "watercolour", "charcoal", "pencil")}),
)


@dataclass(frozen=True)
class Statement:
    key: str  # "home-city-1/t0", or "filler-007"
    content: str
    occurred_at: datetime
    fact: str | None = None
    stage: str | None = None  # t0 (original), t1 (replacement), t2 (repeat of the current)
    value: str | None = None


@dataclass(frozen=True)
class Fact:
    key: str
    kind: str
    change: str  # "replacement" | "negation"
    subject: str
    old: str
    new: str

    def statement_keys(self) -> tuple[str, str, str]:
        return (f"{self.key}/t0", f"{self.key}/t1", f"{self.key}/t2")


@dataclass(frozen=True)
class Query:
    text: str
    fact: str
    current: tuple[str, ...]  # keys of the statements holding the current value
    stale: tuple[str, ...]  # keys of those holding a replaced one


@dataclass(frozen=True)
class Stream:
    seed: int
    statements: tuple[Statement, ...]  # in stream order, event times increasing
    facts: tuple[Fact, ...]
    queries: tuple[Query, ...]

    def fillers(self) -> list[Statement]:
        return [s for s in self.statements if s.fact is None]


def _sentence(template: str, **slots: str) -> str:
    text = template.format(**slots)
    return text[0].upper() + text[1:]


def _facts(rng: random.Random) -> list[tuple[Fact, Kind]]:
    """Every kind's facts, interleaved: the first fact of each kind, then the second, ..."""
    per_kind: list[list[tuple[Fact, Kind]]] = []
    for kind in KINDS:
        subjects = rng.sample(kind.subjects, kind.count)
        if kind.change == "negation":
            pairs = [tuple(rng.sample(kind.values, 2)) for _ in subjects]
        else:
            values = rng.sample(kind.values, 2 * kind.count)
            pairs = [(values[2 * i], values[2 * i + 1]) for i in range(kind.count)]
        per_kind.append([
            (Fact(f"{kind.name}-{i + 1}", kind.name, kind.change, s, old, new), kind)
            for i, (s, (old, new)) in enumerate(zip(subjects, pairs, strict=True))])
    out: list[tuple[Fact, Kind]] = []
    for i in range(max(k.count for k in KINDS)):
        out.extend(group[i] for group in per_kind if i < len(group))
    return out


def _fillers(rng: random.Random, n: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for _ in range(n * 100 + 1):
        if len(out) == n:
            return out
        template, pools = FILLERS[rng.randrange(len(FILLERS))]
        text = _sentence(template, **{k: rng.choice(v) for k, v in pools.items()})
        if text not in seen:
            seen.add(text)
            out.append(text)
    raise ValueError(f"the filler templates hold fewer than {n} distinct notes")


def max_facts() -> int:
    return sum(k.count for k in KINDS)


def build(seed: int = 7, facts: int | None = None, fillers: int = 200) -> Stream:
    """The stream: `facts` changing facts (all of them by default: `max_facts()`), each
    stated three times, among `fillers` unrelated notes, with their questions."""
    rng = random.Random(seed)
    chosen = _facts(rng)
    if facts is not None:
        if not 1 <= facts <= len(chosen):
            raise ValueError(f"facts must be between 1 and {len(chosen)}")
        chosen = chosen[:facts]
    # (place along the stream, tie-break, statement without its time)
    placed: list[tuple[float, int, dict]] = []
    queries: list[Query] = []
    for fact, kind in chosen:
        places = sorted(rng.random() for _ in STAGES)
        for stage, place, wordings in zip(STAGES, places, (kind.t0, kind.t1, kind.t2),
                                          strict=True):
            value = fact.old if stage == "t0" else fact.new
            content = _sentence(rng.choice(wordings), s=fact.subject, v=value)
            placed.append((place, len(placed), {"key": f"{fact.key}/{stage}", "content": content,
                                                "fact": fact.key, "stage": stage,
                                                "value": value}))
        t0, t1, t2 = fact.statement_keys()
        for question in rng.sample(kind.queries, rng.choice((1, 2))):
            queries.append(Query(_sentence(question, s=fact.subject), fact.key, (t1, t2), (t0,)))
    for i, content in enumerate(_fillers(rng, fillers)):
        placed.append((rng.random(), len(placed), {"key": f"filler-{i:03d}",
                                                   "content": content}))
    placed.sort(key=lambda p: (p[0], p[1]))
    when = START
    statements: list[Statement] = []
    for _place, _tie, item in placed:
        when += timedelta(hours=rng.uniform(20, 40))
        statements.append(Statement(occurred_at=when, **item))
    return Stream(seed, tuple(statements), tuple(f for f, _ in chosen), tuple(queries))


def _mentions(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase.lower())}(?!\w)", text.lower()) is not None


def value_held(text: str, fact: Fact) -> str | None:
    """For a memory the stream did not write as such (merged or rewritten by the daemon):
    "current" when it names the fact's subject and its current value, "stale" when it names
    the subject and only the replaced value, None otherwise."""
    subject = re.sub(r"^the ", "", fact.subject, flags=re.IGNORECASE)
    if not _mentions(text, subject):
        return None
    if _mentions(text, fact.new):
        return "current"
    if _mentions(text, fact.old):
        return "stale"
    return None
