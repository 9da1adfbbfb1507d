"""Pure text utilities: normalisation and hashing, credential scrubbing, save prefixes,
tokenisation and safe FTS5 queries. No I/O; standard library only."""

from mnemonist.text.normalize import NormalizedContent, normalize_and_hash
from mnemonist.text.prefix import ParsedPrefix, infer_type, parse_prefix
from mnemonist.text.scrub import ScrubResult, scrub_credentials
from mnemonist.text.tokens import STOP_WORDS, content_tokens, fts_match_query, tokenize

__all__ = [
    "STOP_WORDS",
    "NormalizedContent",
    "ParsedPrefix",
    "ScrubResult",
    "content_tokens",
    "fts_match_query",
    "infer_type",
    "normalize_and_hash",
    "parse_prefix",
    "scrub_credentials",
    "tokenize",
]
