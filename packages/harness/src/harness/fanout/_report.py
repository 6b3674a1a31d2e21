"""`--report FILE.html` and `harness fanout report`: one run as one self-contained page.

    write_report(record, path)   the run's record + its patches ─▶ one HTML file
      the table (best first), then per child: its verify outcome and timing, and its diff,
      file by file, side by side (old | new), coloured by `_highlight` here in Python

The page needs nothing else: no script, no stylesheet or font or image to fetch; its
Content-Security-Policy (`default-src 'none'; style-src 'unsafe-inline'`) forbids every script
and every fetch, so even a page a browser mis-parsed could run nothing. Everything a child wrote
(file paths, the lines of its diff, the names of the protected files it touched) goes through
`html.escape`; a child that writes `<script>` into a file shows `&lt;script&gt;` here.

A patch is read up to `MAX_PATCH_BYTES` and shown up to `MAX_ROWS` rows per child; the rest is
named, with the patch's path, for the reader to open.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ._highlight import highlight, language_of
from ._record import RunRecord
from ._result import FanoutResult, by_rank
from ._view import cost_cell, files_cell, stop_cell, tokens_cell, verify_cell

REPORT_NAME: Final = "report.html"
MAX_PATCH_BYTES: Final = 8 * 1024 * 1024
"""How much of one child's patch the page reads."""
MAX_ROWS: Final = 20_000
"""How many diff rows of one child the page shows."""

