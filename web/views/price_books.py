"""Price books: the global book's and the selected team's versions, one version's entries, what it changed
and what it moved, and the publication of a team's next version.

Scoping and roles are the API's (``api.views.price_books``): every signed-in user reads the global book
and the books of their teams (another team's book is a 404); an editor of a team publishes that team's
book; the global book is never written from here (nor through the API: the operator publishes it).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.views import View
from django.views.generic import TemplateView

from api.serializers.price_books import PriceBookPublishSerializer
from scenarios import services
from scenarios.models import ROLE_EDITOR, Event, PriceBook, PriceEntry
from web.access import TeamPageMixin, team_access
from web.budget import SpendsBudgetMixin
from web.price_book_forms import PublishForms
from web.price_book_moves import FIGURES, book_moves
from web.templatetags.planner_format import usd

# How each kind's price is printed after its dollar figure (the stored unit stays in the Unit column).
PER_UNIT = {"accelerator": "", "node": "", "cloud": " /GPU-h", "electricity": " /kWh"}


def price_text(kind: str, value: Any) -> str:
    """A price entry as it was given (up to ten significant digits, not the three of the report's figures):
    0.05124 $/kWh and 0.05121 $/kWh are different prices and must read differently."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return usd(value)
    sign = "−" if number < 0 else ""
    return f"{sign}${abs(number):,.10g}{PER_UNIT.get(kind, '')}"


def plan_url(plan_id: int) -> str:
    return reverse("web:plan-detail", args=[plan_id])


class PriceBookScopeMixin(TeamPageMixin):
    """Books the user may read: the global ones and their teams' (the API's rule)."""

    def books(self) -> QuerySet[PriceBook]:
        visible = Q(team__isnull=True) | Q(team_id__in=self.access.team_ids)
        return PriceBook.objects.filter(visible).select_related("team", "created_by")


class PriceBookListView(PriceBookScopeMixin, TemplateView):
    template_name = "web/price_books/list.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        team = self.access.team
        scope = Q(team__isnull=True) | (Q(team=team) if team is not None else Q(pk__in=[]))
        books = list(
            self.books()
            .filter(scope)
            .annotate(entry_count=Count("entries"))
            .order_by("-published_at", "-version", "-id")
        )
        context.update(
            nav="price-books",
            global_books=[book for book in books if book.team_id is None],
            team_books=[book for book in books if book.team_id is not None],
            team=team,
        )
        return context


class PriceBookDetailView(PriceBookScopeMixin, TemplateView):
    template_name = "web/price_books/detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        book = self.books().filter(pk=kwargs["pk"]).first()
        if book is None:
            raise Http404("No such price book.")
        entries = list(PriceEntry.objects.filter(price_book=book).order_by("kind", "key"))
        changes = services.price_book_changes(book=book)
        team_ids = [book.team_id] if book.team_id is not None else self.access.team_ids
        moves = book_moves(book=book, team_ids=team_ids, plans_to_rerun=self._plans_to_rerun(book))
        context.update(
            nav="price-books",
            book=book,
            previous_version=book.version - 1 if book.version > 1 else None,
            entries=[(entry, price_text(entry.kind, entry.value)) for entry in entries],
            added=[(item, price_text(item["kind"], item["value"])) for item in changes.added],
            removed=[(item, price_text(item["kind"], item["value"])) for item in changes.removed],
            changed=[
                (item, price_text(item["kind"], item["before"]), price_text(item["kind"], item["after"]))
                for item in changes.changed
            ],
            unchanged=changes.unchanged,
            moves=moves,
            figure_labels=[label for _, label, _ in FIGURES],
            moved_rows=[
                (plan, plan_url(plan.plan_id), reverse("result-diff", args=[plan.result_id]))
                for plan in moves.moved
            ],
            failed_rows=[(plan_id, name, error, plan_url(plan_id)) for plan_id, name, error in moves.failed],
            # The publish page writes the selected team's book: offered on that book's pages only.
            can_edit=self.access.team is not None
            and book.team_id == self.access.team.pk
            and self.access.can(ROLE_EDITOR, book.team_id),
        )
        return context

    @staticmethod
    def _plans_to_rerun(book: PriceBook) -> int | None:
        """The count the publication recorded for a team book (a global book's event has none)."""
        if book.team_id is None:
            return None
        try:
            count = services.published_summary(book=book)["plans_to_rerun"]
        except Event.DoesNotExist:
            return None
        return count if isinstance(count, int) else None


class PriceBookPublishView(SpendsBudgetMixin, TeamPageMixin, View):
    """Publish the selected team's next version, as ``POST /api/v1/price-books/`` does (editor role); it
    spends the ``run`` budget, as publishing re-runs the plans whose prices it moves."""

    budget_scope = "run"

    template_name = "web/price_books/new.html"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.user.is_authenticated:
            team_access(request).require(ROLE_EDITOR)  # a viewer's GET or POST is a 403
        return super().dispatch(request, *args, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._render(PublishForms.bind(None, initial_name=self._initial_name()))

    def post(self, request: HttpRequest) -> HttpResponse:
        forms = PublishForms.bind(request.POST)
        body = forms.request_body()
        if body is None:
            return self._render(forms, status=400)
        serializer = PriceBookPublishSerializer(data=body)
        if not serializer.is_valid():
            forms.show(serializer.errors)
            return self._render(forms, status=400)
        data = serializer.validated_data
        try:
            book = services.price_book_publish(
                team=self.access.team,
                user=request.user,
                name=data["name"],
                entries=[dict(entry) for entry in data["entries"]],
                notes=data.get("notes", ""),
                source=data.get("source", ""),
                mode=data["mode"],
            )
        except ValidationError as exc:
            forms.show(exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages})
            return self._render(forms, status=400)
        return HttpResponseRedirect(reverse("web:price-book-detail", args=[book.pk]))

    def _initial_name(self) -> str:
        team = self.access.team
        last = PriceBook.objects.filter(team=team).order_by("-version").values_list("name", flat=True).first()
        return last or (f"{team.name} prices" if team is not None else "")

    def _render(self, forms: PublishForms, status: int = 200) -> HttpResponse:
        context = {
            "nav": "price-books",
            "access": self.access,
            "can_edit": True,
            "team": self.access.team,
            "form": forms.form,
            "entries": forms.entries,
            "row_errors": forms.row_errors(),
        }
        return render(self.request, self.template_name, context, status=status)


urlpatterns = [
    path("price-books/", PriceBookListView.as_view(), name="price-books"),
    path("price-books/new/", PriceBookPublishView.as_view(), name="price-book-new"),
    path("price-books/<int:pk>/", PriceBookDetailView.as_view(), name="price-book-detail"),
]
