"""Views of ultimat3-jobs: today the Prometheus metrics endpoint.

Layer: surface. Mount them with one line in the project's URLconf::

    path("jobs/", include("ultimat3_jobs.urls")),   # serves jobs/metrics

The metrics view checks no permission: it shows queue names, job names and counts, no job
input. Mount it where only the scraper reaches it (an internal port or path, a network rule,
or a wrapper view of your own that checks a token or a staff user).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.operator.metrics import CONTENT_TYPE, render


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus text exposition (format 0.0.4) of the configured job store: queue depth
    per state, oldest ready age, dead jobs, worker demand and settle counters, in three reads
    (see :mod:`ultimat3_jobs.operator.metrics`)."""
    return HttpResponse(render(get_driver()), content_type=CONTENT_TYPE)
