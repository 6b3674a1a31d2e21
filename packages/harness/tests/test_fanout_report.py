"""The report page as text: self-contained, script-free, every child-written byte escaped."""

from __future__ import annotations

import re
from pathlib import Path

from harness.fanout import FanoutResult, FileChange, VerifyOutcome
from harness.fanout._highlight import highlight, language_of
from harness.fanout._record import RunRecord, read_record, write_record
from harness.fanout._report import CSP, render_report, write_report
from subagent_core import Cost, SubagentResult, Usage

HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"

PATCH = f"""diff --git a/page.html b/page.html
new file mode 100644
index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111
--- /dev/null
+++ b/page.html
@@ -0,0 +1,2 @@
+<p>hello</p>
+{HOSTILE}
diff --git a/calc.py b/calc.py
index 2222222222222222222222222222222222222222..3333333333333333333333333333333333333333 100644
--- a/calc.py
+++ b/calc.py
@@ -1,3 +1,3 @@
 def add(a, b):
-    return a - b  # "{HOSTILE}"
+    return a + b
 x = 1
"""


def record(tmp_path: Path) -> RunRecord:
    patch = tmp_path / "1-evil.patch"
    patch.write_text(PATCH, encoding="utf-8")
    evil = FanoutResult(
        number=1,
        agent="evil",
        result=SubagentResult(
            stop_reason="completed",
            output=HOSTILE,
            usage=Usage(input_tokens=10, output_tokens=5, cost=Cost(0.25, "USD")),
        ),
        wall_seconds=3.5,
        files=(
            FileChange(path=f"page{HOSTILE}.html", added=2, deleted=0),
            FileChange(path="calc.py", added=1, deleted=1),
        ),
        patch=patch,
        verify=VerifyOutcome(
            status="tampered",
            exit_code=0,
            seconds=1.25,
            protected=2,
            tampered=(f"conftest{HOSTILE}.py",),
            log=tmp_path / "1-evil.verify.log",
        ),
        rank=2,
        run_id="abcd1234",
    )
    idle = FanoutResult(
        number=2,
        agent="idle",
        result=SubagentResult(stop_reason="completed"),
        wall_seconds=1.0,
        verify=VerifyOutcome(status="pass", exit_code=0, seconds=0.5, protected=2),
        rank=1,
        run_id="abcd1234",
    )
    return RunRecord(
        run="abcd1234",
        folder=tmp_path / "run",
        started_at="2026-12-06T10:00:00+00:00",
        finished_at="2026-12-06T10:01:00+00:00",
        workspace=str(tmp_path / "repo"),
        isolation="worktree",
        agents=("evil", "idle"),
        repository=str(tmp_path / "repo"),
        base="f" * 40,
        verify=f"pytest -q # {HOSTILE}",
        verify_timeout_seconds=600.0,
        children=(evil, idle),
    )


def test_the_page_escapes_everything_and_has_no_script(tmp_path: Path) -> None:
    page = render_report(record(tmp_path))
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert 'onerror="' not in page
    assert page.count("&lt;script&gt;") >= 4  # the file, its path, the tampered name, the command
    assert f'content="{CSP}"'.replace("'", "&#x27;") in page
    assert not re.search(r"(?:src|href)=\"(?!#)", page)  # nothing to fetch: in-page links only
    assert "http://" not in page
    assert "https://" not in page
    assert HOSTILE not in page


def test_the_page_orders_children_by_rank_and_shows_each_diff_side_by_side(
    tmp_path: Path,
) -> None:
    page = render_report(record(tmp_path))
    rows = re.findall(r'<tr id="row-(\d)" class="child-row">', page)
    assert rows == ["2", "1"]
    assert '<section class="child" id="child-1">' in page
    assert '<td class="del">' in page
    assert '<td class="add">' in page
    assert ">tampered</span>" in page
    assert ">pass</span>" in page
    assert "0.2500 USD" in page
    assert "calc.py" in page


def test_the_report_is_regenerated_from_the_record(tmp_path: Path) -> None:
    original = record(tmp_path)
    write_record(original)
    again = read_record(original.folder)
    assert again.children[0].verify == original.children[0].verify
    assert again.children[0].files == original.children[0].files
    assert again.children[0].result.output == ""  # the child's answer is not kept
    path = write_report(again)
    assert path == original.folder / "report.html"
    assert path.read_text(encoding="utf-8") == render_report(again)


def test_highlighting_colours_and_escapes() -> None:
    assert language_of("a/b/calc.py") == "python"
    assert language_of("web/app.tsx") == "c-like"
    assert language_of("README") is None
    line = highlight("def f(x):  # <b>", "python")
    assert line == (
        '<span class="keyword">def</span> f(x):  <span class="comment"># &lt;b&gt;</span>'
    )
    assert highlight('<a href="x">', "markup") == (
        '<span class="tag">&lt;a</span> href=<span class="string">&quot;x&quot;</span>'
        '<span class="tag">&gt;</span>'
    )
    assert highlight("<script>", None) == "&lt;script&gt;"
