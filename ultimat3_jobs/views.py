"""Views of ultimat3-jobs: today the Prometheus metrics endpoint.

Layer: surface. Mount them with one line in the project's URLconf::

    path("jobs/", include("ultimat3_jobs.urls")),   # serves jobs/metrics

The metrics view checks no permission: it shows queue names, job names and counts, no job
input. Mount it where only the scraper reaches it (an internal port or path, a network rule,
or a wrapper view of your own that checks a token or a staff user).

The metrics need the ``prometheus`` extra (``ultimat3-jobs[prometheus]``): without
it, importing this module (and so the URLconf that includes ``ultimat3_jobs.urls``) raises
``ImproperlyConfigured`` saying so.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.factories.backfill import declared_backfills
from ultimat3_jobs.factories.inspect import BackfillView, inspect_backfills
from ultimat3_jobs.operator.metrics import exposition


def backfill_views(driver: JobDriver) -> list[BackfillView]:
    """``inspect_backfills()`` for the metrics: nothing (and no read) when no backfill is
    declared or the store keeps no backfill ledger."""
    if not driver.has_backfill_ledger or not declared_backfills():
        return []
    return inspect_backfills()


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus exposition of the configured job store: queue depth per state, oldest
    ready age, dead jobs, worker demand and settle counters, in three reads (see
    :mod:`ultimat3_jobs.operator.metrics`), and the declared backfills' state in one more read
    of their ledger (none when no backfill is declared). OpenMetrics when the ``Accept`` header
    asks for ``application/openmetrics-text``, else the text format 0.0.4."""
    driver = get_driver()
    body, content_type = exposition(
        driver,
        accept=request.headers.get("Accept", ""),
        backfills=lambda: backfill_views(driver),
    )
    response = HttpResponse(body, content_type=content_type)
    # The body depends on the Accept header: a cache between scraper and view must key on it.
    patch_vary_headers(response, ["Accept"])
    return response