CSP: Final = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""No script, no fetch of any kind; only the page's own inline style."""

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1f2328;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #d0d7de}
h3{font:600 13px ui-monospace,monospace;margin:1em 0 .3em}
table{border-collapse:collapse}
.summary td,.summary th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left}
.summary th{background:#f6f8fa}
.facts{color:#57606a}.facts code{color:#1f2328}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em}dl.facts dd{margin:0}
.diff{width:100%;table-layout:fixed;font:12px/1.45 ui-monospace,SFMono-Regular,monospace}
.diff td{vertical-align:top;white-space:pre-wrap;word-break:break-all;padding:0 .4em}
.diff col.n{width:3.5em}.diff td.n{color:#8c959f;text-align:right;user-select:none}
.diff .del{background:#ffebe9}.diff .add{background:#e6ffec}.diff .gap{background:#f6f8fa}
.diff tr.hunk td{background:#ddf4ff;color:#57606a}
.pass{color:#1a7f37;font-weight:600}.fail,.tampered{color:#cf222e;font-weight:600}
.timeout,.error,.cancelled{color:#9a6700;font-weight:600}
.keyword{color:#cf222e}.string{color:#0a3069}.comment{color:#6e7781;font-style:italic}
.number{color:#0550ae}.tag{color:#8250df}
.note{color:#9a6700}
"""


@dataclass(slots=True)
class _FileDiff:
    """One file of a patch: its header and its side-by-side rows."""

    header: str
    path: str | None = None
    binary: bool = False
    rows: list[tuple[str, ...]] = field(default_factory=list[tuple[str, ...]])


def report_path(record: RunRecord, path: Path | None = None) -> Path:
    """Where the report goes: `path`, else `report.html` in the run's folder."""
    return path if path is not None else record.folder / REPORT_NAME


def write_report(record: RunRecord, path: Path | None = None) -> Path:
    """Writes the run's page (through a temporary file and a rename); returns its path."""
    target = report_path(record, path).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}")
    temporary.write_text(render_report(record), encoding="utf-8")
    temporary.replace(target)
    return target


def render_report(record: RunRecord) -> str:
    """The run's page as HTML text."""
    title = f"harness fanout run {record.run}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_attr(CSP)}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_text(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_text(title)}</h1>",
        _facts(record),
        _summary(record),
    ]
    parts += [_child(record, outcome) for outcome in by_rank(record.children)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _facts(record: RunRecord) -> str:
    items = [
        ("workspace", record.workspace),
        ("started", record.started_at),
        ("finished", record.finished_at or "did not finish"),
        ("isolation", record.isolation),
    ]
    if record.base is not None:
        items.append(("start point", record.base[:12]))
    if record.verify is not None:
        items.append(("verify", record.verify))
        if record.verify_timeout_seconds is not None:
            items.append(("verify timeout", f"{record.verify_timeout_seconds:g} s"))
    if record.protect:
        items.append(("protect", " ".join(record.protect)))
    cells = "".join(
        f"<dt>{_text(name)}</dt><dd><code>{_text(value)}</code></dd>" for name, value in items
    )
    return f'<dl class="facts">{cells}</dl>'


def _summary(record: RunRecord) -> str:
    verify = record.verify is not None
    heads = ["rank", "#", "agent", "stop reason"]
    heads += ["verify"] if verify else []
    heads += ["wall", "tokens in / out", "cost", "files", "diagnostic"]
    rows: list[str] = []
    for outcome in by_rank(record.children):
        cells = [
            str(outcome.rank),
            str(outcome.number),
            f'<a href="#child-{outcome.number}">{_text(outcome.agent)}</a>',
            _text(stop_cell(outcome)),
        ]
        if verify:
            cells.append(_verify_span(outcome))
        cells += [
            _text(f"{outcome.wall_seconds:.1f} s"),
            _text(tokens_cell(outcome)),
            _text(cost_cell(outcome)),
            _text(files_cell(outcome)),
            _text(outcome.result.diagnostic or "—"),
        ]
        body = "".join(f"<td>{cell}</td>" for cell in cells)
        rows.append(f'<tr id="row-{outcome.number}" class="child-row">{body}</tr>')
    head = "".join(f"<th>{_text(name)}</th>" for name in heads)
    return (
        f'<table class="summary"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _verify_span(outcome: FanoutResult) -> str:
    status = outcome.verify.status if outcome.verify is not None else ""
    return f'<span class="{_attr(status)}">{_text(verify_cell(outcome))}</span>'


def _child(record: RunRecord, outcome: FanoutResult) -> str:
    heading = f"#{outcome.number} {outcome.agent}: rank {outcome.rank}, {stop_cell(outcome)}"
    parts = [
        f'<section class="child" id="child-{outcome.number}">',
        f"<h2>{_text(heading)}</h2>",
        f'<p class="facts">wall {outcome.wall_seconds:.1f} s · tokens {_text(tokens_cell(outcome))}'
        f" · cost {_text(cost_cell(outcome))} · {_text(files_cell(outcome))}</p>",
    ]
    verify = outcome.verify
    if verify is not None:
        line = f"verify: {_verify_span(outcome)} after {verify.seconds:.1f} s"
        line += f" · {verify.protected} protected files"
        if verify.log is not None:
            line += f" · output: <code>{_text(str(verify.log))}</code>"
        parts.append(f'<p class="facts">{line}</p>')
        if verify.tampered:
            names = ", ".join(f"<code>{_text(path)}</code>" for path in verify.tampered)
            parts.append(f'<p class="tampered">protected files it changed: {names}</p>')
    elif record.verify is not None:
        parts.append('<p class="facts">verify: did not run</p>')
    if outcome.patch is None:
        parts.append('<p class="facts">no change</p>')
    else:
        parts.append(_diff(outcome))
    parts.append("</section>")
    return "\n".join(parts)


def _diff(outcome: FanoutResult) -> str:
    assert outcome.patch is not None
    try:
        with outcome.patch.open("rb") as handle:
            data = handle.read(MAX_PATCH_BYTES + 1)
    except OSError:
        return f'<p class="note">the patch cannot be read: <code>{_text(str(outcome.patch))}</code></p>'
    cut = len(data) > MAX_PATCH_BYTES
    text = data[:MAX_PATCH_BYTES].decode("utf-8", "replace")
    # Split on newlines alone: a child's text may hold \r, \f or U+2028, which are not lines here.
    files = list(_parse(text.split("\n")))
    if len(files) == len(outcome.files):
        for diff, change in zip(files, outcome.files, strict=True):
            diff.path = change.path
    parts: list[str] = []
    budget = MAX_ROWS
    for diff in files:
        shown = diff.path or diff.header
        parts.append(f'<div class="file"><h3>{_text(shown)}</h3>')
        if diff.binary:
            parts.append('<p class="facts">binary file</p></div>')
            continue
        language = language_of(shown)
        rows = diff.rows[:budget]
        budget -= len(rows)
        parts.append(_rows(rows, language))
        parts.append("</div>")
        if budget <= 0:
            cut = True
            break
    if cut:
        parts.append(
            f'<p class="note">the rest of this patch is not shown: '
            f"<code>{_text(str(outcome.patch))}</code></p>"
        )
    return "\n".join(parts)


def _rows(rows: Sequence[tuple[str, ...]], language: str | None) -> str:
    out = ['<table class="diff"><colgroup><col class="n"><col><col class="n"><col></colgroup>']
    for row in rows:
        if row[0] == "hunk":
            out.append(f'<tr class="hunk"><td colspan="4">{_text(row[1])}</td></tr>')
            continue
        _, old_no, old_text, old_kind, new_no, new_text, new_kind = row
        out.append(
            f'<tr><td class="n">{old_no}</td>'
            f'<td class="{old_kind}">{highlight(old_text, language)}</td>'
            f'<td class="n">{new_no}</td>'
            f'<td class="{new_kind}">{highlight(new_text, language)}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _parse(lines: Sequence[str]) -> Iterator[_FileDiff]:
    """The files of a `git diff` patch, each with side-by-side rows."""
    current: _FileDiff | None = None
    old_no = new_no = 0
    removed: list[tuple[int, str]] = []
    added: list[tuple[int, str]] = []

    def flush() -> None:
        assert current is not None
        for index in range(max(len(removed), len(added))):
            left = removed[index] if index < len(removed) else None
            right = added[index] if index < len(added) else None
            current.rows.append(
                (
                    "line",
                    "" if left is None else str(left[0]),
                    "" if left is None else left[1],
                    "gap" if left is None else "del",
                    "" if right is None else str(right[0]),
                    "" if right is None else right[1],
                    "gap" if right is None else "add",
                )
            )
        removed.clear()
        added.clear()

    in_hunk = False
    for line in lines:
        if line.startswith("diff --git "):
            if current is not None:
                flush()
                yield current
            current = _FileDiff(header=line.removeprefix("diff --git "))
            in_hunk = False
            continue
        if current is None:
            continue
        hunk = _HUNK.match(line)
        if hunk is not None:
            flush()
            old_no, new_no = int(hunk.group(1)), int(hunk.group(2))
            current.rows.append(("hunk", line))
            in_hunk = True
            continue
        if not in_hunk:
            if line.startswith(("GIT binary patch", "Binary files ")):
                current.binary = True
            continue
        if line.startswith("-"):
            removed.append((old_no, line[1:]))
            old_no += 1
        elif line.startswith("+"):
            added.append((new_no, line[1:]))
            new_no += 1
        elif line.startswith(" "):
            flush()
            current.rows.append(("line", str(old_no), line[1:], "", str(new_no), line[1:], ""))
            old_no += 1
            new_no += 1
        # `\ No newline at end of file` and anything else: not a line of the file.
    if current is not None:
        flush()
        yield current


def _text(value: str) -> str:
    return html.escape(value, quote=True)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)
