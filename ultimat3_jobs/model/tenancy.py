"""Tenancy: whom an enqueue is for, which tenant a job row keeps, and the scope a run gets.

Layer L3 (job model). Each rule is here, once:

- **The enqueuer's tenant**: ``using(tenant=...)`` when given (``None`` says "no tenant"), else
  what the ``TENANT_RESOLVER`` callable answers now, else unknown (no resolver configured).
- **The row's tenant** is the enqueuer's. A job whose ``tenant`` rule is a callable of the input
  must answer that same tenant: any other answer refuses the enqueue with
  :class:`~ultimat3_jobs.errors.JobTenantMismatch` (``X_JOB_TENANT_MISMATCH``) before anything
  is written. With the enqueuer's tenant unknown, the row keeps the input's tenant.
- **The run's tenant** is the row's, except for a job declared ``tenant="none"``, which runs
  with no tenant (fail-closed), whoever enqueued it.
- **The scope**: :func:`tenant_scope` installs a tenant for :func:`current_tenant` and enters
  the ``TENANT_CONTEXT`` factory's context manager (called with the tenant, ``None`` included,
  so that it clears what a previous scope set). The worker enters it around each body and each
  ``on_settled``; :class:`ultimat3_jobs.tenancy.TenantMiddleware` around each request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ultimat3_jobs.conf import Settings, get_settings
from ultimat3_jobs.errors import (
    EnqueueRefused,
    JobInputInvalid,
    JobOptionInvalid,
    JobsConfigurationError,
    JobTenantMismatch,
)
from ultimat3_jobs.model.context import (
    JobContext,
    current_job,
    current_tenant,
    install_scope,
    uninstall_scope,
)
from ultimat3_jobs.model.hooks import setting_hook
from ultimat3_jobs.model.options import RESOLVE, EnqueueOptions

if TYPE_CHECKING:
    from ultimat3_jobs.model.job_definition import JobDefinition

__all__ = [
    "UNKNOWN",
    "check_tenancy_hooks",
    "current_tenant",
    "enqueuer_tenant",
    "row_tenant",
    "run_tenant",
    "tenancy_hook",
    "tenant_scope",
]

TENANT_MAX_LENGTH = 200
HOOK_KEYS = ("TENANT_RESOLVER", "TENANT_CONTEXT", "TENANT_FROM_REQUEST")


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
"""The enqueuer's tenant when neither ``using(tenant=...)`` nor ``TENANT_RESOLVER`` says it."""


