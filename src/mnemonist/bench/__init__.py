"""Benchmarks of the daemon in-process: a deterministic synthetic corpus (`synthetic`),
latency statistics and process memory readers (`stats`), and the scale benchmark (`scale`),
run with `mnemonist bench scale`.

Nothing here is imported by the daemon itself; timings are reported, never asserted.
"""
