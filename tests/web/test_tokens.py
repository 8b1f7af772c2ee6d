"""The API tokens page: the user's own tokens, creation with the API's rules (the secret shown once, then
never again, not even in the session), revocation of one's own tokens only."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from api.limits import MAX_ACTIVE_TOKENS_PER_USER
from api.models import ApiToken, hash_token
from tests.web.conftest import Browsers

TOKENS = "/tokens/"


def create(client: Client, **data: Any) -> Any:
    return client.post(TOKENS, {"name": "cli", "team": "", "expires_in_days": "", **data})


def secret_in(html: str) -> str:
    match = re.search(r'class="secret"[^>]*>(pln_[^<]+)<', html)
    assert match, html
    return match.group(1)


def session_values(client: Client) -> str:
    return repr(dict(client.session.items()))


def test_urls() -> None:
    assert reverse("web:tokens") == TOKENS
    assert reverse("web:token-revoke", args=[7]) == "/tokens/7/revoke/"


def test_anonymous_is_sent_to_log_in(browsers: Browsers) -> None:
    for response in (browsers.anonymous.get(TOKENS), browsers.anonymous.post("/tokens/1/revoke/")):
        assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


def test_lists_only_the_users_own_tokens(browsers: Browsers) -> None:
    world = browsers.world
    ApiToken.issue(user=world.alice.user, name="alpha ci", team=world.alpha)
    response = browsers.alice.get(TOKENS)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1>API tokens</h1>" in html
    assert "alice test token" in html and "alpha ci" in html and "All my teams" in html
    assert "carol test token" not in html and "mallory test token" not in html
    assert html.count(">Revoke</button>") == 2
    assert response["Cache-Control"].startswith("max-age=0") or "no-store" in response["Cache-Control"]


def test_create_shows_the_secret_once_and_never_keeps_it(browsers: Browsers) -> None:
    client = browsers.carol
    response = create(client, name="deploy script")
    assert response.status_code == 302 and response["Location"] == TOKENS
    token = ApiToken.objects.get(user=browsers.world.carol.user, name="deploy script")
    # No expiry given: the default lifetime (API_TOKEN_DEFAULT_DAYS), read and write.
    assert token.team is None and token.scope == "read_write"
    assert token.expires_at is not None
    expected = timezone.now() + timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    assert abs(token.expires_at - expected) < timedelta(minutes=1)

    page = client.get(TOKENS)
    html = page.content.decode()
    secret = secret_in(html)
    assert "Copy it now: it is shown only once." in html
    assert "no-store" in page["Cache-Control"]
    assert token.key_hash == hash_token(secret) and secret.startswith(token.prefix)
    # Gone from the session once that page is rendered, and from every later page.
    assert secret not in session_values(client)
    again = client.get(TOKENS).content.decode()
    assert secret not in again and "Copy it now" not in again

    # The secret is a working API token.
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get("/api/v1/tokens/").status_code == 200


def test_create_a_team_token_that_expires(browsers: Browsers) -> None:
    world = browsers.world
    before = timezone.now()
    response = create(browsers.alice, name="alpha only", team=str(world.alpha.pk), expires_in_days="7")
    assert response.status_code == 302
    token = ApiToken.objects.get(name="alpha only")
    assert token.team_id == world.alpha.pk and token.user_id == world.alice.user.pk
    assert token.expires_at is not None
    assert before + timedelta(days=7) <= token.expires_at <= timezone.now() + timedelta(days=7)
    html = browsers.alice.get(TOKENS).content.decode()
    assert "Alpha" in html and "active" in html


def test_a_viewer_may_create_a_token_for_their_team_as_through_the_api(browsers: Browsers) -> None:
    world = browsers.world
    assert create(browsers.bob, name="viewer", team=str(world.alpha.pk)).status_code == 302
    via_api = world.bob.client.post("/api/v1/tokens/", {"name": "viewer 2", "team": world.alpha.pk})
    assert via_api.status_code == 201
    assert ApiToken.objects.filter(user=world.bob.user, team=world.alpha).count() == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": ""}, "Name: This field may not be blank."),
        ({"name": "   "}, "Name: This field may not be blank."),
        ({"name": "x" * 101}, "Name: Ensure this field has no more than 100 characters."),
        ({"team": "beta"}, "Team: Select a valid choice."),
        ({"expires_in_days": "0"}, "Expires in (days): Ensure this value is greater than or equal to 1."),
        ({"expires_in_days": "-3"}, "Expires in (days): Ensure this value is greater than or equal to 1."),
        ({"expires_in_days": "soon"}, "Expires in (days): Enter a whole number."),
        ({"expires_in_days": "99999999999"}, "Expires in (days): Ensure this value is less than or equal to"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(
    browsers: Browsers, data: dict[str, str], message: str
) -> None:
    before = ApiToken.objects.count()
    if data.get("team") == "beta":
        data = {"team": str(browsers.world.beta.pk)}  # another team's id: not one of alice's teams
    response = create(browsers.alice, **data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert 'role="alert"' in response.content.decode()
    assert ApiToken.objects.count() == before
    assert "web_new_token" not in browsers.alice.session


def test_the_api_limit_on_active_tokens_applies(browsers: Browsers) -> None:
    user = browsers.world.carol.user
    for i in range(MAX_ACTIVE_TOKENS_PER_USER - 1):  # carol already holds one
        ApiToken.issue(user=user, name=f"t{i}")
    before = ApiToken.objects.count()
    response = create(browsers.carol)
    assert response.status_code == 400
    assert f"at most {MAX_ACTIVE_TOKENS_PER_USER} active tokens per user" in response.content.decode()
    assert ApiToken.objects.count() == before
    # The same rule, the same words, through the API.
    via_api = browsers.world.carol.client.post("/api/v1/tokens/", {"name": "one more"})
    assert via_api.status_code == 400
    assert f"at most {MAX_ACTIVE_TOKENS_PER_USER} active tokens per user" in via_api.content.decode()


def test_revoke_own_token(browsers: Browsers) -> None:
    world = browsers.world
    token, secret = ApiToken.issue(user=world.carol.user, name="old")
    response = browsers.carol.post(f"/tokens/{token.pk}/revoke/")
    assert response.status_code == 302 and response["Location"] == TOKENS
    token.refresh_from_db()
    assert token.revoked_at is not None and token.revoked_by_id == world.carol.user.pk
    html = browsers.carol.get(TOKENS).content.decode()
    assert "revoked: it no longer authenticates" in html and "revoked</span>" in html
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get("/api/v1/tokens/").status_code == 401
    # Revoking again changes nothing.
    revoked_at = token.revoked_at
    assert browsers.carol.post(f"/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at == revoked_at


def test_another_users_token_is_not_found(browsers: Browsers) -> None:
    world = browsers.world
    # Even an admin of the token's team: the page is about one's own tokens.
    token, _ = ApiToken.issue(user=world.carol.user, name="carol's", team=world.alpha)
    for client in (browsers.alice, browsers.mallory, browsers.bob, browsers.nobody):
        assert client.post(f"/tokens/{token.pk}/revoke/").status_code == 404
    assert browsers.alice.post("/tokens/999999999/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_revoke_is_post_only_and_needs_csrf(browsers: Browsers) -> None:
    token, _ = ApiToken.issue(user=browsers.world.carol.user, name="x")
    assert browsers.carol.get(f"/tokens/{token.pk}/revoke/").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(browsers.world.carol.user)
    assert strict.post(f"/tokens/{token.pk}/revoke/").status_code == 403
    assert strict.post(TOKENS, {"name": "no csrf"}).status_code == 403
    token.refresh_from_db()
    assert token.revoked_at is None and not ApiToken.objects.filter(name="no csrf").exists()


def test_page_has_labelled_controls_and_a_csrf_token(browsers: Browsers) -> None:
    html = browsers.alice.get(TOKENS).content.decode()
    for control_id, label in (
        ("token-name", "Name"),
        ("token-team", "Team"),
        ("token-expires", "Expires in (days)"),
    ):
        assert f'<label for="{control_id}">{label}</label>' in html
        assert f'id="{control_id}"' in html
    assert html.count("csrfmiddlewaretoken") >= 3  # create, revoke, team switcher, log out
    assert "<caption" in html and html.count("<h1>") == 1
    assert "style=" not in html and " onclick=" not in html


@pytest.mark.parametrize("rows", [2, 10])
def test_query_count_does_not_grow_with_tokens(
    browsers: Browsers, django_assert_num_queries: Any, rows: int
) -> None:
    world = browsers.world
    for i in range(rows - 1):
        ApiToken.issue(user=world.alice.user, name=f"t{i}", team=world.alpha if i % 2 else None)
    client = browsers.alice
    client.get(TOKENS)  # warm the session
    # session, user, memberships (team access), tokens with their teams
    with django_assert_num_queries(4):
        assert client.get(TOKENS).status_code == 200


def test_a_read_token_from_the_page_only_reads(browsers: Browsers) -> None:
    response = create(browsers.carol, name="dashboards", scope="read")
    assert response.status_code == 302
    token = ApiToken.objects.get(user=browsers.world.carol.user, name="dashboards")
    assert token.scope == "read"
    assert "read</td>" in browsers.carol.get(TOKENS).content.decode()
