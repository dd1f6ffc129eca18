"""A project URLconf that mounts the app's URLs the way the docs say: one include."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("ops/jobs/", include("ultimat3_jobs.urls")),
]
