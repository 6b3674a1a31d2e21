"""Syntax colouring for the report, done here in Python: one diff line in, escaped HTML out.

    language_of(path)          the family a file's name says (python, c-like, shell, markup, …)
    highlight(line, language)  the line cut into comments, strings, numbers, keywords and tags,
                               each piece HTML-escaped and wrapped in `<span class="…">`

A diff shows lines, not whole files, so each line is coloured alone: a string or comment that
spans lines is coloured on its first line only. That is the whole trade: no JavaScript, no
dependency, and every character of the child's text passes `html.escape` exactly once.
"""

from __future__ import annotations

import html
import re
from functools import cache
from pathlib import PurePosixPath
from typing import Final

_PYTHON_WORDS = (
    "False None True and as assert async await break class continue def del elif else except "
    "finally for from global if import in is lambda nonlocal not or pass raise return try "
    "while with yield match case self"
)
_C_WORDS = (
    "abstract async await boolean break byte case catch char class const continue debugger "
    "default delete do double else enum export extends false final finally float for fn from "
    "func function go if impl implements import in instanceof int interface let long loop "
    "match mod module mut namespace new null package private protected pub public return "
    "self short static struct super switch this throw throws true try type typeof undefined "
    "union unsafe use var void volatile where while yield"
)
_SHELL_WORDS = (
    "if then else elif fi case esac for while until do done in function return local export "
    "set unset true false"
)
_DATA_WORDS = "true false null yes no on off"

_EXTENSIONS: Final[dict[str, str]] = {
    **dict.fromkeys(("py", "pyi", "pyw"), "python"),
    **dict.fromkeys(
        (
            "js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts", "java", "c", "h", "cc",
            "cpp", "cxx", "hpp", "hh", "go", "rs", "cs", "swift", "kt", "kts", "scala",
            "php", "dart", "css", "scss", "less",
        ),
        "c-like",
    ),
    **dict.fromkeys(("sh", "bash", "zsh", "fish", "rb", "pl", "r", "mk"), "shell"),
    **dict.fromkeys(("toml", "yaml", "yml", "ini", "cfg", "conf", "properties"), "data"),
    "json": "json",
    **dict.fromkeys(("html", "htm", "xml", "svg", "vue", "svelte", "xhtml"), "markup"),
}  # fmt: skip
_NAMES: Final[dict[str, str]] = {
    "Makefile": "shell",
    "Dockerfile": "shell",
    "Gemfile": "shell",
    "Rakefile": "shell",
}

_STRING = r"""(?P<string>"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)"""
_NUMBER = r"(?P<number>\b(?:0[xXbBoO][0-9a-fA-F_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)\b)"


def _words(words: str) -> str:
    return r"(?P<keyword>\b(?:" + "|".join(re.escape(word) for word in words.split()) + r")\b)"


_PATTERNS: Final[dict[str, str]] = {
    "python": "|".join(
        (r"(?P<comment>#.*)", r"(?P<tag>@[\w.]+)", _STRING, _NUMBER, _words(_PYTHON_WORDS))
    ),
    "c-like": "|".join(
        (
            r"(?P<comment>//.*|/\*.*?(?:\*/|$))",
            r"""(?P<string>"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`(?:[^`\\]|\\.)*`?)""",
            _NUMBER,
            _words(_C_WORDS),
        )
    ),
    "shell": "|".join((r"(?P<comment>(?<![\w$])#.*)", _STRING, _NUMBER, _words(_SHELL_WORDS))),
    "data": "|".join(
        (r"(?P<comment>[#;].*)", r"(?P<tag>^\s*\[[^\]]*\])", _STRING, _NUMBER, _words(_DATA_WORDS))
    ),
    "json": "|".join((_STRING, _NUMBER, _words("true false null"))),
    "markup": "|".join(
        (
            r"(?P<comment><!--.*?(?:-->|$))",
            r"(?P<tag></?[A-Za-z][\w:.-]*|/?>)",
            r"""(?P<string>"[^"]*"?|'[^']*'?)""",
        )
    ),
}


def language_of(path: str) -> str | None:
    """The highlighting family of a file, from its name; None for one this does not know."""
    name = PurePosixPath(path).name
    if name in _NAMES:
        return _NAMES[name]
    suffix = PurePosixPath(name).suffix.lower().lstrip(".")
    return _EXTENSIONS.get(suffix)


@cache
def _compiled(language: str) -> re.Pattern[str]:
    return re.compile(_PATTERNS[language])


def highlight(line: str, language: str | None) -> str:
    """`line` as HTML: every piece escaped, the recognised ones in a classed `<span>`."""
    if language is None or language not in _PATTERNS:
        return html.escape(line)
    out: list[str] = []
    position = 0
    for match in _compiled(language).finditer(line):
        if match.start() == match.end():
            continue
        out.append(html.escape(line[position : match.start()]))
        kind = match.lastgroup or "plain"
        out.append(f'<span class="{kind}">{html.escape(match.group())}</span>')
        position = match.end()
    out.append(html.escape(line[position:]))
    return "".join(out)
