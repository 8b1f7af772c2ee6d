"""Run execution, the public face of ``scenarios.runs`` (claims, lease, store, execute, sweeper): claim,
solve, store the result exactly once, and recover runs the broker or a worker lost.

Every step is safe to repeat, because the broker may deliver a message twice (redelivery after a worker
died, a sweeper re-send) and a worker may die at any instruction; see each module of ``scenarios.runs``.
Code that replaces a function for a test replaces it in the module that defines it.
"""

from __future__ import annotations

from scenarios.runs.claims import BUSY as BUSY
from scenarios.runs.claims import CAPPED as CAPPED
from scenarios.runs.claims import CLAIMED as CLAIMED
from scenarios.runs.claims import RESUMED as RESUMED
from scenarios.runs.claims import Claim as Claim
from scenarios.runs.claims import claim_rows as claim_rows
from scenarios.runs.claims import gave_up_error as gave_up_error
from scenarios.runs.claims import run_claim as run_claim
from scenarios.runs.claims import run_fail as run_fail
from scenarios.runs.claims import run_progress as run_progress
from scenarios.runs.claims import runs_claim as runs_claim
from scenarios.runs.claims import runs_release as runs_release
from scenarios.runs.claims import runs_renew_lease as runs_renew_lease
from scenarios.runs.execute import EXECUTORS as EXECUTORS
from scenarios.runs.execute import Executor as Executor
from scenarios.runs.execute import Outcome as Outcome
from scenarios.runs.execute import enqueue_runs as enqueue_runs
from scenarios.runs.execute import enqueue_runs_on_commit as enqueue_runs_on_commit
from scenarios.runs.execute import label_book_prices as label_book_prices
from scenarios.runs.execute import register_executor as register_executor
from scenarios.runs.execute import run_execute as run_execute
from scenarios.runs.execute import runs_execute as runs_execute
from scenarios.runs.execute import runs_mark_unsent as runs_mark_unsent
from scenarios.runs.lease import LeaseKeeper as LeaseKeeper
from scenarios.runs.lease import keep_run_leased as keep_run_leased
from scenarios.runs.lease import keep_runs_leased as keep_runs_leased
from scenarios.runs.store import Solved as Solved
from scenarios.runs.store import Stored as Stored
from scenarios.runs.store import input_hash_of as input_hash_of
from scenarios.runs.store import result_store as result_store
from scenarios.runs.store import results_store as results_store
from scenarios.runs.sweeper import SweepReport as SweepReport
from scenarios.runs.sweeper import runs_sweep as runs_sweep
