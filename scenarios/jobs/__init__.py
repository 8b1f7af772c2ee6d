"""Search and sweep jobs: a design-space search or a sweep of a plan, run as a Run with progress, stored as a
versioned Result like a solve.

Search (``kind="search"``): one task. ``search_request`` checks the options and counts the layouts of the
search space (milliseconds, ``solvers.search.count_layouts``) and refuses a space over
``MAX_LAYOUTS_PER_SEARCH`` before anything is queued; the run then goes through the same path as a solve
(``services.run_request`` -> ``scenarios.execute_run`` -> ``execution.runs_execute``) with the search
executor registered below, which reports layouts evaluated / layouts to evaluate on the Run row while the
engine works.

Sweep (``kind="sweep"``): ``sweep_request`` expands the points (refusing more than ``MAX_SWEEP_POINTS``
before anything is queued) and queues ``scenarios.sweep_start``, which claims the run like a solve (attempt
cap, lease), freezes the plan's priced inputs in ``Run.params["job"]`` and sends one ``scenarios.sweep_chunk``
message per chunk of points, so every worker process on the queue takes chunks. Each chunk:

* is a ``SweepChunk`` row claimed with the run claim's conditional UPDATEs (``execution.claim_rows``), with an
  attempt count per chunk (a chunk whose worker is lost ``max_attempts`` times fails the run, as a solve
  would);
* solves its points (``solvers.sweep.sweep_point``) and records their rows with ONE conditional UPDATE
  (run running, same frozen inputs, chunk not yet recorded) on its row, and ``points_done + n`` on the run,
  so a chunk delivered twice is counted once;
* then checks whether every chunk is recorded and, if so, runs the final aggregation (``sweep_finish``):
  rows in point order, the Pareto front, the best point, stored with ``execution.results_store``. The
  aggregation is safe to run twice or concurrently: the result is unique on (plan, input hash) and the run
  is marked succeeded only while it is running. Once stored, the chunk rows are deleted (the result holds
  their rows).

A sweep the sweeper re-sends (its message was lost, or its lease expired while its chunks queued behind other
work) goes to ``scenarios.sweep_start`` again (``execution.enqueue_runs`` routes sweeps there, and
``execute_run(s)`` hands over one that reaches it, unclaimed): the chunks already recorded for the same inputs
are kept and the others are sent again, each solved in a task of its own, never the whole sweep in one task
under one time limit.

The result's ``input_hash`` hashes the job kind, the resolved scenario and the options, so a search or a
sweep of a plan never collides with the plan's solve result, and repeating an unchanged job returns the
stored result.
"""
