"""Causes of missed targets, as found by profiling (`python bench/profile_case.py SCENARIO`).

Keyed by the ratio's label in the report; quoted in results.md only when that target is missed
in the run being written. Each names the profile it comes from (`bench/profiles/*.txt`, taken
on this machine under the same kind of load as the run).
"""

from __future__ import annotations

_TEARDOWN = (
    "Profile `bench/profiles/cancel-{name}.txt` (5 cancels, cProfile, wall clock): "
    "`ManagedProcess.terminate` spends {terminate} per cancel in the parent, of which "
    "{snapshot} is `ProcessTree.snapshot` — a psutil `children(recursive=True)` walk, i.e. "
    "`ppid_map` opening and reading every `/proc/<pid>/stat` on the machine — taken twice per "
    "ladder (before stdin EOF in `close_stdin`, and again in `signal()`), plus "
    "`_linux_group_members` scanning `/proc` in every `alive()` poll. These scans run on the "
    "event-loop thread and each costs tens of ms on this loaded machine (~100 processes, load "
    "average 6–10). {rest} Cause: subagent-core's process-tree bookkeeping in the teardown "
    "path, not the graces (the cooperative child exits long before any grace ends)."
)

_STREAM = (
    "Profiles `bench/profiles/acp-stream-{size}.txt` and `acp-stream-{size}-raw.txt` (3 runs "
    "each, cProfile): {detail} No provider-specific cost of the size of the gap shows up, so "
    "a miss here is within the run-to-run spread of this loaded machine (see min–max)."
)

FINDINGS: dict[str, str] = {
    "ACPProvider / raw SDK": (
        "Profiles `bench/profiles/acp-run.txt` and `acp-run-raw.txt` (10 whole runs each, "
        "cProfile, wall clock): the provider's run spends ~57 ms per run in `ACPRun._teardown` "
        "-> `ManagedProcess.terminate`, of which ~46 ms is two `ProcessTree.snapshot` calls "
        "(psutil `children(recursive=True)` -> `ppid_map`, reading every `/proc/<pid>/stat`; "
        "6,148 `open`s over 10 runs) and ~9 ms the `/proc` group scan of `alive()`. The raw "
        "client closes stdin and waits (no /proc access at all); otherwise both spend their "
        "time waiting for the fake child (epoll ~185 ms per run on both sides). Cause: "
        "subagent-core's process-tree bookkeeping in teardown (~20% of a warm run here)."
    ),
    "ACPProvider / raw SDK, small chunks": _STREAM.format(
        size="small",
        detail="both sides are dominated by the `acp` SDK's own per-notification dispatch "
        "(a `create_task` per `session/update`, pydantic `validate_python`, router), which "
        "they share; the provider's own framing, parse and sink (`FramedTransport._read_line`, "
        "`_parse`, `_Client.session_update`) are 19% of its profile against 24% for the SDK's "
        "stdio reader (`readuntil`, `wait_for`, `json.loads`) in the raw profile.",
    ),
    "ACPProvider / raw SDK, 5 MB chunk": _STREAM.format(
        size="huge",
        detail="both read the 5 MB line in the same number of pipe reads (243 vs 245 "
        "`posix.read` for 3 runs) and decode it once; the provider's line assembly "
        "(`_read_line`) is 44 ms over 3 runs and most wall time on both sides is the loop "
        "waiting for the child to write (epoll).",
    ),
    "cancel-to-gone, process_execute, cooperative": _TEARDOWN.format(
        name="process",
        terminate="~79 ms",
        snapshot="~70 ms",
        rest="The wait for `bash`/`sleep` to die on SIGTERM is small (epoll wait 54 ms "
        "over all 5 runs).",
    ),
    "cancel-to-gone, ACP, cooperative": _TEARDOWN.format(
        name="acp",
        terminate="~110 ms",
        snapshot="~100 ms",
        rest="The remainder is waiting for the fake child (a Python process) to answer "
        "`session/cancel` and exit on EOF.",
    ),
    "cancel-to-gone, SDK, cooperative": _TEARDOWN.format(
        name="sdk",
        terminate="~84 ms",
        snapshot="~68 ms",
        rest="The rest of the ~200 ms is the loop waiting (epoll) for the fake runtime, an "
        "anyio program, to shut down and exit.",
    ),
    "process_execute / cat throughput": (
        "Profile `bench/profiles/flood-tool.txt` (2 × 200 MB through `process_execute` in "
        "process, cProfile): 6,315 pipe reads of ~64 KiB each (asyncio's subprocess pipe "
        "transport read size), each a full event-loop turn and a `HeadTailBuffer.feed`; and "
        "`_keep_snapshots` (the tool's descendant recorder) ran `ProcessTree.snapshot` 23 times "
        "for 2.69 s of the 12.8 s profiled (21%) — psutil's full `/proc` walk "
        "(`ppid_map`: 12,332 `open`s) blocking the loop while the pipe fills and `yes` stalls. "
        "`cat` reads 128 KiB at a time and does nothing else. Cause: the per-read loop cost of "
        "asyncio pipes plus the /proc scans in subagent-core's tree snapshot, which the tool "
        "repeats every second while the command runs."
    ),
    "process_execute / subprocess.run": (
        "Profile `bench/profiles/process-true.txt` (20 calls of `true`, cProfile): of the "
        "3.64 s spent in `ProcessExecuteTool._run`, 2.19 s (60%) is `ManagedProcess._ladder`, "
        "run although `true` has already exited: `ProcessTree.snapshot` at the top of the "
        "ladder and `alive()` in `_wait_gone` each scan `/proc` (`_linux_group_members`: 44 "
        "scans, 2.30 s in all, ~130 `/proc/<pid>/stat` reads per scan). The fork/exec itself "
        "is 0.60 s (16%). `subprocess.run` only forks, execs and waits. Cause: subagent-core's "
        "/proc-walking tree bookkeeping, run even when the leader and its group are gone."
    ),
    "30 parents / (10 × one child)": (
        "Profile `bench/profiles/delegation.txt` (one round of 30 parents, cProfile): 7.48 s "
        "of the 13.3 s round is 60 calls of `ssl.SSLContext.load_verify_locations` — every "
        "`Agent` (30 parents and 30 children) builds its own `ModelClient`, whose "
        "`HTTPTransport._ensure_client` creates a new `httpx.AsyncClient`, which creates a new "
        "SSL context and loads the CA bundle (~125 ms each here) on the event-loop thread, "
        "even for the plain-http scripted server. The 30 parents' first requests therefore "
        "start one after another. Cause: model-agent creates an httpx client (and SSL "
        "context) per agent instead of sharing one per endpoint."
    ),
}
