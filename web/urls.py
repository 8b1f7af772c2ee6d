"""Routes of the dashboard (``/``); each page module lists its own routes."""

from __future__ import annotations

from web.views import compare, jobs, plans, price_books, session, tokens

app_name = "web"

urlpatterns = [
    *session.urlpatterns,
    *plans.urlpatterns,
    *compare.urlpatterns,
    *price_books.urlpatterns,
    *jobs.urlpatterns,
    *tokens.urlpatterns,
]
