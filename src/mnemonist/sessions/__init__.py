"""Sessions of coding agents: checkpoints and their digests, the debounced flush queue,
transcripts, and the context blocks the harness hooks inject (session checkpoints,
continuity, lossless transcripts, and resilience to the harness compacting its context)."""
