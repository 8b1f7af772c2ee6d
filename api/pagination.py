"""Page-number pagination on every list: ``?page=`` and ``?page_size=`` (at most ``MAX_PAGE_SIZE``)."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination

from api.limits import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE

__all__ = ["MAX_PAGE_SIZE", "DefaultPagination"]


class DefaultPagination(PageNumberPagination):
    """Page-number pagination; clients may ask for up to MAX_PAGE_SIZE rows with ?page_size=.

    A ``page_size`` above the limit is clamped to it (the response says how many rows it holds); a page past
    the end is a 404, as DRF defines it.
    """

    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
