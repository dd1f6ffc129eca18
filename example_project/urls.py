"""URLs of the example project: the demo page and the admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from example_project.demo import views

urlpatterns = [
    path("", views.index, name="index"),
    path("admin/", admin.site.urls),
]
