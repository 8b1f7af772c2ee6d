from django.contrib import admin
from django.urls import include, path, re_path

from planner.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    # Any other path under /api/ (another version, a typo): the API's JSON 404, never Django's HTML page.
    re_path(r"^api(?:/|$)", include("api.fallback_urls")),
    path("", include("web.urls")),
]

# An outage raised outside a view (a middleware) is a 503 with Retry-After too (api.outages).
handler500 = "api.outages.server_error"
# A request refused before any view (a disallowed Host header) is the API's JSON 400 under /api/.
handler400 = "api.outages.bad_request"
