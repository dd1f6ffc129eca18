"""The demo page: enqueue jobs, see the newest ones."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from example_project.demo.forms import SyncAccountForm, WelcomeEmailsForm
from example_project.demo.jobs import send_welcome, sync_account
from ultimat3_jobs.models import Job

NEWEST_JOBS = 20


@require_http_methods(["GET", "POST"])
def index(request: HttpRequest) -> HttpResponse:
    welcome_form = WelcomeEmailsForm()
    sync_form = SyncAccountForm()
    if request.method == "POST":
        if request.POST.get("action") == "sync":
            sync_form = SyncAccountForm(request.POST)
            if sync_form.is_valid():
                return enqueue_sync(request, sync_form.cleaned_data["account_id"])
        else:
            welcome_form = WelcomeEmailsForm(request.POST)
            if welcome_form.is_valid():
                return enqueue_welcome_emails(request, welcome_form.cleaned_data["count"])

    jobs = Job.objects.only("id", "name", "queue", "state", "attempt", "created_at").order_by(
        "-created_at"
    )[:NEWEST_JOBS]
    return render(
        request,
        "demo/index.html",
        {"welcome_form": welcome_form, "sync_form": sync_form, "jobs": jobs, "newest": NEWEST_JOBS},
    )


def enqueue_welcome_emails(request: HttpRequest, count: int) -> HttpResponse:
    # A real sign-up view would create the users in this same transaction: the jobs become
    # visible to workers only if, and when, it commits.
    with transaction.atomic():
        if count == 1:
            result = send_welcome.enqueue(user_id=1, email="user1@example.com")
            messages.success(request, f"Enqueued job {result.id} ({result.status}).")
        else:
            send_welcome.enqueue_many(
                [{"user_id": n, "email": f"user{n}@example.com"} for n in range(1, count + 1)]
            )
            messages.success(request, f"Enqueued {count} welcome emails.")
    return redirect("index")


def enqueue_sync(request: HttpRequest, account_id: int) -> HttpResponse:
    with transaction.atomic():
        result = sync_account.enqueue(account_id=account_id, api_token=secrets.token_hex(16))
    messages.success(request, f"Enqueued account sync {result.id} ({result.status}).")
    return redirect("index")
