"""Runs: claim, solve, store the result exactly once, and recover runs the broker or a worker lost.

Every step is safe to repeat, because the broker may deliver a message twice (redelivery after a worker
died, a sweeper re-send) and a worker may die at any instruction:

* claim    one conditional UPDATE (queued -> running, attempts + 1, lease); a delivery that changes no
           row stops. The attempt count lives in Postgres, so a run whose worker dies on every attempt ends
           ``failed`` with the reason after ``max_attempts``, however often the broker redelivers it.
* solve    pure; repeating it costs only time.
* store    under a row lock on the plan (version numbering), INSERT the result unless (plan, input_hash,
           solver_version) exists, and mark the run succeeded only if this delivery still holds the claim, in one
           transaction. A repeat finds the existing result and creates nothing.
* sweep    queued runs whose message went out long ago are sent again; running runs whose lease expired
           are put back to queued (or failed at the attempt cap) and sent again.
"""
