"""The collaborators of the service that span several modules, each one class.

Each is assembled from the operations of one concern, a module apiece (so that no module
grows past a reader's patience); none of those defines a method another one also defines,
so nothing is overridden (tests/test_service_shape.py holds that). The collaborators that
live in one module are there: `Reads` (reads.py), `Files` (files.py), `Feedback`
(graph_feedback.py), `Sessions` (session_turns.py), `Hooks` (hooks.py), `Pipeline`
(pipeline_ops.py), `Documents` (documents.py), `Health` (status.py). `MemoryService`
(service/__init__.py) composes them all.
"""

from __future__ import annotations

from mnemonist.service.base import ServiceCore
from mnemonist.service.bundle_import import BundleImportOps
from mnemonist.service.consolidation import ConsolidationOps
from mnemonist.service.duplicates import DuplicateOps
from mnemonist.service.export import ExportOps
from mnemonist.service.forget import ForgetOps
from mnemonist.service.graph_relations import GraphRelationOps
from mnemonist.service.graph_view import GraphViewOps
from mnemonist.service.importer import ImportOps
from mnemonist.service.knowledge import KnowledgeOps
from mnemonist.service.pipeline_ops import Pipeline
from mnemonist.service.principles import PrincipleOps
from mnemonist.service.remember import RememberOps


class Memories(ForgetOps, RememberOps):
    """The writes of memories: remember with its write gate (remember.py, write_gate.py),
    modify, delete and recover (mutations.py), purge (purge.py) and forget (forget.py)."""


class Curation(ConsolidationOps, DuplicateOps, PrincipleOps):
    """What keeps the store tidy over time: the consolidation engine (consolidation.py), the
    duplicate review queue (duplicates.py) and principles (principles.py). The extraction
    runtime's LLM (`pipeline`) judges and proposes."""

    def __init__(self, core: ServiceCore, pipeline: Pipeline) -> None:
        super().__init__(core)
        self.pipeline = pipeline


class Graph(KnowledgeOps, GraphViewOps, GraphRelationOps):
    """The knowledge graph: entities and neighbourhoods (graph.py), expansion and impact
    (knowledge.py), the overview and diagnostics (graph_view.py), and stated relations
    (graph_relations.py). The diagnostics report the principles (`curation`)."""

    def __init__(self, core: ServiceCore, curation: Curation) -> None:
        super().__init__(core)
        self.curation = curation


class Carry(ExportOps, BundleImportOps, ImportOps):
    """What moves in and out: the export and backups (export.py), a bundle's import
    (bundle_import.py), and bulk import of memories (importer.py, through remember's path:
    `memories`)."""

    def __init__(self, core: ServiceCore, memories: Memories) -> None:
        super().__init__(core)
        self.memories = memories
