from django.contrib import admin
from django.urls import include, path

from planner.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("", include("web.urls")),
]
