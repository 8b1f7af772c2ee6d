"""Hypothesis profiles: a fast default for `./dev test` and a thorough `ci` profile (HYPOTHESIS_PROFILE=ci,
set by .ci/run). A property test states the number of examples it is worth (``examples(n)``); the default
profile runs half of them (at least 10), `ci` four times as many. Neither has a deadline: timings on a shared
2-core machine are no property of the code."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default-fast", deadline=None)
settings.register_profile("ci", deadline=None, print_blob=True)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default-fast")
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """How many examples a test worth ``n`` runs under the loaded profile."""
    return 4 * n if PROFILE == "ci" else max(10, n // 2)
