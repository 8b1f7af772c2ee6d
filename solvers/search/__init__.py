"""Design-space search: every valid layout of one scenario, evaluated by the same vectorised engine.

``space`` builds the candidate space (``enumerate_layouts``, ``count_layouts``), ``ranking`` evaluates and
ranks it (``search_resolved``: layouts and their figures, the Pareto front), ``request`` reads a document's
``search`` section, ``envelope`` says how close a layout is to the validated runs, and ``document`` composes the search document (``search_document``), which needs the
report: import it from ``solvers.search.document``. This package's own names stay below the report, so that
a single solve with ``layout: auto`` can rank layouts without an import circle.
"""

from __future__ import annotations

from solvers.search.envelope import Envelope, load_envelope, support_blocks
from solvers.search.ranking import (
    DEFAULT_PARETO,
    EVAL_CHUNK_LAYOUTS,
    OBJECTIVES,
    PARETO_METRICS,
    R_MEMORY,
    STEP_TERMS,
    Progress,
    SearchResult,
    check_objectives,
    explain_difference,
    layout_dict,
    ledger_for_row,
    ledger_metrics,
    reason_key,
    search_resolved,
)
from solvers.search.request import (
    DEFAULT_TOP,
    DEFAULT_WITHIN_VALIDATED,
    MAX_TOP,
    SEARCH_KEYS,
    SearchRequest,
    parse_search_request,
    stated_layout,
    with_auto_layout,
)
from solvers.search.space import (
    MAX_AXIS_INTEGER,
    MAX_AXIS_VALUES,
    MAX_CP,
    MAX_EP,
    MAX_LAYOUTS_PER_SEARCH,
    MAX_MICROBATCH_SEQS,
    MAX_PP,
    MAX_TP_NODES,
    MIN_TOKENS_PER_CP_RANK,
    SPACE_AXES,
    VIRTUAL_STAGES,
    Enumeration,
    SearchSpace,
    count_layouts,
    default_space,
    enumerate_layouts,
    space_from_document,
    stated_numerics,
    take,
)

__all__ = [
    "DEFAULT_PARETO",
    "DEFAULT_TOP",
    "DEFAULT_WITHIN_VALIDATED",
    "EVAL_CHUNK_LAYOUTS",
    "MAX_AXIS_INTEGER",
    "MAX_AXIS_VALUES",
    "MAX_CP",
    "MAX_EP",
    "MAX_LAYOUTS_PER_SEARCH",
    "MAX_MICROBATCH_SEQS",
    "MAX_PP",
    "MAX_TOP",
    "MAX_TP_NODES",
    "MIN_TOKENS_PER_CP_RANK",
    "OBJECTIVES",
    "PARETO_METRICS",
    "R_MEMORY",
    "SEARCH_KEYS",
    "SPACE_AXES",
    "STEP_TERMS",
    "VIRTUAL_STAGES",
    "Enumeration",
    "Envelope",
    "Progress",
    "SearchRequest",
    "SearchResult",
    "SearchSpace",
    "check_objectives",
    "count_layouts",
    "default_space",
    "enumerate_layouts",
    "explain_difference",
    "layout_dict",
    "ledger_for_row",
    "ledger_metrics",
    "load_envelope",
    "parse_search_request",
    "reason_key",
    "search_resolved",
    "space_from_document",
    "stated_layout",
    "stated_numerics",
    "support_blocks",
    "take",
    "with_auto_layout",
]
