"""Word lists of the fast-path entity extractor (`text/entities.py`): known technology names
with their canonical forms, and the words that make a capitalised phrase junk.

The lists are judgement, kept small on purpose: they only have to catch what capitalisation
alone gets wrong (sentence starts, greetings, Title Case log lines, dates).
"""

from __future__ import annotations

from mnemonist.text.tokens import STOP_WORDS


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# "Canonical: alias, alias". The canonical form's lowercase is an alias too. A name marked "*"
# is an ordinary word as well ("react", "swift", "slack"): it counts only when written
# capitalised, through the capitalised-name path, never from lowercase text.
_TECHNOLOGY = """
PostgreSQL: postgres, pg*
MySQL
SQLite: sqlite3
MongoDB: mongo
Redis
Elasticsearch
OpenSearch
DynamoDB
DuckDB
ClickHouse
BigQuery
Snowflake*
Supabase
Firebase
Neo4j
Qdrant
pgvector
Pinecone*
FTS5
Python: python3
TypeScript
JavaScript
Go*: golang
Rust*
Java*
Kotlin
Swift*
Ruby*
PHP
Scala
Elixir
Haskell
Lua
Bash
Zsh
PowerShell
SQL
GraphQL
HTML
CSS
JSON
YAML: yml
TOML
Markdown
React*
React Native
Next.js: nextjs
Node.js: nodejs
Deno
Bun*
Vue.js: vue*, vuejs
Svelte
SvelteKit
Angular*
Django
Flask*
FastAPI
Express*: express.js, expressjs
Ruby on Rails: rails*
Spring Boot
Laravel
Tailwind CSS: tailwind, tailwindcss
Vite
Webpack
Jest*
pytest
Playwright
Cypress*
Electron*
Tauri
htmx
jQuery
Pydantic
NumPy
pandas*
PyTorch: torch*
TensorFlow
ONNX
ONNX Runtime: onnxruntime
scikit-learn: sklearn
Hugging Face: huggingface
LangChain
LlamaIndex
Docker
Kubernetes: k8s
Helm*
Terraform
Ansible
nginx
AWS
GCP: google cloud
Azure*
Vercel
Netlify
Cloudflare
Heroku
Linux
Ubuntu
Debian
macOS: osx
Windows*
iOS
Android
Git
GitHub
GitLab
Bitbucket
GitHub Actions
GitHub Copilot: copilot
Jenkins*
CircleCI
Kafka
RabbitMQ
gRPC
OAuth
JWT
WebSocket: websockets
npm
pnpm
Yarn*
Poetry*
Homebrew*
VS Code: vscode, visual studio code
Vim
Neovim: nvim
Emacs
JetBrains
IntelliJ
Xcode
Jira
Confluence
Slack*
Notion*
Linear*
Figma
Obsidian*
Cursor*
Sentry*
Datadog
Grafana
Prometheus*
OpenAI
Anthropic
Claude
Claude Code
ChatGPT
GPT-4: gpt4
Codex*
OpenCode
Ollama
Gemini*
Llama*
Mistral*
MCP
Stripe*
Shopify
Salesforce
Zoom*
"""


def _parse_technology() -> tuple[dict[str, str], frozenset[str]]:
    aliases: dict[str, str] = {}
    loose: set[str] = set()
    for line in _TECHNOLOGY.strip().splitlines():
        head, _, rest = line.partition(":")
        canonical = head.strip().rstrip("*")
        names = [head.strip().lower(), *(a.strip().lower() for a in rest.split(",") if a.strip())]
        for name in names:
            alias = name.rstrip("*")
            aliases[alias] = canonical
            if not name.endswith("*"):
                loose.add(alias)
    return aliases, frozenset(loose)


#: lowercase alias -> canonical form, every alias; LOOSE: those matched in any case
TECH_ALIASES, TECH_LOOSE = _parse_technology()
#: first words of the multi-word names ("claude" of "claude code")
TECH_FIRST_WORDS = frozenset(a.split()[0] for a in TECH_LOOSE if " " in a)

#: lowercase words joining capitalised words into one name: "Bank of America", "Ludwig van"
CONNECTORS = _words("of de da di du del der den van von la le")

TIME_WORDS = _words("""
    monday tuesday wednesday thursday friday saturday sunday weekday weekend weekends
    january february march april may june july august september october november december
    sept oct nov dec
    today tomorrow yesterday tonight morning afternoon evening night noon midnight
    day days week weeks month months year years quarter daily weekly monthly yearly annual
    spring summer autumn winter eod eow mon tue tues wed thu thur thurs fri sat sun
""")

