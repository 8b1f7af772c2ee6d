"""``manage.py import_prices FILE.csv|json``."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from scenarios.models import PriceBook, Run
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db


def test_csv_publishes_a_global_book_and_queues_affected_plans(tmp_path, sent, capsys) -> None:
    plan = make_plan(team=make_team())
    path = tmp_path / "prices-2026q4.csv"
    path.write_text(
        "kind,key,value,unit,source,effective_date\n"
        "accelerator,h100-sxm,21000,usd,distributor quote 2026-11,2026-11-01\n"
        "electricity,quebec,0.045,,Hydro-Quebec rate L,\n"
    )
    call_command("import_prices", str(path))
    book = PriceBook.objects.get()
    assert (book.team, book.version, book.name, book.source) == (
        None,
        1,
        "prices-2026q4",
        "prices-2026q4.csv",
    )
    entries = {(e.kind, e.key): e for e in book.entries.all()}
    assert str(entries[("accelerator", "h100-sxm")].effective_date) == "2026-11-01"
    assert entries[("electricity", "quebec")].unit == "usd_per_kwh"
    assert Run.objects.get().plan_id == plan.pk
    out = capsys.readouterr().out
    assert "published global price book v1" in out and "1 re-runs queued" in out


def test_json_team_book(tmp_path, sent) -> None:
    team = make_team(slug="gamma")
    path = tmp_path / "override.json"
    path.write_text(
        json.dumps(
            {"name": "gamma deal", "entries": [{"kind": "cloud", "key": "aws:h100-sxm", "value": 3.1}]}
        )
    )
    call_command("import_prices", str(path), "--team", "gamma", "--fan-out", "none")
    book = PriceBook.objects.get()
    assert (book.team, book.name, book.entries.get().value) == (team, "gamma deal", 3.1)


def test_errors_name_the_row_and_rule(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("kind,key,value\naccelerator,h100-sxm,cheap\n")
    with pytest.raises(CommandError, match=r"entries\[0\]\.value: must be a finite number"):
        call_command("import_prices", str(path))
    with pytest.raises(CommandError, match="must name the columns value"):
        (tmp_path / "nohdr.csv").write_text("kind,key\nx,y\n")
        call_command("import_prices", str(tmp_path / "nohdr.csv"))
    with pytest.raises(CommandError, match="no team with slug"):
        call_command("import_prices", str(path), "--team", "nope")
    assert not PriceBook.objects.exists()
