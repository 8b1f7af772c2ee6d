"""The publish form of a team's price book: what a browser sends, turned into the API's publish request.

The form only collects text. Every rule (kinds, keys, ranges, units, removals, duplicates, lengths) is the
API's: the request is checked by the API's own ``PriceBookPublishSerializer`` and then by
``services.price_book_publish`` (which runs ``price_entries_validate``), exactly as ``POST
/api/v1/price-books/`` does. Their errors name paths such as ``entries[2].value``; ``PublishForms.show``
puts each one on the row and field it names, so the page says "Entry 3, value: ...".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from scenarios.models import PRICE_MODE_CHOICES, PRICE_MODE_PATCH, PriceBook
from solvers.prices import PRICE_KIND_CHOICES

ENTRY_ROWS = 5
ENTRY_FIELDS = ("kind", "key", "value", "source", "remove")
_ENTRY_PATH = re.compile(r"^entries\[(\d+)\](?:\.(\w+))?$")


class PublishForm(forms.Form):
    """The version's name, mode and provenance; lengths are the model's (the API serializer's too)."""

    name = forms.CharField(
        label="Name",
        max_length=PriceBook._meta.get_field("name").max_length,
        help_text="A short name for this version, e.g. 'Q3 electricity contract'.",
    )
    mode = forms.ChoiceField(
        label="Mode",
        choices=[(mode, mode) for mode, _ in PRICE_MODE_CHOICES],
        initial=PRICE_MODE_PATCH,
        help_text="patch: the rows change the previous version and every other key is kept (a row marked "
        "Remove deletes its key); replace: the rows are the whole book.",
    )
    source = forms.CharField(
        label="Source",
        required=False,
        max_length=PriceBook._meta.get_field("source").max_length,
        help_text="Where these prices come from (a contract, a quote, a published tariff).",
    )
    notes = forms.CharField(label="Note", required=False, widget=forms.Textarea(attrs={"rows": 3}))


class EntryForm(forms.Form):
    """One row: a price (kind, key, value, source) or, in a patch, the removal of a key. All text: the
    API's serializer and the publish service judge it."""

    kind = forms.CharField(
        label="Kind",
        required=False,
        widget=forms.Select(choices=[("", "(choose)"), *PRICE_KIND_CHOICES]),
    )
    key = forms.CharField(label="Key", required=False)
    value = forms.CharField(
        label="Value", required=False, widget=forms.TextInput(attrs={"inputmode": "decimal"})
    )
    source = forms.CharField(label="Source", required=False)
    remove = forms.BooleanField(label="Remove", required=False)

    def is_blank(self) -> bool:
        data = self.cleaned_data
        return not data.get("remove") and not any(
            str(data.get(name) or "").strip() for name in ("kind", "key", "value", "source")
        )

    def as_entry(self) -> dict[str, Any]:
        """The row as an entry of the API's request body (blank fields left out)."""
        data = self.cleaned_data
        entry: dict[str, Any] = {"kind": data["kind"], "key": data["key"].strip()}
        if data.get("remove"):
            entry["remove"] = True
        for name in ("value", "source"):
            text = str(data.get(name) or "").strip()
            if text:
                entry[name] = text
        return entry


EntryFormSet = forms.formset_factory(EntryForm, extra=ENTRY_ROWS, max_num=ENTRY_ROWS, validate_max=True)


@dataclass
class PublishForms:
    """The publish form and its entry rows, with ``rows``: the index of each sent entry's row."""

    form: PublishForm
    entries: Any  # an EntryFormSet
    rows: list[int]

    @classmethod
    def bind(cls, data: Mapping[str, Any] | None, *, initial_name: str = "") -> PublishForms:
        form = PublishForm(data, initial={"name": initial_name, "mode": PRICE_MODE_PATCH})
        return cls(form=form, entries=EntryFormSet(data, prefix="entries"), rows=[])

    def request_body(self) -> dict[str, Any] | None:
        """The API's publish request, or None when the forms themselves refuse the input (a name too long,
        a tampered management form)."""
        if not (self.form.is_valid() and self.entries.is_valid()):
            return None
        sent = [(i, row) for i, row in enumerate(self.entries.forms) if not row.is_blank()]
        self.rows = [i for i, _ in sent]
        return {**self.form.cleaned_data, "entries": [row.as_entry() for _, row in sent]}

    def show(self, errors: Mapping[str, Any]) -> None:
        """Put each error of the API's answer (``{"entries[2].value": [...], "name": [...]}``) on its row
        and field; what names no row or field goes above the form."""
        for path, messages in _flat(errors):
            text = " ".join(_messages(messages))
            match = _ENTRY_PATH.match(str(path))
            if match is not None and int(match.group(1)) < len(self.rows):
                row = self.entries.forms[self.rows[int(match.group(1))]]
                field = match.group(2) if match.group(2) in ENTRY_FIELDS else None
                row.add_error(field, text)
            elif path in self.form.fields:
                self.form.add_error(str(path), text)
            elif path.startswith("entries"):
                self.form.add_error(None, f"Entries: {text if self.rows else 'fill in at least one row.'}")
            else:
                self.form.add_error(None, f"{path}: {text}" if path != "non_field_errors" else text)

    def row_errors(self) -> list[tuple[int, str, str]]:
        """(row number from 1, field label, message) of every row error, for the summary above the form."""
        found: list[tuple[int, str, str]] = []
        for number, row in enumerate(self.entries.forms, start=1):
            for name, messages in row.errors.items():
                label = row.fields[name].label if name in row.fields else "row"
                found.extend((number, str(label), str(message)) for message in messages)
        return found


def _flat(errors: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"entries[0]": {"value": [...]}}`` (how DRF nests an entry's errors) as ``entries[0].value``."""
    flat: list[tuple[str, Any]] = []
    for key, value in errors.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            flat.extend(_flat(value, path))
        else:
            flat.append((path, value))
    return flat


def _messages(messages: Any) -> list[str]:
    if isinstance(messages, ValidationError):
        return [str(message) for message in messages.messages]
    if isinstance(messages, list | tuple):
        return [text for message in messages for text in _messages(message)]
    return [str(messages)]
