"""Settings of the example project. Development only: see the notes on SECRET_KEY and DEBUG.

Environment:

- ``DATABASE_URL``, e.g. ``postgres://user:password@127.0.0.1:5432/demo``. When it is unset,
  the embedded PostgreSQL that ``./scripts/demo`` runs is used if it is running (so
  ``python manage.py jobs ...`` works beside the demo); otherwise the settings refuse to load.
- ``DJANGO_SECRET_KEY``: the default is a public, development-only value.
- ``DJANGO_DEBUG``: ``1`` (default) or ``0``.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from example_project.dburl import NoDatabaseURL, database_from_url, resolve_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get(
    "DJANGO_SECRET_KEY", "dev-only-insecure-secret-key-for-the-ultimat3-jobs-example-project"
)
DEBUG = os.environ.get("DJANGO_DEBUG", "1").strip().lower() in {"1", "true", "yes", "on"}
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ultimat3_jobs",
    "example_project.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "example_project.wsgi.application"

try:
    _database_url = resolve_database_url(os.environ, BASE_DIR)
except NoDatabaseURL as exc:
    raise ImproperlyConfigured(str(exc)) from None
try:
    DATABASES = {"default": database_from_url(_database_url)}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not usable: {exc}") from exc

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The demo's "emails" are written as files here instead of being sent.
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = BASE_DIR / ".local" / "demo-mail"
DEFAULT_FROM_EMAIL = "demo@example.com"

ULTIMAT3_JOBS = {
    "DRIVER": "postgres",
    "DEFAULT_TENANT": "none",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "{asctime} {levelname} {name}: {message}", "style": "{"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
    },
    "loggers": {
        "ultimat3_jobs": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "example_project": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
