from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import Count, QuerySet, Window
from rest_framework import pagination

# Far past any list the site holds, and far below the 64-bit OFFSET the databases take
# (?page=9223372036854775807 made PostgreSQL raise "bigint out of range", a 500).
MAX_PAGE = 1_000_000


class WindowCountPaginator(Paginator):
    """Fetches a page and the number of rows in all pages in one query (`COUNT(*) OVER ()`), not
    in a COUNT query of its own that would filter (and search) the bank a second time."""

    def page(self, number) -> Page:
        if not isinstance(self.object_list, QuerySet):
            return super().page(number)
        number = self._number(number)
        bottom = (number - 1) * self.per_page
        counted = self.object_list.annotate(_rows_in_all_pages=Window(Count("pk")))
        rows = list(counted[bottom : bottom + self.per_page])
        if rows:
            self.__dict__["count"] = rows[0]._rows_in_all_pages
        elif number > 1:
            raise EmptyPage(self.error_messages["no_results"])
        else:
            self.__dict__["count"] = 0
        return Page(rows, number, self)

    def _number(self, number) -> int:
        # validate_number() without the count it reads first.
        try:
            if isinstance(number, float) and not number.is_integer():
                raise ValueError
            number = int(number)
        except (TypeError, ValueError):
            raise PageNotAnInteger(self.error_messages["invalid_page"]) from None
        if number < 1:
            raise EmptyPage(self.error_messages["min_page"])
        if number > MAX_PAGE:
            raise EmptyPage(self.error_messages["no_results"])
        return number


class PageNumberPagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 100
    django_paginator_class = WindowCountPaginator
