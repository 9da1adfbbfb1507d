"""Word lists of the noun-phrase reader (`text/phrases.py`). Judgement, kept small: they only
decide which modifiers make a common noun a particular thing ("the *nightly* backup job") and
which heads never name one ("last *week*", "a *lot*")."""

from __future__ import annotations


def words(text: str) -> frozenset[str]:
    """The words of `text`, split on whitespace, as a set."""
    return frozenset(text.split())


_words = words


#: adjectives that say what kind of thing it is (a class of things people name and come back
#: to), not how it is: "the mobile app", "the nightly build", but not "the new server"
CLASSIFYING = _words("""
    nightly daily weekly monthly hourly quarterly yearly annual biweekly
    mobile internal external public private legacy remote local global regional
    frontend backend front-end back-end serverless relational distributed primary secondary
    central corporate financial medical legal technical musical digital electronic
    automated automatic manual integration end-to-end unit functional visual
    national international municipal federal state
    online offline physical virtual
    annual semiannual
    canary experimental beta alpha stable
    administrative editorial academic educational environmental marketing
    chinese english french german spanish italian japanese korean indian mexican
    thai greek american european african asian british canadian australian irish
""")

#: heads that never name a thing: time, quantity, manner, vague nouns
HEAD_STOP = _words("""
    time times day days week weeks weekend weekends month months year years hour hours
    minute minutes second seconds moment moments morning mornings evening evenings night
    nights afternoon today tonight tomorrow yesterday decade decades season
    lot lots bit bits kind kinds sort sorts way ways thing things stuff part parts piece
    number numbers amount amounts couple bunch deal idea ideas reason reasons point points
    fact facts question questions answer answers matter matters sense feeling feelings
    experience experiences memory memories side sides end ends start beginning rest
    one ones someone something everything anything nothing everyone anyone
    reminder note notes example examples case cases instance instances
    chance chances opportunity opportunities step steps result results change changes
    percent percentage rate rates level levels total size sizes limit limits quota quotas
    latency latencies throughput performance usage uptime downtime traffic load cost costs
    price prices speed view views visit visits count counts
""")

#: determiners and quantifiers before a phrase: dropped from its display
DETERMINERS = _words("""
    the a an this that these those my our your his her their its
    all some every each both any no many few several most other another such
    what which whose either neither same
""")

#: a first word that is a time or an order, not a kind: "last week's deploy", "next sprint"
MODIFIER_STOP = _words("""
    last next previous first second third final current recent latest earlier later
    same other whole entire own only main
    today tomorrow yesterday tonight
""")

#: gerunds that name a kind of thing before a noun ("the reporting dashboard", "the billing
#: service"); any other -ing word before a noun reads as a verb ("love running marathons")
#: unless a determiner opens the phrase ("the *streaming* pipeline")
GERUND_MODIFIERS = _words("""
    billing reporting logging monitoring streaming caching messaging routing scheduling
    shipping hiring onboarding staging accounting marketing engineering consulting banking
    trading lending publishing recruiting ticketing ordering pricing indexing labeling
    labelling tracing alerting paging queueing queuing rendering signing fundraising
    networking
""")

#: verbs of the relation patterns (`text/relations.py`): tagged as a plural noun right after a
#: noun ("the mobile app *talks* to"), they are the verb
RELATION_VERBS = _words("""
    talks writes reads depends uses calls runs sends pulls pushes owns maintains needs
    requires relies connects stores dumps consumes queries replaces contains includes leads
    manages joins lives works publishes uploads saves logs fetches loads subscribes backs
    copies exports syncs mirrors imports moves migrates hosts serves feeds streams
    talk write read depend use call run send pull push own maintain need require rely
    connect store dump consume query replace contain include lead manage join live work
    publish upload save log fetch load subscribe copy export sync mirror import move migrate
    host serve feed stream
""")

#: a phrase's head that makes "joined X" a job, not a membership
WORKPLACE_HEADS = _words("""
    team teams company startup firm department squad org organisation organization agency
    bank lab labs studio office hospital school university clinic store shop restaurant
    bakery cafe
""")

#: a role word after a name adds nothing to it: "the ShopApi service", "the Redpanda cluster",
#: "the PostgreSQL database" are ShopApi, Redpanda and PostgreSQL
ROLE_HEADS = _words("""
    service services job jobs app apps server servers module modules library libraries
    package packages worker workers cache caches database databases db dbs api apis client
    clients pipeline pipelines cluster clusters component components system systems instance
    instances repo repository project bucket buckets queue queues topic topics
""")
