"""The fan-out report opened in a real headless Chromium (Debian's `chromium`, via Playwright).

A real fan-out on a real repository: one child fixes the bug, one writes a page holding
`<script>document.title='pwned'</script>` and an `<img src=x onerror=…>`, one puts the same into
a note. Its report is opened as a file: every row and every child's diff must be in the DOM,
the hostile text must be text (no script ran: the title is unchanged, no console error, no
request but the page itself), and a screenshot is kept beside the test's files.

Playwright drives the browser the system has (`executable_path`); `playwright install` is
never run. Without the `playwright` package (only the nox session `browser` installs it) or
without `/usr/bin/chromium` (`apt-get install chromium`) the test skips and says which.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness.fanout import run_fanout
from harness.fanout._record import read_record
from harness.fanout._report import write_report
from subagent_acp import ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="the playwright package is not installed (the nox session `browser` installs it)",
    ),
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="chromium is not installed (apt-get install chromium)"
    ),
]


Writer = Callable[..., ACPProvider]


@pytest.fixture
def repo(make_repo: Callable[[dict[str, str]], Path], state_dir: Path, temp_root: Path) -> Path:
    """A bug to fix and a page to deface; the fan-out's state and temp dirs are the test's own."""
    return make_repo(
        {"calc.py": "def add(a, b):\n    return a - b\n", "page.html": "<p>hello</p>\n"}
    )


async def test_the_report_renders_in_chromium_and_runs_no_child_script(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], writer: Writer
) -> None:
    registry = SubagentRegistry()
    registry.register(writer("fixer", {"calc.py": "def add(a, b):\n    return a + b\n"}))
    registry.register(writer("scripter", {"page.html": f"<p>hello</p>\n{HOSTILE}\n"}))
    registry.register(writer("noter", {"notes.md": f"# notes\n{HOSTILE}\n"}))
    with anyio.fail_after(120):
        async with registry:
            outcomes = await run_fanout(
                registry,
                ["fixer", "scripter", "noter"],
                SubagentRequest(prompt="fix add", cwd=repo),
                verify=f'{sys.executable} -c "from calc import add; assert add(2, 3) == 5"',
            )
        record = await anyio.to_thread.run_sync(
            read_record, tmp_path / "state" / "fanout" / outcomes[0].run_id
        )
        page = await anyio.to_thread.run_sync(write_report, record)
        shot = tmp_path / "report.png"
        seen = await anyio.to_thread.run_sync(drive, page, shot)
    title = f"harness fanout run {record.run}"
    assert seen["title"] == title
    assert seen["rows"][0] == "1"  # the fixer passes: best; the other two by their wall time
    assert sorted(seen["rows"]) == ["1", "2", "3"]
    assert seen["diffs"] == {"1": 1, "2": 1, "3": 1}
    assert seen["scripts"] == 0
    assert seen["images"] == 0
    assert seen["hostile_as_text"] is True
    assert seen["console_errors"] == []
    assert seen["page_errors"] == []
    assert seen["requests"] == [page.as_uri()]
    assert shot.stat().st_size > 0
    with capsys.disabled():  # the figures belong in the session's output
        print(
            f"\nbrowser: {seen['version']}; report {page.stat().st_size} bytes, loaded in "
            f"{seen['load_ms']:.0f} ms, {len(seen['rows'])} rows, "
            f"{sum(seen['diffs'].values())} diffs; screenshot {shot}"
        )


def drive(page_path: Path, shot: Path) -> dict[str, Any]:
    """Opens the page in Chromium and reads what a person would see (no script of the page's)."""
    # Imported by name: the package exists only in the `browser` session's environment.
    sync_api: Any = importlib.import_module("playwright.sync_api")
    console: list[tuple[str, str]] = []
    page_errors: list[str] = []
    requests: list[str] = []

    def on_console(message: Any) -> None:
        console.append((str(message.type), str(message.text)))

    def on_error(error: Any) -> None:
        page_errors.append(str(error))

    def on_request(request: Any) -> None:
        requests.append(str(request.url))

    with sync_api.sync_playwright() as driver:
        browser: Any = driver.chromium.launch(
            executable_path=str(CHROMIUM), args=ARGS, headless=True
        )
        try:
            page: Any = browser.new_page()
            page.on("console", on_console)
            page.on("pageerror", on_error)
            page.on("request", on_request)
            started = time.monotonic()
            page.goto(page_path.as_uri(), wait_until="load")
            load_ms = (time.monotonic() - started) * 1000
            rows: list[Any] = page.locator("tr.child-row").all()
            numbers = [str(row.get_attribute("id")).removeprefix("row-") for row in rows]
            diffs = {n: int(page.locator(f"#child-{n} table.diff").count()) for n in numbers}
            seen: dict[str, Any] = {
                "version": str(browser.version),
                "title": str(page.title()),
                "rows": numbers,
                "diffs": diffs,
                "scripts": int(page.locator("script").count()),
                "images": int(page.locator("img").count()),
                "hostile_as_text": "document.title='pwned'"
                in str(page.locator("body").inner_text()),
                "load_ms": load_ms,
            }
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    seen["console_errors"] = [text for kind, text in console if kind == "error"]
    seen["page_errors"] = page_errors
    seen["requests"] = requests
    return seen
