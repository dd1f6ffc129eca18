"""How a process's config (the worker's, the relay's, the scheduler's) starts from
``ULTIMAT3_JOBS``: each config names, in ``SETTINGS``, where each of its fields starts, and the
command line's options override that."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from ultimat3_jobs.conf import Settings, get_settings

type FieldSource = str | Callable[[Settings], Any]
"""A ``Settings`` attribute's name, or a function of the settings for a field no one setting
holds as is."""


def config_from_settings[C: FromSettings](
    cls: type[C], settings: Settings | None, options: dict[str, Any]
) -> C:
    """``cls`` built from ``cls.SETTINGS`` read on ``settings`` (the current ones unless given),
    then any option given (``None`` keeps the setting)."""
    s = settings or get_settings()
    fields = {
        name: getattr(s, source) if isinstance(source, str) else source(s)
        for name, source in cls.SETTINGS.items()
    }
    fields.update((name, value) for name, value in options.items() if value is not None)
    return cls(**fields)


class FromSettings:
    """Mixed into a frozen config dataclass: ``SETTINGS`` maps each field that starts from the
    settings to its source, and :meth:`from_settings` builds the config from them."""

    __slots__ = ()

    SETTINGS: ClassVar[Mapping[str, FieldSource]] = {}

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **options: Any) -> Self:
        """Settings first, then any option given (``None`` keeps the setting)."""
        return config_from_settings(cls, settings, options)
