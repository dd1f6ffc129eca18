"""URLs of ultimat3-jobs: ``include("ultimat3_jobs.urls")`` serves ``metrics`` under the prefix
you choose. Nothing here checks who asks; see :mod:`ultimat3_jobs.views`."""

from __future__ import annotations

from django.urls import path

from ultimat3_jobs import views

app_name = "ultimat3_jobs"

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
]
