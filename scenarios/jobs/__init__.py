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
task per chunk of points as a Celery group, so every worker process on the queue takes chunks. Each chunk:

* is claimed under the run's row lock, with an attempt count per chunk (a chunk whose worker is lost
  ``max_attempts`` times fails the run, as a solve would);
* solves its points (``solvers.sweep.sweep_point``) and records their rows with ONE conditional UPDATE
  (run running, same frozen inputs, chunk not yet recorded): ``points_done = points_done + n`` and the rows
  under ``params.job.chunks.<k>``, so a chunk delivered twice is counted once;
* then checks whether every chunk is recorded and, if so, runs the final aggregation (``sweep_finish``):
  rows in point order, the Pareto front, the best point, stored with ``execution.results_store``. The
  aggregation is safe to run twice or concurrently: the result is unique on (plan, input hash) and the run
  is marked succeeded only while it is running. Once stored, the rows are dropped from the run row (the
  result holds them), so reading runs does not carry them along.

A sweep that the sweeper re-sends (its message was lost, or its lease expired while chunks queued behind
other work) arrives through ``scenarios.execute_run``; the sweep executor registered below then finishes it
in that worker, keeping the chunks already recorded.

The result's ``input_hash`` hashes the job kind, the resolved scenario and the options, so a search or a
sweep of a plan never collides with the plan's solve result, and repeating an unchanged job returns the
stored result.
"""
