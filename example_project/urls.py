"""URLs of the example project: the demo page, the admin, and the job metrics.

``jobs/metrics`` is the Prometheus view of ultimat3-jobs. It checks no login: the demo serves
it on 127.0.0.1 only; in a real project, mount it where only your scraper reaches it (see
docs/guides/metrics.md).
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from example_project.demo import views

urlpatterns = [
    path("", views.index, name="index"),
    path("admin/", admin.site.urls),
    path("jobs/", include("ultimat3_jobs.urls")),
]
