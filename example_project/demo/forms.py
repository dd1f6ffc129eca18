from __future__ import annotations

from django import forms

MAX_WELCOME_EMAILS = 100


class WelcomeEmailsForm(forms.Form):
    count = forms.IntegerField(
        label="Welcome emails to enqueue",
        min_value=1,
        max_value=MAX_WELCOME_EMAILS,
        initial=5,
    )


class SyncAccountForm(forms.Form):
    account_id = forms.IntegerField(label="Account id", min_value=1, initial=42)
