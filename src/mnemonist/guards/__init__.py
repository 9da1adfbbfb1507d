"""Two process-wide rules every layer may rely on, at the bottom of the layers (they import
nothing of mnemonist): `write_tx`, no model or network call while the write lock is held, and
`private_files`, the files that hold memories are readable by their owner alone."""
