"""The admin pages of the features: consumers (cursor, items handled, lag, read at each page
view), subject requests (state, counts per table, search by subject id, their own view
permission) and the webhook ledger per endpoint (filters, read-only, its permission)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from django.test import Client

from tests.admin.conftest import make_user
from tests.featureapp.models import FeedHandled, FeedRow
from ultimat3_jobs.consumers import declare, loop
from ultimat3_jobs.consumers.declare import consumer, consumer_named
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.models import ConsumerCursor, SubjectRequest, WebhookDelivery, WebhookEndpoint
from ultimat3_jobs.subjects.requests import subject_digest
from ultimat3_jobs.webhooks import ledger

pytestmark = pytest.mark.django_db

CONSUMERS = "/admin/ultimat3_jobs/consumercursor/"
REQUESTS = "/admin/ultimat3_jobs/subjectrequest/"
ENDPOINTS = "/admin/ultimat3_jobs/webhookendpoint/"
DELIVERIES = "/admin/ultimat3_jobs/webhookdelivery/"


def client_with(name: str, *perms: str) -> Client:
    client = Client()
    client.force_login(make_user(name, staff=True, perms=list(perms)))
    return client


def cells(page: bytes, column: str) -> list[str]:
    """The text of each ``<td class="field-<column>">`` of a changelist, in order."""
    found = re.findall(
        rf'<t[dh] class="field-{column}[^"]*"[^>]*>(.*?)</t[dh]>', page.decode(), re.S
    )
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in found]


# -- consumers ---------------------------------------------------------------------------------


def _record(items: list[FeedRow]) -> None:
    FeedHandled.objects.bulk_create(FeedHandled(row_id=row.id) for row in items)


@pytest.fixture
def feeds() -> Iterator[None]:
    consumer("admin-feed", source=FeedRow, handle=_record, batch_size=2)
    consumer("admin-idle", source=FeedRow, handle=_record, batch_size=2)
    yield
    for name in ("admin-feed", "admin-idle"):
        declare._consumers.remove(name)
        for job_name in (f"consumer:{name}", f"consumer:{name}.supervisor"):
            if job_name in registry:
                registry.unregister(job_name)


def _turn(name: str) -> None:
    spec = consumer_named(name)
    loop.turn(name, spec.source, spec.handle, spec.batch_size, spec.origin)


def test_the_consumers_page_reads_each_cursor_and_lag_at_each_view(feeds: None) -> None:
    rows = FeedRow.objects.bulk_create(FeedRow() for _ in range(5))
    _turn("admin-feed")
    ConsumerCursor.objects.create(name="gone-feed", cursor=7, handled=7, turns=1)
    client = client_with("watcher", "view_job")
    page = client.get(CONSUMERS)
    assert page.status_code == 200
    assert cells(page.content, "name") == ["admin-feed", "gone-feed"]
    assert cells(page.content, "cursor_text") == [str(rows[1].id), "7"]
    assert cells(page.content, "handled") == ["2", "7"]
    assert cells(page.content, "lag") == ["3", "not declared here"]
    # A declared consumer that never turned is named under the table.
    assert re.search(rb'id="consumers-without-turn".*admin-idle', page.content, re.S)
    # The next view reads the store again: another turn and a new row show at once.
    _turn("admin-feed")
    FeedRow.objects.create()
    page = client.get(CONSUMERS)
    assert cells(page.content, "handled") == ["4", "7"]
    assert cells(page.content, "cursor_text")[0] == str(rows[3].id)
    assert cells(page.content, "lag") == ["2", "not declared here"]


def test_the_consumers_page_is_read_only_and_needs_a_permission(feeds: None) -> None:
    _turn("admin-feed")
    assert client_with("nobody").get(CONSUMERS).status_code == 403
    for perms in (("view_job",), ("pause_queue",), ("view_consumercursor",)):
        client = client_with(f"c-{perms[0]}", *perms)
        assert client.get(CONSUMERS).status_code == 200, perms
    client = client_with("all-of-it", "view_job", "add_consumercursor", "change_consumercursor")
    assert client.get(f"{CONSUMERS}add/").status_code == 403
    detail = client.get(f"{CONSUMERS}admin-feed/change/")
    assert detail.status_code == 200 and b'name="_save"' not in detail.content
    client.post(f"{CONSUMERS}admin-feed/change/", {"name": "admin-feed", "handled": "999"})
    assert ConsumerCursor.objects.get(name="admin-feed").handled != 999
    assert client.get(f"{CONSUMERS}admin-feed/delete/").status_code == 403


# -- subject requests --------------------------------------------------------------------------


def _requests() -> dict[str, SubjectRequest]:
    made = {}
    for who, state, counts in (
        ("alice", "done", {"featureapp.Message": 3, "featureapp.Profile": 1}),
        ("bob", "running", {"featureapp.Message": 0}),
        ("alice", "failed", {}),
    ):
        made[f"{who}-{state}"] = SubjectRequest.objects.create(
            kind="erase",
            subject_digest=subject_digest(who),
            requested_by=f"dpo-{who}-{state}",
            state=state,
            counts=counts,
            plan=[{"table": label, "rows": n} for label, n in counts.items()],
        )
    return made


def test_subject_requests_show_state_and_counts_and_are_found_by_subject_id() -> None:
    made = _requests()
    client = client_with("dpo", "view_subjectrequest")
    page = client.get(REQUESTS)
    assert page.status_code == 200
    assert cells(page.content, "requested_by") == [
        "dpo-alice-failed",
        "dpo-bob-running",
        "dpo-alice-done",
    ]
    assert cells(page.content, "state") == ["failed", "running", "done"]
    assert cells(page.content, "per_table")[2] == "featureapp.Message 3, featureapp.Profile 1"
    found = client.get(REQUESTS, {"q": "alice"})
    assert cells(found.content, "requested_by") == ["dpo-alice-failed", "dpo-alice-done"]
    assert cells(client.get(REQUESTS, {"q": "carol"}).content, "requested_by") == []
    by_asker = client.get(REQUESTS, {"q": "dpo-bob-running"})
    assert cells(by_asker.content, "requested_by") == ["dpo-bob-running"]
    done = client.get(REQUESTS, {"state__exact": "done"})
    assert cells(done.content, "requested_by") == ["dpo-alice-done"]
    detail = client.get(f"{REQUESTS}{made['alice-done'].pk}/change/")
    assert detail.status_code == 200 and b"featureapp.Profile (1 rows)" in detail.content
    assert b'name="_save"' not in detail.content


def test_subject_requests_take_their_own_view_permission() -> None:
    made = _requests()
    # Seeing jobs, pausing queues: not enough to see who asked for what.
    for perms in ((), ("view_job",), ("view_job", "pause_queue", "view_consumercursor")):
        assert client_with(f"s-{len(perms)}", *perms).get(REQUESTS).status_code == 403
    client = client_with("dpo", "view_subjectrequest", "change_subjectrequest")
    assert client.get(f"{REQUESTS}add/").status_code == 403
    pk = made["bob-running"].pk
    client.post(f"{REQUESTS}{pk}/change/", {"state": "done", "requested_by": "x"})
    assert SubjectRequest.objects.get(pk=pk).state == "running"
    assert client.get(f"{REQUESTS}{pk}/delete/").status_code == 403


# -- the webhook ledger per endpoint -----------------------------------------------------------


def _ledger() -> dict[str, WebhookEndpoint]:
    endpoints = {
        name: ledger.add_endpoint(name, f"https://{name}.example.com/in")
        for name in ("billing", "shipping")
    }
    for name, status, event_type, code in (
        ("billing", "succeeded", "invoice.paid", 200),
        ("billing", "failed", "invoice.paid", 500),
        ("billing", "failed", "invoice.voided", 502),
        ("shipping", "succeeded", "parcel.sent", 204),
    ):
        ledger.record(
            endpoints[name],
            ledger.Attempt(
                job_id=uuid.uuid4(),
                event_id=f"msg_{name}_{event_type}_{code}",
                event_type=event_type,
                attempt=1,
                status=status,
                response_code=code,
            ),
        )
    return endpoints


def test_each_endpoint_links_to_its_own_ledger_which_filters() -> None:
    endpoints = _ledger()
    client = client_with("reader", "view_webhookendpoint", "view_webhookdelivery")
    page = client.get(ENDPOINTS)
    billing = endpoints["billing"].pk
    assert f'href="{DELIVERIES}?endpoint__id__exact={billing}"'.encode() in page.content
    own = client.get(DELIVERIES, {"endpoint__id__exact": billing})
    assert own.status_code == 200
    assert cells(own.content, "event_id") == [
        "msg_billing_invoice.voided_502",
        "msg_billing_invoice.paid_500",
        "msg_billing_invoice.paid_200",
    ]
    failed = client.get(DELIVERIES, {"endpoint__id__exact": billing, "status__exact": "failed"})
    assert cells(failed.content, "response_code") == ["502", "500"]
    typed = client.get(DELIVERIES, {"event_type": "parcel.sent"})
    assert cells(typed.content, "event_id") == ["msg_shipping_parcel.sent_204"]
    searched = client.get(DELIVERIES, {"q": "msg_billing_invoice.paid_500"})
    assert cells(searched.content, "event_id") == ["msg_billing_invoice.paid_500"]
    job_id = WebhookDelivery.objects.get(response_code=204).job_id
    assert cells(client.get(DELIVERIES, {"q": str(job_id)}).content, "event_id") == [
        "msg_shipping_parcel.sent_204"
    ]


def test_the_ledger_is_read_only_and_takes_its_own_permission() -> None:
    _ledger()
    endpoint_only = client_with("ops", "view_webhookendpoint")
    assert endpoint_only.get(DELIVERIES).status_code == 403
    assert b"endpoint__id__exact" not in endpoint_only.get(ENDPOINTS).content
    client = client_with("reader", "view_webhookdelivery", "change_webhookdelivery")
    row = WebhookDelivery.objects.get(response_code=500)
    assert client.get(f"{DELIVERIES}add/").status_code == 403
    detail = client.get(f"{DELIVERIES}{row.pk}/change/")
    assert detail.status_code == 200 and b'name="_save"' not in detail.content
    client.post(f"{DELIVERIES}{row.pk}/change/", {"status": "succeeded", "response_code": 200})
    assert WebhookDelivery.objects.get(pk=row.pk).status == "failed"
    assert client.get(f"{DELIVERIES}{row.pk}/delete/").status_code == 403
    assert WebhookDelivery.objects.count() == 4
