"""Settings for the test suite (pytest reads them through ``DJANGO_SETTINGS_MODULE``).

``DATABASE_URL`` picks the PostgreSQL server (default: the one on 127.0.0.1:5432); Django creates
and drops its own ``test_<name>`` database there. ``REDIS_URL``, when set, enables the tests
that need Redis. ``./scripts/test`` sets both.
"""

from __future__ import annotations

import os

import django

from example_project.dburl import database_from_url

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres"

SECRET_KEY = "tests-only-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "ultimat3_jobs",
    "tests.testapp",
    "tests.featureapp",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "tests.urls"

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

DATABASES = {
    "default": database_from_url(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL),
}
# A second database on the same server: the outbox tests point the job store at it, so that
# an enqueue inside a transaction on "default" must go through x_outbox and the relay.
DATABASES["jobs"] = {**DATABASES["default"], "NAME": f"{DATABASES['default']['NAME']}_jobs"}

REDIS_URL: str | None = os.environ.get("REDIS_URL") or None

# The "redis" cache is the Redis driver's client (ULTIMAT3_JOBS['REDIS_ALIAS']) in the tests that
# build it; nothing connects to it unless REDIS_URL is set.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "redis": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL or "redis://127.0.0.1:6379/0",
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 5},
    },
}

ULTIMAT3_JOBS = {
    "DRIVER": "postgres",
    "DEFAULT_TENANT": "none",
}

# Hashing cost is irrelevant in tests; MD5 keeps user creation fast.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django 6.0+ only: on 5.2 ultimat3_jobs refuses the backend at start-up (no Tasks framework).
if django.VERSION >= (6, 0):
    TASKS = {
        "default": {
            "BACKEND": "ultimat3_jobs.contrib.django_tasks.JobsBackend",
            "QUEUES": ["default", "math"],
            "OPTIONS": {"max_attempts": 3, "backoff_base_seconds": 0.01, "jitter": 0},
        }
    }