#: Words that open a Title Case log line or a greeting, never a name: "Fixed Login Bug",
#: "Hey Mel", "Using PostgreSQL". Stripped from the front of a capitalised phrase anywhere.
LEADING_NOISE = _words("""
    fixed fix fixes fixing added add adds adding updated update updates updating removed
    remove removes removing created create creates implemented implement refactored refactor
    merged merge deployed deploy released release changed change improved improve moved move
    renamed rename deleted delete installed install configured configure built build wrote
    write tested test using use used switched switch migrated migrate bumped bump upgraded
    upgrade enabled enable disabled disable started start stopped stop tried try made make
    checked check see saw met meet visited visit went go going joined join bought buy called
    call asked ask told tell said say learned learn loved love liked like watched watch read
    hey hi hello dear welcome thanks thank congrats congratulations sorry please wow yes yeah
    yep nope ok okay oh ah aw awesome cool great nice good well dear bye goodbye cheers
    happy merry best kb mb gb tb
""")

#: Frequent English words (besides the stop words): a sentence-initial capital on one of them
#: is grammar, not a name, and a phrase mostly made of them is prose.
COMMON = STOP_WORDS | LEADING_NOISE | _words("""
    also although always another anyway anything anyone anybody around away back bad
    basically because better big both bring came can come comes coming could definitely did
    different does done doing down each easy else enough even ever every everyone everything
    exactly feel feeling felt few finally find first found friend friends fun funny gave get
    gets getting give given gives glad got guess had has have help here hey hmm hope hopefully
    how however huge idea im important instead interesting it its just keep kind know last
    later least let lets life little look looking looks lot lots love lovely maybe mean
    means meant might mine more most much must need needs never new next no none not nothing
    now often old one only other others our out over own part people perfect perhaps place
    plan plans pretty probably put quite rather real really right same seems seem seemed
    sent share shared should show since so some someone something sometimes soon sounds
    sound still stuff such super sure take taking tell than that thats then there these
    thing things think thinking though thought through time together too totally true try
    trying two us very want wanted wants was way ways we what whatever when where which
    while who whole why will wish with without wonderful work worked working world would
    yes yet you your yours
    note notes update summary todo important warning info tip reminder question answer
    action decision status next step steps goal goals reason context background result
    remember recall memory memories user users agent agents someone anyone
    mr mrs ms dr sir madam mom mum dad mother father brother sister son daughter wife
    husband family kids kid baby guys guy folks man woman men women girl boy
    woohoo hooray absolutely honestly seriously lol omg btw tbh imo idk ttyl brb haha hahaha
    yup yea yay aww awww woah whoa ugh hmm
""") | _words("""
    understood noted agreed acknowledged ack confirmed gotcha certainly indeed correct
    alright affirmative fine excellent thx ty np
""")  # replies and acknowledgements: "Understood, I will do that.", "Noted!", "OK, Agreed."

#: A last word that makes a phrase a generic thing, not a name: "Error Fix", "Data Type",
#: "Page View", "Background Color", "Login Bug". Alone, these are never entities either.
GENERIC = _words("""
    error errors fix fixes bug bugs issue issues problem feature features update updates
    meeting meetings call calls session sessions task tasks ticket tickets todo list lists
    item items value values data file files folder page pages view views screen type types
    color colour radius width height size margin padding border style styles font fonts
    background button buttons field fields form forms input output test tests function
    functions method methods variable variables class classes module modules option options
    setting settings config configuration status state result results request requests
    response responses message messages event events example examples thing things stuff
    note notes idea ideas step steps plan plans version versions release branch commit
    change changes mode modes api apis url urls id ids ui ux cli db sdk app apps tool tools
    code script scripts log logs report reports doc docs document documents readme faq
    fyi asap eta tbd wip pr prs ok
""")

#: Alone, these are never entities either ("The System", "the Team"), though a phrase may end
#: with them ("Payments Team", "Secret Service").
GENERIC_ALONE = GENERIC | _words("""
    system systems project projects team teams service services server servers database
    company product products client clients customer customers manager managers group
    internet web website email phone office home school work job everyone name names ms
    owner owners author authors assignee assignees reviewer reviewers approver maintainer
    maintainers admin admins administrator moderator member members contributor
    contributors participant participants host guest guests sender recipient lead leads
    assistant assistants bot bots human humans operator operators
    hub hubs cluster clusters dashboard repo repos repository pipeline
    workflow workflows endpoint endpoints backend frontend
""")  # roles and fields ("Owner: Alice", "Assistant: ..."), parts of a system ("the Hub")
