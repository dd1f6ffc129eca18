"""Operating endpoints: the admin (add, disable, enable, rotate, each behind its permission; the
ledger read-only) and ``manage.py jobs webhooks`` (list, test ping, the same verbs)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import standardwebhooks
from django.core.management import CommandError, call_command
from django.test import Client

from tests.admin.conftest import make_user
from ultimat3_jobs.models import WebhookDelivery, WebhookEndpoint
from ultimat3_jobs.webhooks import ledger

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = "/admin/ultimat3_jobs/webhookendpoint/"


def jobs_cli(*args: str) -> str:
    out = StringIO()
    call_command("jobs", "webhooks", *args, stdout=out)
    return out.getvalue()


def test_the_test_ping_is_signed_and_leaves_the_ledger_alone(http_server, loopback_allowed):
    endpoint = ledger.add_endpoint("shop", http_server.url())
    ledger.disable("shop")
    assert "answered 200" in jobs_cli("test", "shop")
    [request] = http_server.script.received
    event = standardwebhooks.Webhook(endpoint.secret).verify(request.body, request.headers)
    assert event["type"] == "webhook.test"
    assert WebhookDelivery.objects.count() == 0
    http_server.script.answers = [(500, {}, b"nope")]
    with pytest.raises(CommandError, match="answered 500"):
        jobs_cli("test", "shop")


def test_the_test_ping_goes_through_the_guard(http_server):
    ledger.add_endpoint("shop", http_server.url())
    with pytest.raises(CommandError, match="X_WEBHOOK_DESTINATION_REFUSED"):
        jobs_cli("test", "shop")
    assert http_server.script.received == []


def test_the_cli_verbs(http_server):
    ledger.add_endpoint("shop", http_server.url(), tenant_id="acme")
    old = WebhookEndpoint.objects.get().secret
    assert "disabled" in jobs_cli("disable", "shop", "--reason", "maintenance")
    listed = json.loads(jobs_cli("list", "--json"))
    assert listed[0]["enabled"] is False and listed[0]["disabled_reason"] == "maintenance"
    assert "secret" not in json.dumps(listed)
    assert "shop" in jobs_cli("list") and old not in jobs_cli("list")
    assert "enabled" in jobs_cli("enable", "shop")
    assert WebhookEndpoint.objects.get().enabled
    printed = jobs_cli("rotate-secret", "shop")
    row = WebhookEndpoint.objects.get()
    assert row.secret in printed and row.previous_secret == old
    with pytest.raises(CommandError, match="X_WEBHOOK_ENDPOINT_NOT_FOUND"):
        jobs_cli("enable", "nobody")


def admin_client(name: str, perms: list[str]) -> Client:
    client = Client()
    client.force_login(make_user(name, staff=True, perms=perms))
    return client


def test_each_action_needs_its_own_permission(http_server):
    ledger.add_endpoint("shop", http_server.url())
    viewer = admin_client("viewer", ["view_webhookendpoint"])
    page = viewer.get(CHANGELIST)
    assert page.status_code == 200 and b"shop" in page.content
    assert b"disable_endpoints" not in page.content
    disabler = admin_client("disabler", ["view_webhookendpoint", "disable_webhookendpoint"])
    page = disabler.get(CHANGELIST)
    assert b"disable_endpoints" in page.content
    assert b"enable_endpoints" not in page.content and b"rotate_secrets" not in page.content
    pk = WebhookEndpoint.objects.get().pk
    # An action the user lacks is refused on the server, whatever the form posts.
    disabler.post(CHANGELIST, {"action": "rotate_secrets", "_selected_action": [pk]})
    assert WebhookEndpoint.objects.get().previous_secret == ""
    disabler.post(CHANGELIST, {"action": "disable_endpoints", "_selected_action": [pk]})
    row = WebhookEndpoint.objects.get()
    assert not row.enabled and row.disabled_reason == "disabled by admin:disabler"
    enabler = admin_client("enabler", ["view_webhookendpoint", "enable_webhookendpoint"])
    enabler.post(CHANGELIST, {"action": "enable_endpoints", "_selected_action": [pk]})
    assert WebhookEndpoint.objects.get().enabled
    rotator = admin_client("rotator", ["view_webhookendpoint", "rotate_webhookendpoint_secret"])
    answer = rotator.post(
        CHANGELIST, {"action": "rotate_secrets", "_selected_action": [pk]}, follow=True
    )
    row = WebhookEndpoint.objects.get()
    assert row.previous_secret and row.secret.encode() in answer.content


def test_adding_an_endpoint_shows_its_secret_once_and_never_again():
    adder = admin_client("adder", ["view_webhookendpoint", "add_webhookendpoint"])
    answer = adder.post(
        f"{CHANGELIST}add/",
        {"name": "billing", "url": "https://hooks.example.com/in", "tenant_id": ""},
        follow=True,
    )
    row = WebhookEndpoint.objects.get()
    assert row.tenant_id is None and row.secret.startswith("whsec_")
    assert row.secret.encode() in answer.content
    page = adder.get(f"{CHANGELIST}{row.pk}/change/")
    assert page.status_code == 200 and row.secret.encode() not in page.content
    refused = adder.post(f"{CHANGELIST}add/", {"name": "x", "url": "ftp://nope", "tenant_id": ""})
    assert refused.status_code == 200 and b"X_WEBHOOK_ENDPOINT_INVALID" in refused.content
    assert WebhookEndpoint.objects.count() == 1


def test_the_ledger_is_read_only_and_filtered(http_server, loopback_allowed):
    ledger.add_endpoint("shop", http_server.url())
    reader = admin_client("reader", ["view_webhookdelivery"])
    page = reader.get("/admin/ultimat3_jobs/webhookdelivery/?status__exact=failed")
    assert page.status_code == 200
    assert reader.get("/admin/ultimat3_jobs/webhookdelivery/add/").status_code == 403