def storable_text(text: str) -> bool:
    """Text the job store can hold: no NUL, no lone surrogate."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(value: Any, refuse: type[EnqueueRefused], whose: str) -> str | None:
    """A tenant as stored: ``None``, or text; text the store cannot hold is refused with
    ``refuse`` (field ``tenant``, rule ``tenant-text``), its message starting with ``whose``."""
    tenant_id = None if value is None else str(value)
    if tenant_id is not None and (
        len(tenant_id) > TENANT_MAX_LENGTH or not storable_text(tenant_id)
    ):
        raise refuse(
            f"{whose} must be text of at most {TENANT_MAX_LENGTH} characters; "
            f"got {tenant_id!r:.80}",
            field="tenant",
            rule="tenant-text",
        )
    return tenant_id


# -- the hooks ------------------------------------------------------------------------------


tenancy_hook = setting_hook
"""The callable a tenancy setting names (``TENANT_RESOLVER``, ``TENANT_CONTEXT`` or
``TENANT_FROM_REQUEST``), or ``None`` when unset: see
:func:`~ultimat3_jobs.model.hooks.setting_hook`."""


def check_tenancy_hooks(settings: Settings) -> list[tuple[str, str]]:
    """``(key, message)`` for each tenancy setting that names no callable (system checks)."""
    problems = []
    for key in HOOK_KEYS:
        try:
            tenancy_hook(settings, key)
        except JobsConfigurationError as exc:
            problems.append((key, exc.message))
    return problems


# -- enqueue --------------------------------------------------------------------------------


def _decided(
    ask: Callable[..., Any],
    args: tuple[Any, ...],
    refuse: type[EnqueueRefused],
    rule: str,
    whose: str,
    failed: str,
) -> str | None:
    """What the tenant hook ``ask`` answers for ``args``, as stored (:func:`_text`, ``whose``);
    a hook that raises is refused with ``refuse`` (field ``tenant``, ``rule``), its message
    ``failed`` (``{}`` standing for ``whose``) followed by the exception. Nothing is formatted
    unless the hook raises: the enqueue path calls this."""
    try:
        value = ask(*args)
    except Exception as exc:
        message = f"{failed.format(whose)} {type(exc).__name__}: {exc}"
        raise refuse(message, field="tenant", rule=rule) from exc
    return _text(value, refuse, whose)


_RESOLVED = "the enqueuer's tenant (from the TENANT_RESOLVER callable)"
_UNRESOLVED = "the enqueuer's tenant could not be decided: the TENANT_RESOLVER callable raised"


def enqueuer_tenant(options: EnqueueOptions, settings: Settings) -> str | None:
    """The tenant of the code enqueuing now (see the module's rules), or :data:`UNKNOWN`.
    Refused with :class:`~ultimat3_jobs.errors.JobOptionInvalid` (field ``tenant``) when
    ``using(tenant=...)`` or the resolver answers something that is not a tenant, or the
    resolver raises."""
    if options.tenant is not RESOLVE:
        whose = "the enqueuer's tenant (from using(tenant=...))"
        return _text(options.tenant, JobOptionInvalid, whose)
    resolver = tenancy_hook(settings, "TENANT_RESOLVER")
    if resolver is None:
        return UNKNOWN  # type: ignore[no-any-return]  # the sentinel
    return _decided(resolver, (), JobOptionInvalid, "tenant-resolver", _RESOLVED, _UNRESOLVED)


def input_tenant(definition: JobDefinition, input: Mapping[str, Any]) -> str | None:
    """What the job's ``tenant`` rule answers for ``input`` (``None`` for ``"none"``)."""
    whose = f"the tenant of job {definition.name!r}"
    failed = "{} could not be decided from its input:"
    return _decided(
        definition.tenant_for, (input,), JobInputInvalid, "tenant-from-input", whose, failed
    )


def call_tenant(definition: JobDefinition, enqueuer: Any) -> tuple[bool, str | None]:
    """``(True, tenant)`` when every row one enqueuer writes for this job keeps ``tenant``,
    whatever its input (a job whose ``tenant`` rule is ``"none"`` keeps the enqueuer's):
    a batch then asks :func:`row_tenant` nothing per job. ``(False, None)`` otherwise."""
    if definition.tenant == "none":
        return True, None if enqueuer is UNKNOWN else enqueuer
    return False, None


def row_tenant(definition: JobDefinition, input: Mapping[str, Any], enqueuer: Any) -> str | None:
    """The tenant a job row keeps: the enqueuer's (``enqueuer``, from :func:`enqueuer_tenant`).
    A job whose ``tenant`` callable answers another tenant for ``input`` is refused with
    :class:`~ultimat3_jobs.errors.JobTenantMismatch`; nothing is written."""
    fixed, tenant = call_tenant(definition, enqueuer)
    if fixed:
        return tenant
    tenant_id = input_tenant(definition, input)
    if enqueuer is UNKNOWN or tenant_id == enqueuer:
        return tenant_id
    raise JobTenantMismatch(
        f"job {definition.name!r}: its input is for tenant {tenant_id!r:.80}, but it is "
        f"enqueued by tenant {enqueuer!r:.80}; a job is enqueued only by its own tenant "
        "(or enqueue it with using(tenant=...)); nothing was written",
        field="tenant",
        rule="tenant-of-enqueuer",
    )


# -- run ------------------------------------------------------------------------------------


def run_tenant(definition: JobDefinition | None, tenant_id: str | None) -> str | None:
    """The tenant a run of a job row acts for: the row's, or ``None`` for a job declared
    ``tenant="none"`` (and for a job this process does not declare)."""
    if definition is None or definition.tenant == "none":
        return None
    return tenant_id


class TenantScope:
    """The context manager :func:`tenant_scope` answers: a class, not a generator, since the
    worker enters one around every body. The worker's also installs the job's context
    (``job``: :func:`~ultimat3_jobs.model.context.current_job` answers it inside), with the
    tenant in one context variable; another scope keeps the job's context it runs in."""

    __slots__ = ("_inner", "_job", "_settings", "_tenant_id", "_token")

    def __init__(
        self,
        tenant_id: str | None,
        settings: Settings | None = None,
        job: JobContext | None = None,
    ) -> None:
        """``job`` may come by position: the worker's scope per body passes no keyword (a
        class called with one copies it into a new dict)."""
        self._tenant_id = tenant_id
        self._settings = settings
        self._job = job
        self._inner: ExitStack | None = None

    def __enter__(self) -> None:
        global _context_hooks
        settings = self._settings or get_settings()
        hooks = _context_hooks  # looked up here, not in a function of its own: a scope per body
        if hooks is None or hooks[0] is not settings:
            hooks = _context_hooks = (settings, tenancy_hook(settings, "TENANT_CONTEXT"))
        factory = hooks[1]
        job = self._job
        self._token = install_scope((self._tenant_id, current_job() if job is None else job))
        if factory is None:
            return
        inner = ExitStack()  # refuses what is no context manager as a ``with`` does
        try:
            inner.enter_context(factory(self._tenant_id))
        except BaseException:
            self.__exit__(None, None, None)  # no inner yet: uninstalls only
            raise
        self._inner = inner

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        try:
            return None if self._inner is None else self._inner.__exit__(kind, exc, tb)
        finally:
            uninstall_scope(self._token)


_context_hooks: tuple[Settings, Callable[..., Any] | None] | None = None
"""The last settings' ``TENANT_CONTEXT`` hook, beside them: a scope is entered around every
body, and the settings are one object until they change (``reset_settings``)."""


def tenant_scope(tenant_id: str | None, settings: Settings | None = None) -> TenantScope:
    """Run the block as ``tenant_id`` (``None``: no tenant): :func:`current_tenant` answers it,
    and the ``TENANT_CONTEXT`` factory's context manager, called with it, is entered around
    the block. Works in threads and in asyncio tasks alike (context variables)."""
    return TenantScope(tenant_id, settings)
