"""One parallel layout as python ints and bools (``Layout``), for a single solve.

The engine's ``_step`` runs on either form: a ``LayoutBatch`` (numpy columns, the search over many layouts)
or a ``Layout`` (python scalars, one report). Both carry the same fields with the same codes, so one
``_step`` serves both, and a batch of one gives the same bits as its ``Layout``
(``tests/solvers/test_vectorised_consistency.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from solvers.report_types import LayoutBlock
from solvers.specs import RECOMPUTE_POLICIES, SCHEDULES, LayoutBatch


@dataclass(frozen=True, slots=True)
class Layout:
    """One layout; codes as in ``LayoutBatch`` (``schedule`` indexes SCHEDULES, ``recompute`` indexes
    RECOMPUTE_POLICIES, ``grad_reduce_fp32`` is True when gradients are reduce-scattered in fp32)."""

    tp: int
    pp: int
    cp: int
    ep: int
    dp: int
    microbatch_seqs: int
    schedule: int
    virtual_stages: int
    sequence_parallel: bool
    zero_stage: int
    fsdp_reshard_after_forward: bool
    expert_tp: int
    recompute: int
    grad_reduce_fp32: bool

    @classmethod
    def of(cls, batch: LayoutBatch, i: int = 0) -> Layout:
        """Row ``i`` of ``batch`` as python scalars."""
        return cls(
            tp=int(batch.tp[i]),
            pp=int(batch.pp[i]),
            cp=int(batch.cp[i]),
            ep=int(batch.ep[i]),
            dp=int(batch.dp[i]),
            microbatch_seqs=int(batch.microbatch_seqs[i]),
            schedule=int(batch.schedule[i]),
            virtual_stages=int(batch.virtual_stages[i]),
            sequence_parallel=bool(batch.sequence_parallel[i]),
            zero_stage=int(batch.zero_stage[i]),
            fsdp_reshard_after_forward=bool(batch.fsdp_reshard_after_forward[i]),
            expert_tp=int(batch.expert_tp[i]),
            recompute=int(batch.recompute[i]),
            grad_reduce_fp32=bool(batch.grad_reduce_fp32[i]),
        )

    def block(self, microbatches: int) -> LayoutBlock:
        """The report's ``layout`` section, with the document's spellings (``microbatches`` from the step)."""
        return {
            "tp": self.tp,
            "pp": self.pp,
            "cp": self.cp,
            "ep": self.ep,
            "dp": self.dp,
            "microbatch_seqs": self.microbatch_seqs,
            "microbatches": microbatches,
            "schedule": SCHEDULES[self.schedule],
            "virtual_stages": self.virtual_stages,
            "zero_stage": self.zero_stage,
            "recompute": RECOMPUTE_POLICIES[self.recompute],
            "sequence_parallel": self.sequence_parallel,
            "fsdp_reshard_after_forward": self.fsdp_reshard_after_forward,
            "expert_tp": self.expert_tp,
            "grad_reduce_dtype": "fp32" if self.grad_reduce_fp32 else "bf16",
        }
