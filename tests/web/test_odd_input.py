"""Odd input on the dashboard is refused, never a 500: digits other than 0-9 in ids, a file nested too deeply
or a YAML file whose aliases write out to gigabytes; and a price shows as it was given."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from scenarios import services
from scenarios.models import Plan
from tests.api import factories as f
from tests.web.conftest import Browsers

pytestmark = pytest.mark.django_db


def _no_raise(client: Any) -> Any:
    client.raise_request_exception = False
    return client


# --- Digits other than 0-9 ("²" passes str.isdigit, not int): a 400 or a 404 ---------------------------


def test_compare_plans_with_a_superscript_digit_is_a_400_not_a_500(browsers: Browsers) -> None:
    world = browsers.world
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user, suffix="-u")
    a = f.plan_for(team=world.alpha, user=world.alice.user, name="a", trio=trio)
    client = _no_raise(browsers.alice)
    assert client.get(f"/compare/?plans=%C2%B2,{a.pk}").status_code == 400  # "²" -> ValueError -> 500


def test_compare_baseline_with_a_superscript_digit_is_a_400_not_a_500(browsers: Browsers) -> None:
    world = browsers.world
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user, suffix="-u")
    a = f.plan_for(team=world.alpha, user=world.alice.user, name="a", trio=trio)
    b = f.plan_for(team=world.alpha, user=world.alice.user, name="b", trio=trio)
    client = _no_raise(browsers.alice)
    assert client.get(f"/compare/?plans={a.pk},{b.pk}&baseline=%C2%B2").status_code == 400


def test_job_form_with_a_superscript_digit_plan_is_a_404_not_a_500(browsers: Browsers) -> None:
    client = _no_raise(browsers.carol)
    assert client.get(f"{reverse('web:job-new')}?plan=%C2%B2&kind=search").status_code == 404


# --- Scenario files that no parser should expand: refused with the reason ---------------------------------


def _upload(browsers: Browsers, content: bytes, name: str = "s.yaml") -> Any:
    client = _no_raise(browsers.carol)
    return client.post(
        reverse("web:plan-create"),
        {"form": "upload", "upload-name": "x", "upload-file": SimpleUploadedFile(name, content)},
    )


def test_a_deeply_nested_file_is_refused_not_a_500(browsers: Browsers) -> None:
    # 100 kB of "[": both parsers recurse once per level
    response = _upload(browsers, b"[" * 100_000, name="deep.json")
    assert response.status_code == 400 and "nested too deeply" in response.content.decode()
    assert not Plan.objects.exists()


def _alias_bomb(levels: int) -> bytes:
    lines = ["l0: &l0 [" + ",".join(['"xxxxxxxx"'] * 10) + "]"]
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


def test_a_yaml_alias_bomb_is_refused_without_expanding_it(browsers: Browsers) -> None:
    # 470 bytes whose aliases write out to 1.36 GB of text: refused from the parsed nodes, never expanded
    bomb = _alias_bomb(8)
    assert len(bomb) < 500
    started = time.monotonic()
    response = _upload(browsers, bomb)
    elapsed = time.monotonic() - started
    assert response.status_code == 400 and "aliases" in response.content.decode()
    assert elapsed < 3.0, f"the 470-byte file took {elapsed:.1f} s to refuse"


# --- A price book's "What changed": a changed price reads differently on its two sides ---------------------


def test_a_changed_price_shows_different_old_and_new_values(browsers: Browsers) -> None:
    world = browsers.world
    for value in (0.05124, 0.05121):
        book = services.price_book_publish(
            team=world.alpha,
            user=world.carol.user,
            name="tariff",
            entries=[{"kind": "electricity", "key": "quebec", "value": value}],
            fan_out="none",
        )
    body = re.sub(
        r"\s+", " ", browsers.bob.get(reverse("web:price-book-detail", args=[book.pk])).content.decode()
    )
    row = re.search(r"<tr><td>changed</td>.*?</tr>", body)
    assert row, body
    cells = re.findall(r'<td class="num">(.*?)</td>', row.group(0))
    assert cells[:2] == ["$0.05124 /kWh", "$0.05121 /kWh"], cells
