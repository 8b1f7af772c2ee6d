from __future__ import annotations

import pytest
from django.core.management import call_command

from scenarios.models import PriceBook


@pytest.mark.django_db
def test_load_defaults_publishes_one_sourced_global_book_and_is_idempotent() -> None:
    call_command("load_defaults")
    call_command("load_defaults")
    books = list(PriceBook.objects.filter(team__isnull=True))
    assert len(books) == 1
    entries = list(books[0].entries.all())
    h100 = next(e for e in entries if e.kind == "accelerator" and e.key == "h100-sxm")
    assert h100.value == 25_000.0 and h100.source
    assert any(e.kind == "electricity" and e.key == "quebec" for e in entries)
    assert all(e.source for e in entries)
