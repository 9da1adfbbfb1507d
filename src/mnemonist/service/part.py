"""What every collaborator of the service holds: the shared state (`ServiceCore`)."""

from __future__ import annotations

from mnemonist.service.base import ServiceCore


class Part:
    """One collaborator of `MemoryService` (service/__init__.py, where they are composed).

    A part reads and writes through `self.core` (database, configuration, provider, indexes,
    searcher); it calls another part only through an attribute its constructor was given
    (`self.memories`, `self.files`, ...), so that every dependency between parts is named in
    `MemoryService.__init__`."""

    def __init__(self, core: ServiceCore) -> None:
        self.core = core
