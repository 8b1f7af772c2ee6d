"""Search and sweep jobs, the public face of ``scenarios.jobs`` (requests, search, sweep).

Code that replaces a function for a test replaces it in the module that defines it."""

from __future__ import annotations

from scenarios.jobs.requests import SEARCH_OPTION_KEYS as SEARCH_OPTION_KEYS
from scenarios.jobs.requests import SWEEP_OPTION_KEYS as SWEEP_OPTION_KEYS
from scenarios.jobs.requests import _job_hash as _job_hash
from scenarios.jobs.requests import _plan_of as _plan_of
from scenarios.jobs.requests import _sweep_hash as _sweep_hash
from scenarios.jobs.requests import search_check as search_check
from scenarios.jobs.requests import search_options as search_options
from scenarios.jobs.requests import search_request as search_request
from scenarios.jobs.requests import sweep_check as sweep_check
from scenarios.jobs.requests import sweep_request as sweep_request
from scenarios.jobs.requests import sweep_sections as sweep_sections
from scenarios.jobs.sweep import SweepJob as SweepJob
from scenarios.jobs.sweep import chunk_claim as chunk_claim
from scenarios.jobs.sweep import chunk_execute as chunk_execute
from scenarios.jobs.sweep import sweep_begin as sweep_begin
from scenarios.jobs.sweep import sweep_complete as sweep_complete
from scenarios.jobs.sweep import sweep_finish as sweep_finish
from scenarios.jobs.sweep import sweep_report as sweep_report
