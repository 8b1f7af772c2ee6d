"""What every dashboard page shares: the strict Content-Security-Policy, log-in and log-out, the team
switcher, anonymous visitors sent to log in, and the API docs served by the project (no CDN)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from scenarios.models import Membership
from tests.web.conftest import Browsers
from web.access import SESSION_TEAM_KEY

# Every page reachable from the navigation; each answers a signed-in member with a page (never a 500).
NAV_PAGES = ("web:plans", "web:compare", "web:price-books", "web:tokens")


def directives(response: object) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]  # type: ignore[index]
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


@pytest.mark.parametrize("name", [*NAV_PAGES, "web:login"])
def test_every_page_is_sent_with_the_strict_policy(browsers: Browsers, name: str) -> None:
    client = browsers.anonymous if name == "web:login" else browsers.alice
    response = client.get(reverse(name))
    assert response.status_code == 200
    policy = directives(response)
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["form-action"] == ["'self'"]
    html = response.content.decode()
    # Nothing inline that the policy would block: no inline code, handlers or styles.
    assert not re.search(r"<script(?![^>]*\b(src|type=\"application/json\")=?)[^>]*>", html), html
    assert not re.search(r"\son[a-z]+=", html) and " style=" not in html and "<style" not in html


def test_log_in_and_log_out(browsers: Browsers) -> None:
    client = Client()
    page = client.get(reverse("web:login"))
    assert page.status_code == 200 and "<h1>Log in to Planner</h1>" in page.content.decode()
    wrong = client.post(reverse("web:login"), {"username": "alice", "password": "not it"})
    assert wrong.status_code == 200 and 'role="alert"' in wrong.content.decode()
    response = client.post(
        reverse("web:login"), {"username": "alice", "password": "alice-password-1234", "next": "/tokens/"}
    )
    assert response.status_code == 302 and response["Location"] == "/tokens/"
    assert client.get("/tokens/").status_code == 200
    # A signed-in visitor of the log-in page goes on to the dashboard.
    assert client.get(reverse("web:login"))["Location"] == reverse("web:plans")
    # Log-out is a POST (a link cannot sign anyone out) and ends the session.
    assert client.get(reverse("web:logout")).status_code == 405
    out = client.post(reverse("web:logout"))
    assert out.status_code == 302 and out["Location"] == reverse("web:login")
    assert client.get("/tokens/")["Location"].startswith("/login/?next=")


def test_log_in_does_not_redirect_off_site(browsers: Browsers) -> None:
    response = Client().post(
        reverse("web:login"),
        {"username": "bob", "password": "bob-password-1234", "next": "https://evil.example/"},
    )
    assert response.status_code == 302 and response["Location"] == reverse("web:plans")


@pytest.mark.parametrize("name", NAV_PAGES)
def test_anonymous_visitors_are_sent_to_log_in(browsers: Browsers, name: str) -> None:
    url = reverse(name)
    response = browsers.anonymous.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('web:login')}?next={url}"


def test_team_switcher_selects_only_the_users_teams(browsers: Browsers) -> None:
    world = browsers.world
    Membership.objects.create(team=world.beta, user=world.alice.user, role="viewer")
    client = browsers.alice
    page = client.get("/tokens/").content.decode()
    assert '<label for="team-switch">Team</label>' in page
    assert "Alpha (admin)" in page and "Beta (viewer)" in page
    assert re.search(rf'<option value="{world.alpha.pk}" selected>', page)

    response = client.post(reverse("web:switch-team"), {"team": str(world.beta.pk), "next": "/tokens/"})
    assert response.status_code == 302 and response["Location"] == "/tokens/"
    assert client.session[SESSION_TEAM_KEY] == world.beta.pk
    assert re.search(rf'<option value="{world.beta.pk}" selected>', client.get("/tokens/").content.decode())

    # Another team's id is refused with a message; the selection stays; an off-site next is ignored.
    other = browsers.mallory  # only in beta
    refused = other.post(
        reverse("web:switch-team"), {"team": str(world.alpha.pk), "next": "https://evil.example/"}
    )
    assert refused.status_code == 302 and refused["Location"] == reverse("web:plans")
    assert SESSION_TEAM_KEY not in other.session
    assert "team: not one of your teams" in other.get("/tokens/").content.decode()
    assert client.get(reverse("web:switch-team")).status_code == 405


def test_a_user_in_no_team_is_told_how_to_get_one(browsers: Browsers) -> None:
    page = browsers.nobody.get("/tokens/").content.decode()
    assert "You are not a member of any team yet" in page and "create_access" in page
    assert 'id="team-switch"' not in page


# A reference to another host: a scheme-relative or absolute URL (a CDN among them), or a CDN's name.
FOREIGN_HOST = re.compile(
    r"(?:https?:)?//[a-z0-9-]+\.[a-z0-9.-]+|\b(?:cdn|unpkg|jsdelivr|cdnjs)\b", re.IGNORECASE
)


def test_docs_page_is_served_by_the_project_without_a_cdn(browsers: Browsers) -> None:
    response = browsers.alice.get(reverse("docs"))
    assert response.status_code == 200
    html = response.content.decode()
    assert not FOREIGN_HOST.search(html), FOREIGN_HOST.search(html)
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert urls, html
    for url in urls:
        assert url.startswith("/"), url  # same origin: the project's static files or its own views
        if url.startswith("/static/"):
            assert finders.find(url.removeprefix("/static/")), f"{url} is not a static file of the project"
    # Its script-src stays 'self' (only inline styles are allowed, for Swagger UI).
    assert directives(response)["script-src"] == ["'self'"]
    script = browsers.alice.get(reverse("docs") + "?script=")
    # The script carries a random CSRF token, so a bare "cdn" inside it means nothing: look for hosts.
    assert script.status_code == 200
    assert not FOREIGN_HOST.search(script.content.decode()), FOREIGN_HOST.search(script.content.decode())


def test_the_login_page_reads_no_table(db: None, client: Any, django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(0):
        assert client.get("/login/").status_code == 200
