"""A small table that prints as aligned text in a terminal and as HTML in Jupyter."""

from __future__ import annotations

from html import escape

__all__ = ["Table"]


class Table(list):
    """A list of rows, each a dict of column → text (the first row's keys are the columns).

    ``print(table)`` gives aligned text; in Jupyter the table displays as HTML.
    """

    def rows(self) -> list[dict[str, str]]:
        return [{key: str(value) for key, value in row.items()} for row in self]

    def __str__(self) -> str:
        rows = self.rows()
        if not rows:
            return "(empty)"
        headers = list(rows[0])
        widths = {h: max(len(h), *(len(r[h]) for r in rows)) for h in headers}
        lines = ["  ".join(h.ljust(widths[h]) for h in headers).rstrip()]
        lines.append("  ".join("-" * widths[h] for h in headers))
        lines += ["  ".join(r[h].ljust(widths[h]) for h in headers).rstrip() for r in rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = self.rows()
        headers = list(rows[0]) if rows else []
        head = "".join(f"<th style='text-align:left'>{escape(h)}</th>" for h in headers)
        body = "".join(
            "<tr>" + "".join(f"<td style='text-align:left'>{escape(r[h])}</td>" for h in headers) + "</tr>"
            for r in rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))
