from __future__ import annotations

from django.urls import path

from tests.testapp.tenancy import read_view

urlpatterns = [path("policy/<str:document>", read_view)]
