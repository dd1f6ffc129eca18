"""The features' public names live where the docs say: ``ultimat3_jobs.webhooks``,
``ultimat3_jobs.consumers`` and ``ultimat3_jobs.subjects``, each loaded on first use."""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "ultimat3_jobs.webhooks": (
        "webhook",
        "webhook_receiver",
        "webhook_receiver_urls",
        "standard_webhooks_verify",
    ),
    "ultimat3_jobs.consumers": ("consumer", "registered_consumers"),
    "ultimat3_jobs.subjects": ("register_subject_table", "subject_export", "subject_erase"),
}


@pytest.mark.parametrize(("package", "names"), sorted(PUBLIC.items()))
def test_each_feature_exports_its_names(package: str, names: tuple[str, ...]) -> None:
    module = importlib.import_module(package)
    for name in names:
        assert name in module.__all__, (package, name)
        assert callable(getattr(module, name)), (package, name)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018
