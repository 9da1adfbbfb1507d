"""Sessions of coding agents: checkpoints and their digests, the debounced flush queue,
transcripts, and the context blocks the harness hooks inject (document 000: session
checkpoints, continuity, lossless transcripts; document 004: compaction resilience)."""
