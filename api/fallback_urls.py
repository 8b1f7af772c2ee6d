"""Every path under /api/ that is not /api/v1/ (another version, a typo): the API's JSON 404."""

from __future__ import annotations

from django.urls import re_path

from api.urls import not_found

urlpatterns = [re_path(r"^", not_found)]
