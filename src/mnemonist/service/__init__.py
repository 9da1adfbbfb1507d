"""The one door: every read and write of every face (HTTP, CLI, MCP, Python) goes through
`MemoryService`."""

from mnemonist.service.bundle_import import BundleImportOps
from mnemonist.service.consolidation import ConsolidationOps
from mnemonist.service.documents import DocumentOps
from mnemonist.service.duplicates import DuplicateOps
from mnemonist.service.errors import BadRequest, Conflict, NotFound, ServiceError, Unavailable
from mnemonist.service.export import ExportOps
from mnemonist.service.files import FileOps
from mnemonist.service.forget import ForgetOps
from mnemonist.service.gates import GateOps
from mnemonist.service.graph_feedback import GraphFeedbackOps
from mnemonist.service.graph_relations import GraphRelationOps
from mnemonist.service.graph_view import GraphViewOps
from mnemonist.service.hooks import HookOps
from mnemonist.service.importer import ImportOps
from mnemonist.service.knowledge import KnowledgeOps
from mnemonist.service.pipeline_ops import PipelineOps
from mnemonist.service.principles import PrincipleOps
from mnemonist.service.reads import ReadOps
from mnemonist.service.sources import SourceOps
from mnemonist.service.status import StatusOps


class MemoryService(
    FileOps, HookOps, ImportOps, ForgetOps, ReadOps, SourceOps, GateOps, StatusOps, DocumentOps,
    PipelineOps, ExportOps, BundleImportOps, GraphViewOps, KnowledgeOps,
    GraphFeedbackOps, GraphRelationOps, DuplicateOps, ConsolidationOps, PrincipleOps,
):
    """remember / recall / modify / forget / recover and the reads around them."""


__all__ = [
    "BadRequest",
    "Conflict",
    "MemoryService",
    "NotFound",
    "ServiceError",
    "Unavailable",
]
