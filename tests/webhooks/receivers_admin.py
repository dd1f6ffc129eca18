"""The test receivers and the admin, mounted together (the receivers' tests look at the admin's
job page too)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from tests.webhooks.receivers import urlpatterns as receiver_urls

urlpatterns = [*receiver_urls, path("admin/", admin.site.urls)]
