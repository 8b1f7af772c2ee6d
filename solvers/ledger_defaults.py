"""Defaults of the reliability, checkpoint, schedule, energy, carbon, water and TCO ledger.

Each value is keyed by its path in the scenario document (CONTRACT.md) and carries its unit and its source,
so that a report can list every number it rests on. They are the rows of the field table
(``solvers.inputs.fields``) in the ledger's sections; the scenario parser fills a field from there only when
the user (and, for ``site.*``, the chosen region in ``solvers.catalog.regions``) leaves it out.

Conventions are named strings, never booleans, so that a report can say which one produced a figure:

* ``MTBF_CONVENTIONS``: ``node_series`` (every component of a node in series, cluster MTBF = node MTBF /
  nodes) or ``gpu_only`` (GPU MTTF / GPU count, the shortcut of the mlsysim tutorial text, seed 000 §3).
* ``INTERVAL_METHODS``: ``daly`` (Daly 2006 higher-order optimum), ``young`` (Young 1974, sqrt(2 C M)) or
  ``exact`` (the exact optimum of the default ``expected_loss`` ledger, T = M (1 + W0(-e^(-1-C/M)))).
* ``GOODPUT_LEDGERS``: the first is the default; the other two reproduce the two ledgers that seed 000 finds
  side by side in mlsysim, so that published figures can be traced to their convention.
"""

from __future__ import annotations

from dataclasses import dataclass

from solvers.inputs.fields import TABLE
from solvers.specs import GOODPUT_LEDGERS, INTERVAL_METHODS, MTBF_CONVENTIONS

__all__ = ["DEFAULTS", "GOODPUT_LEDGERS", "INTERVAL_METHODS", "MTBF_CONVENTIONS", "Default"]


@dataclass(frozen=True)
class Default:
    value: object  # float | int | str | tuple | None
    unit: str  # "h", "s", "W", "USD", "kgCO2e", "fraction", "" ...
    source: str  # data sheet, paper with section or table, or the name of a convention


# The document sections whose defaults are the ledger's (the parser fills them from the field table).
_LEDGER_SECTIONS: tuple[str, ...] = (
    "cluster.reliability.",
    "cluster.storage.",
    "cluster.power.",
    "training.checkpoint.",
    "site.",
    "economics.",
)
# economics.job_days has no value of its own: None stands for a figure the ledger computes.
_COMPUTED = frozenset({"economics.job_days"})

# Not a document field: the window of time-based figures when the scenario sets no duration.
_WINDOW_DAYS = Default(
    30.0,
    "days",
    "window for time-based figures when neither training.total_tokens nor economics.job_days is "
    "given (CONTRACT.md v1 Duration convention; the 30-day job of seed 000)",
)

DEFAULTS: dict[str, Default] = {
    **{
        path: Default(value, unit, source)
        for path, (value, unit, source) in TABLE.defaults().items()
        if path.startswith(_LEDGER_SECTIONS) and path not in _COMPUTED
    },
    "economics.window_days": _WINDOW_DAYS,
}
