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
    with pytest.raises(CommandError, match=r"entries\[0\]\.value \(line 2\): must be a finite number"):
        call_command("import_prices", str(path))
    with pytest.raises(CommandError, match="must name the columns value"):
        (tmp_path / "nohdr.csv").write_text("kind,key\nx,y\n")
        call_command("import_prices", str(tmp_path / "nohdr.csv"))
    with pytest.raises(CommandError, match="no team with slug"):
        call_command("import_prices", str(path), "--team", "nope")
    assert not PriceBook.objects.exists()


def test_patch_by_default_replace_on_request_and_the_changes_printed(tmp_path, sent, capsys) -> None:
    team = make_team(slug="delta")
    first = tmp_path / "deal.csv"
    first.write_text("kind,key,value\naccelerator,h100-sxm,18000\nelectricity,quebec,0.031\n")
    call_command("import_prices", str(first), "--team", "delta", "--fan-out", "none")
    cloud = tmp_path / "cloud.csv"
    cloud.write_text("kind,key,value,remove\ncloud,aws:h100-sxm,3.1,\nelectricity,quebec,,true\n")
    capsys.readouterr()
    call_command("import_prices", str(cloud), "--team", "delta", "--fan-out", "none")
    v2 = PriceBook.objects.get(team=team, version=2)
    v1 = PriceBook.objects.get(team=team, version=1)
    assert (v2.mode, v2.based_on_id) == ("patch", v1.pk)
    assert {(e.kind, e.key): e.value for e in v2.entries.all()} == {
        ("accelerator", "h100-sxm"): 18000.0,
        ("cloud", "aws:h100-sxm"): 3.1,
    }
    out = capsys.readouterr().out
    assert "(patch on v1)" in out and "changes: 1 added, 0 changed, 1 removed, 1 unchanged" in out
    assert "  - electricity quebec (was 0.031)" in out and "  + cloud aws:h100-sxm: 3.1" in out
    call_command("import_prices", str(first), "--team", "delta", "--mode", "replace", "--fan-out", "none")
    v3 = PriceBook.objects.get(team=team, version=3)
    assert (v3.mode, v3.based_on, v3.entries.count()) == ("replace", None, 2)


def test_unknown_keys_and_prices_beyond_the_solvers_limits_are_refused(tmp_path) -> None:
    path = tmp_path / "typos.csv"
    path.write_text("kind,key,value\nelectricity,quebeck,0.05\nelectricity,quebec,11\n")
    with pytest.raises(CommandError) as err:
        call_command("import_prices", str(path))
    text = str(err.value)
    assert "entries[0].key (line 2): unknown region 'quebeck'; did you mean 'quebec'?" in text
    assert "entries[1].value (line 3): must be from 0 to 10 usd_per_kwh" in text
    assert not PriceBook.objects.exists()


def test_errors_name_the_line_of_the_file_past_blank_lines_and_quoted_line_breaks(tmp_path) -> None:
    """An entry's index is not its place in a CSV: blank lines are skipped and a quoted cell may span lines."""
    path = tmp_path / "gaps.csv"
    path.write_text(
        'kind,key,value,source\n\nelectricity,quebec,0.05,"quote\nspanning two lines"\n\n\n'
        "accelerator,h100-sxm,cheap,quote B\n"
    )
    with pytest.raises(CommandError) as err:
        call_command("import_prices", str(path))
    assert "entries[1].value (line 7): must be a finite number" in str(err.value)
    assert not PriceBook.objects.exists()
    # JSON entries have no line of their own: the path alone.
    as_json = tmp_path / "gaps.json"
    as_json.write_text('[{"kind": "accelerator", "key": "h100-sxm", "value": "cheap"}]')
    with pytest.raises(CommandError, match=r"entries\[0\]\.value: must be a finite number"):
        call_command("import_prices", str(as_json))
