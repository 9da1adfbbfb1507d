"""The knowledge graph's logic: walks over it, what recall takes from it (the boost, the
traversal channel), what a caller may see of it, and the passes that keep it (the LLM's
triples written, upkeep, communities, bridges, entity health, sleep replay, principles).

Its SQL is the store's (`store/graph*.py`, `store/entity_links.py`, `store/entity_health.py`);
the text readers are `text/`'s. It sits between search and the store: `search`, `pipeline`
and `service` use it, and it imports none of them (docs/architecture.md).
"""
