"""Persistence of teams, scenarios with revisions, plans, price books, runs and append-only results.

Postgres is the source of truth; Redis only carries run ids. Rows that other rows are computed from
(revisions, published price books and their entries, results) are immutable: the model refuses to re-save
them and the database refuses UPDATE (and DELETE for results and price books) with triggers installed by
the migrations.
"""

from __future__ import annotations

from scenarios.models.events import EVENT_FIGURE_MOVED as EVENT_FIGURE_MOVED
from scenarios.models.events import EVENT_JOB_FINISHED as EVENT_JOB_FINISHED
from scenarios.models.events import EVENT_KIND_CHOICES as EVENT_KIND_CHOICES
from scenarios.models.events import EVENT_KINDS as EVENT_KINDS
from scenarios.models.events import EVENT_PRICE_BOOK_PUBLISHED as EVENT_PRICE_BOOK_PUBLISHED
from scenarios.models.events import EVENT_PRICE_FEED_FAILED as EVENT_PRICE_FEED_FAILED
from scenarios.models.events import EVENT_RESULT_STORED as EVENT_RESULT_STORED
from scenarios.models.events import EVENT_RUN_FAILED as EVENT_RUN_FAILED
from scenarios.models.events import EVENT_SOLVER_CHANGED as EVENT_SOLVER_CHANGED
from scenarios.models.events import EVENT_WEBHOOK_DISABLED as EVENT_WEBHOOK_DISABLED
from scenarios.models.events import ClockTimestamp as ClockTimestamp
from scenarios.models.events import Event as Event
from scenarios.models.plans import ROLE_ADMIN as ROLE_ADMIN
from scenarios.models.plans import ROLE_CHOICES as ROLE_CHOICES
from scenarios.models.plans import ROLE_EDITOR as ROLE_EDITOR
from scenarios.models.plans import ROLE_RANK as ROLE_RANK
from scenarios.models.plans import ROLE_VIEWER as ROLE_VIEWER
from scenarios.models.plans import SCENARIO_MODELS as SCENARIO_MODELS
from scenarios.models.plans import ClusterRevision as ClusterRevision
from scenarios.models.plans import ClusterScenario as ClusterScenario
from scenarios.models.plans import ImmutableModel as ImmutableModel
from scenarios.models.plans import Membership as Membership
from scenarios.models.plans import ModelRevision as ModelRevision
from scenarios.models.plans import ModelScenario as ModelScenario
from scenarios.models.plans import Plan as Plan
from scenarios.models.plans import RevisionBase as RevisionBase
from scenarios.models.plans import ScenarioBase as ScenarioBase
from scenarios.models.plans import SiteRevision as SiteRevision
from scenarios.models.plans import SiteScenario as SiteScenario
from scenarios.models.plans import Team as Team
from scenarios.models.prices import PRICE_FEED_FORMAT_AUTO as PRICE_FEED_FORMAT_AUTO
from scenarios.models.prices import PRICE_FEED_FORMAT_CHOICES as PRICE_FEED_FORMAT_CHOICES
from scenarios.models.prices import PRICE_FEED_FORMAT_CSV as PRICE_FEED_FORMAT_CSV
from scenarios.models.prices import PRICE_FEED_FORMAT_JSON as PRICE_FEED_FORMAT_JSON
from scenarios.models.prices import PRICE_FEED_POLL_STATE_FIELDS as PRICE_FEED_POLL_STATE_FIELDS
from scenarios.models.prices import PRICE_FEED_PUBLISHED as PRICE_FEED_PUBLISHED
from scenarios.models.prices import PRICE_FEED_REFUSED as PRICE_FEED_REFUSED
from scenarios.models.prices import PRICE_FEED_STATUS_CHOICES as PRICE_FEED_STATUS_CHOICES
from scenarios.models.prices import PRICE_FEED_UNCHANGED as PRICE_FEED_UNCHANGED
from scenarios.models.prices import PRICE_FEED_UNREACHABLE as PRICE_FEED_UNREACHABLE
from scenarios.models.prices import PRICE_KIND_CHOICES as PRICE_KIND_CHOICES
from scenarios.models.prices import PRICE_MODE_CHOICES as PRICE_MODE_CHOICES
from scenarios.models.prices import PRICE_MODE_PATCH as PRICE_MODE_PATCH
from scenarios.models.prices import PRICE_MODE_REPLACE as PRICE_MODE_REPLACE
from scenarios.models.prices import PriceBook as PriceBook
from scenarios.models.prices import PriceEntry as PriceEntry
from scenarios.models.prices import PriceFanOut as PriceFanOut
from scenarios.models.prices import PriceFeed as PriceFeed
from scenarios.models.runs import ACTIVE_STATUSES as ACTIVE_STATUSES
from scenarios.models.runs import AUTOMATIC_TRIGGERS as AUTOMATIC_TRIGGERS
from scenarios.models.runs import DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS
from scenarios.models.runs import RUN_KIND_CHOICES as RUN_KIND_CHOICES
from scenarios.models.runs import RUN_KIND_SEARCH as RUN_KIND_SEARCH
from scenarios.models.runs import RUN_KIND_SOLVE as RUN_KIND_SOLVE
from scenarios.models.runs import RUN_KIND_SWEEP as RUN_KIND_SWEEP
from scenarios.models.runs import STATUS_CHOICES as STATUS_CHOICES
from scenarios.models.runs import STATUS_FAILED as STATUS_FAILED
from scenarios.models.runs import STATUS_QUEUED as STATUS_QUEUED
from scenarios.models.runs import STATUS_RUNNING as STATUS_RUNNING
from scenarios.models.runs import STATUS_SUCCEEDED as STATUS_SUCCEEDED
from scenarios.models.runs import TRIGGER_API as TRIGGER_API
from scenarios.models.runs import TRIGGER_CHOICES as TRIGGER_CHOICES
from scenarios.models.runs import TRIGGER_PRICE_CHANGE as TRIGGER_PRICE_CHANGE
from scenarios.models.runs import TRIGGER_SCHEDULE as TRIGGER_SCHEDULE
from scenarios.models.runs import TRIGGER_USER as TRIGGER_USER
from scenarios.models.runs import Result as Result
from scenarios.models.runs import Run as Run
from scenarios.models.runs import SweepChunk as SweepChunk

# Price kinds and units are the solver's; services and serializers read them here.
from solvers.prices import PRICE_ACCELERATOR as PRICE_ACCELERATOR
from solvers.prices import PRICE_CLOUD as PRICE_CLOUD
from solvers.prices import PRICE_ELECTRICITY as PRICE_ELECTRICITY
from solvers.prices import PRICE_NODE as PRICE_NODE
from solvers.prices import PRICE_UNITS as PRICE_UNITS
