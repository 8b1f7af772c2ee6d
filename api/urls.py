"""Routes of /api/v1/."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from api.views.audit import AuditViewSet
from api.views.catalog import CatalogEntryView, CatalogKindView, CatalogView
from api.views.compare import CompareView
from api.views.events import EventViewSet
from api.views.plans import PlanViewSet
from api.views.price_books import PriceBookViewSet
from api.views.price_feeds import PriceFeedViewSet
from api.views.results import ResultViewSet
from api.views.runs import RunViewSet
from api.views.scenarios import ClusterViewSet, ModelViewSet, SiteViewSet
from api.views.solve import SolveView
from api.views.teams import InvitationViewSet, MemberViewSet, TeamViewSet
from api.views.tokens import ApiTokenViewSet
from api.views.webhooks import WebhookViewSet

router = DefaultRouter()
router.include_root_view = False
router.register("teams", TeamViewSet, basename="team")
router.register(r"teams/(?P<team_pk>\d+)/members", MemberViewSet, basename="member")
router.register("invitations", InvitationViewSet, basename="invitation")
router.register("tokens", ApiTokenViewSet, basename="token")
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("models", ModelViewSet, basename="model")
router.register("sites", SiteViewSet, basename="site")
router.register("plans", PlanViewSet, basename="plan")
router.register("runs", RunViewSet, basename="run")
router.register("results", ResultViewSet, basename="result")
router.register("price-books", PriceBookViewSet, basename="price-book")
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register("price-feeds", PriceFeedViewSet, basename="price-feed")
router.register("events", EventViewSet, basename="event")
router.register("audit", AuditViewSet, basename="audit")


@csrf_exempt  # it changes nothing, and a CSRF refusal would hide the 404 behind an HTML 403
def not_found(request: HttpRequest, *args: object, **kwargs: object) -> JsonResponse:
    """Any other path under /api/v1/ (including ids that are not integers): the API's JSON 404."""
    return JsonResponse({"detail": "Not found.", "errors": []}, status=404)


urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The page's template is the project's (web/swagger_ui.html: a language, no inline style), so the page
    # keeps the strict Content-Security-Policy; its assets come from drf-spectacular-sidecar.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="web/swagger_ui.html"),
        name="docs",
    ),
    path("catalog/", CatalogView.as_view(), name="catalog"),
    path("catalog/<str:kind>/", CatalogKindView.as_view(), name="catalog-kind"),
    path("catalog/<str:kind>/<str:key>/", CatalogEntryView.as_view(), name="catalog-entry"),
    path("solve/", SolveView.as_view(), name="solve"),
    path("compare/", CompareView.as_view(), name="compare"),
    path("plans/<int:pk>/", include("api.views.search")),
    path("", include(router.urls)),
    re_path(r"^", not_found),
]
