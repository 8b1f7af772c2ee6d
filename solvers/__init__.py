"""Training-plan solvers: scenario document in, report document out (CONTRACT.md v1).

Pure Python and numpy (SciPy only for the calibration fit). ``solve`` turns one scenario into one report;
``solve_many`` does a batch; ``resolve`` validates and resolves a scenario without solving it;
``validate_scenario`` refuses all that a solve would refuse (a layout's engine rules, nothing that fits);
``validate_part`` checks one part (model, cluster, site, training, economics) on its own; ``catalog_document``
lists the presets.
"""

from __future__ import annotations

from solvers.canonical import canonical_hash, canonical_json
from solvers.catalog import catalog_document
from solvers.entry import SOLVER_VERSION, solve, solve_many, solve_resolved, validate_scenario
from solvers.errors import FieldError, ScenarioError, SolverInternalError
from solvers.inputs import (
    FIELD_LIMITS,
    PARTS,
    SCHEMA_VERSION,
    Resolved,
    resolve,
    scenario_json_schema,
    validate_part,
)

__all__ = [
    "FIELD_LIMITS",
    "PARTS",
    "SCHEMA_VERSION",
    "SOLVER_VERSION",
    "FieldError",
    "Resolved",
    "ScenarioError",
    "SolverInternalError",
    "canonical_hash",
    "canonical_json",
    "catalog_document",
    "resolve",
    "scenario_json_schema",
    "solve",
    "solve_many",
    "solve_resolved",
    "validate_part",
    "validate_scenario",
]
