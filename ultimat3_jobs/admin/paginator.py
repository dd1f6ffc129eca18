"""A paginator that never counts the table.

Django's paginator asks ``count()`` of the whole filtered queryset, a ``COUNT(*)`` that reads
every matching row: on a table of millions of jobs, seconds per page. :class:`WindowPaginator`
reads the page asked for plus one row, in one query, and answers a ``count`` that only says
whether a next page exists: ``offset + rows read``, so ``num_pages`` is the current page, or
one more when the extra row came back. The rows read are kept and served as the page, so a
page costs that one query.

Layer: surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from django.core.paginator import EmptyPage, Page, Paginator


class WindowPaginator(Paginator):  # type: ignore[type-arg]
    """Pages of ``per_page`` rows of an ordered queryset, read ``per_page + 1`` at a time.

    ``page_number`` is the page the request asks for (the admin's ``p`` parameter): the only
    page whose rows :attr:`count` reads. Any other page is read with a slice of its own."""

    def __init__(
        self,
        object_list: Any,
        per_page: int | str,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
        *,
        page_number: int = 1,
    ) -> None:
        # No orphans: folding a short last page into the previous one would need its size.
        super().__init__(object_list, per_page, 0, allow_empty_first_page)
        self.page_number = max(1, int(page_number))

    @property
    def offset(self) -> int:
        return (self.page_number - 1) * int(self.per_page)

    @cached_property
    def window(self) -> list[Any]:
        """The rows of page :attr:`page_number`, and the first row of the next page if any."""
        per_page = int(self.per_page)
        return list(self.object_list[self.offset : self.offset + per_page + 1])

    @cached_property
    def count(self) -> int:
        """Not a count: ``offset`` plus the rows of the window, so ``num_pages`` is the current
        page, or one more when a next page exists."""
        return self.offset + len(self.window)

    @property
    def rows(self) -> list[Any]:
        """The rows of page :attr:`page_number` (the window without its look-ahead row)."""
        return self.window[: int(self.per_page)]

    @property
    def has_next(self) -> bool:
        return len(self.window) > int(self.per_page)

    def page(self, number: int | str) -> Page:  # type: ignore[type-arg]
        number = self.validate_number(number)
        if number != self.page_number:
            return super().page(number)
        if number > 1 and not self.rows:
            raise EmptyPage("That page contains no results")
        rows: Sequence[Any] = self.rows
        return Page(rows, number, self)
