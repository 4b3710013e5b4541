"""One self-contained HTML page per report: text, tables and pictures, with nothing fetched from elsewhere.

A report an admin mails, archives or opens on a machine without network
must keep its pictures: every figure is embedded as a ``data:`` PNG, the
style sheet is inline and there is no script. :class:`HtmlPage` collects
sections in order and writes the file in one go (a killed run leaves the
old page or none, never half of one).
"""

from __future__ import annotations

import base64
import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #111; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #444; }
dl.provenance { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; font-size: 0.9em; }
dl.provenance dt { font-weight: 600; } dl.provenance dd { margin: 0; word-break: break-all; }
p.warning { background: #fff4e0; border-left: 4px solid #E69F00; padding: 0.4em 0.8em; }
nav ul { font-size: 0.9em; }
"""


@dataclass
class _Section:
    heading: str
    anchor: str
    parts: list[str] = field(default_factory=list)


def _cell(value: Any) -> tuple[str, bool]:
    """A table cell's text and whether it is a number (right-aligned)."""
    if value is None:
        return "-", False
    if isinstance(value, bool):
        return str(value), False
    if isinstance(value, float):
        return (f"{value:.4g}" if value == value else "-"), True
    return str(value), isinstance(value, int)


class HtmlPage:
    """A report page: a title, a provenance list, then sections of paragraphs, tables, text and figures."""

    def __init__(self, title: str, provenance: dict[str, Any] | None = None) -> None:
        self.title = title
        self.provenance = dict(provenance or {})
        self.sections: list[_Section] = []

    def section(self, heading: str) -> "HtmlPage":
        """Start a section; what is added next goes into it."""
        anchor = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") or "section"
        taken = {s.anchor for s in self.sections}
        base, k = anchor, 2
        while anchor in taken:
            anchor, k = f"{base}-{k}", k + 1
        self.sections.append(_Section(heading, anchor))
        return self

    def _add(self, part: str) -> "HtmlPage":
        if not self.sections:
            self.section("Summary")
        self.sections[-1].parts.append(part)
        return self

    def subheading(self, text: str) -> "HtmlPage":
        """A heading inside the current section."""
        return self._add(f"<h3>{html.escape(text)}</h3>")

    def paragraph(self, text: str, warning: bool = False) -> "HtmlPage":
        """A paragraph of plain text (a warning is drawn boxed)."""
        klass = ' class="warning"' if warning else ""
        return self._add(f"<p{klass}>{html.escape(text)}</p>")

    def preformatted(self, text: str) -> "HtmlPage":
        """Text kept as printed in the terminal (rules, tables of the text report)."""
        return self._add(f"<pre>{html.escape(text)}</pre>")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> "HtmlPage":
        """A table; numbers are right-aligned, None and NaN shown as '-'."""
        head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
        body = []
        for row in rows:
            cells = []
            for value in row:
                text, number = _cell(value)
                klass = ' class="num"' if number else ""
                cells.append(f"<td{klass}>{html.escape(text)}</td>")
            body.append(f"<tr>{''.join(cells)}</tr>")
        cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
        return self._add(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")

    def figure(self, png: bytes, caption: str, alt: str = "") -> "HtmlPage":
        """A PNG picture, embedded in the page, with its caption."""
        if not png.startswith(b"\x89PNG\r\n\x1a\n"):
            raise ValueError("expected PNG bytes")
        data = base64.b64encode(png).decode("ascii")
        return self._add(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt or caption)}">'
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def render(self) -> str:
        """The whole page as text."""
        title = html.escape(self.title)
        out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
               '<meta name="viewport" content="width=device-width, initial-scale=1">',
               f"<title>{title}</title><style>{STYLE}</style></head><body>", f"<h1>{title}</h1>"]
        if self.provenance:
            items = "".join(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(_text(v))}</dd>"
                            for k, v in self.provenance.items())
            out.append(f'<dl class="provenance">{items}</dl>')
        if len(self.sections) > 1:
            links = "".join(f'<li><a href="#{s.anchor}">{html.escape(s.heading)}</a></li>' for s in self.sections)
            out.append(f"<nav><ul>{links}</ul></nav>")
        for s in self.sections:
            out.append(f'<section id="{s.anchor}"><h2>{html.escape(s.heading)}</h2>{"".join(s.parts)}</section>')
        out.append("</body></html>\n")
        return "\n".join(out)

    def write(self, path: str | Path) -> Path:
        """Write the page (through a temporary file, so a killed run never leaves half a page)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.render(), encoding="utf-8")
        os.replace(tmp, path)
        return path


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v) for v in value)
    return str(value)
