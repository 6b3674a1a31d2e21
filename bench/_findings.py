"""Causes of missed targets, as found by profiling (`python bench/profile_case.py SCENARIO`).

Keyed by the ratio's label in the report; quoted in results.md only when that target is missed
in the run being written. Each names the profile it comes from (`bench/profiles/*.txt`, taken
on this machine, with the code of the run, after subagent-core's cheaper tree snapshots).
"""

from __future__ import annotations

_LOADED_CANCEL = (
    "Profile `bench/profiles/cancel-{name}.txt` (10 cooperative cancels, cProfile, wall "
    "clock): {runs}; the parent's own work per cancel is ~{cpu} ms (`ManagedProcess.terminate`"
    ", of which the `/proc` scans of `ProcessTree.snapshot` / `_linux_group_members` are "
    "~{scan} ms), the rest is the event loop idle in epoll until the child has exited. So the "
    "time is the child's exit latency plus those scans, both CPU-bound on a 2-core machine: "
    "when this run's load average (above) is high, the fake child and the parent wait for a "
    "core, which is what pushed the median over 100 ms here."
)

FINDINGS: dict[str, str] = {
    "ACPProvider / raw SDK": (
        "Profiles `bench/profiles/acp-run.txt` and `acp-run-raw.txt` (10 whole runs each, "
        "cProfile, wall clock, quiet machine): ~120 ms vs ~101 ms per run. Outside the epoll wait for the "
        "fake child, the provider's parent spends ~42 ms per run against ~18 ms for the raw "
        "client: ~10 ms is teardown (`ACPRun._teardown` -> `ManagedProcess.terminate`; ~9 ms "
        "of it the two `ProcessTree.snapshot` calls and the `/proc` group scans of "
        "`_linux_group_members`), ~4 ms is racing every request against exit and cancel "
        "(`ACPRun.run_operation`), and the rest the owner task and the spawn through "
        "`open_managed_process`. Cause: the provider's safety work per run (tree bookkeeping "
        "in teardown, raced requests, the owner task) is a fixed ~20 ms, which is more than 15% of a ~100 ms "
        "warm run with a fake child that answers at once."
    ),
    "ACPProvider / raw SDK, small chunks": (
        "Profiles `bench/profiles/acp-stream-small.txt` and `acp-stream-small-raw.txt` (3 "
        "runs each, cProfile, quiet machine): both sides are dominated by the `acp` SDK's own "
        "per-notification dispatch (a `create_task` per `session/update`, pydantic "
        "`validate_python`, the router), which they share; the provider's own framing, parse "
        "and sink (`FramedTransport._read_line`, `_parse`, `_Client.session_update`: 1.78 s) "
        "are 19% of its profile against 27% for the SDK's stdio reader and the raw sink "
        "(`receive`, `readuntil`, `json.loads`, `session_update`: 2.45 s) in the raw profile. "
        "No provider-specific cost the size of the gap shows up, so a miss here is the "
        "run-to-run spread of this loaded machine (see min–max)."
    ),
    "ACPProvider / raw SDK, 5 MB chunk": (
        "Profiles `bench/profiles/acp-stream-huge.txt` and `acp-stream-huge-raw.txt` (3 runs "
        "each, cProfile, quiet machine): both read the 5 MB line in the same 246 pipe reads "
        "(240 `_read_ready` on each side, no reader pause on either) and decode it once; the "
        "provider's line assembly (`_read_line`) is 22 ms over 3 runs, and most wall time on "
        "both sides is the loop idle in epoll, waiting for the fake child to build and write "
        "the line. Two profiling passes gave the provider 61–79 ms and 69–77 ms against the "
        "raw client's 50–51 ms and 75–79 ms: the difference flips between passes, so a miss "
        "here is the child's own run-to-run spread, not provider work."
    ),
    "cancel-to-gone, ACP, cooperative": _LOADED_CANCEL.format(
        name="acp", runs="23–38 ms per cancel on a quiet machine", cpu="9", scan="8"
    ),
    "cancel-to-gone, process_execute, cooperative": _LOADED_CANCEL.format(
        name="process", runs="14–24 ms per cancel on a quiet machine", cpu="7", scan="6"
    ),
    "cancel-to-gone, SDK, cooperative": (
        "Profile `bench/profiles/cancel-sdk.txt` (10 cooperative cancels, cProfile, wall "
        "clock, quiet machine): 56–115 ms per cancel. The parent's own work is ~17 ms per cancel "
        "(`SDKProvider` dispose -> `SDKClient.close`: the `shutdown` request, then "
        "`ManagedProcess.terminate`, whose `/proc` group scans are ~14 ms); the remaining "
        "~70 ms the parent's loop is idle in epoll, waiting for the fake runtime to answer "
        "`shutdown`, cancel its anyio task group and exit. Cause: the child's shutdown and "
        "interpreter exit (an anyio program), plus the scans; the graces are never reached."
    ),
    "process_execute / subprocess.run": (
        "Profile `bench/profiles/process-true.txt` (40 calls of `true`, cProfile, quiet "
        "machine, current code): of `ProcessExecuteTool._run` (0.290 s on the loop thread), "
        "37% is spawning through anyio/asyncio (`open_process` 0.108 s: `fork_exec` 0.032 s — "
        "what `subprocess.run` pays too — and asyncio's `ThreadedChildWatcher` starting one "
        "thread per child, `threading.start` 0.031 s), 40% the supervision tasks "
        "(`_supervise` 0.115 s: two pipe pumps, exit/cancel/timeout watchers, the snapshot "
        "keeper, their creation and cancellation) and 10% the ladder (`terminate` 0.030 s). "
        "The end-of-call marker sweep runs in a worker thread, outside cProfile's view; timed "
        "alone, `sweep_marked` reads every `/proc/<pid>/environ` in ~1 ms. Cause: the fixed "
        "cost of an asynchronous, supervised spawn (a watcher thread per child, six tasks, "
        "ladder and sweep per call) against a blocking fork/exec/wait; a few ms per call, "
        "large only next to a command as short as `true`."
    ),
    "process_execute / cat throughput": (
        "Profile `bench/profiles/flood-tool.txt` (2 × 200 MB through `process_execute` in "
        "process, cProfile, 2.8 s): 6,895 pipe reads of ~58 KiB (`posix.read` 0.70 s), each "
        "its own event-loop turn (12,884 `_run_once`, 2.0 s cumulative) with the loop idle in "
        "epoll 1.09 s waiting for `yes | head` to refill the pipe; `HeadTailBuffer.feed` is "
        "only 0.06 s and the tree snapshots 0.08 s. `cat` reads 128 KiB per call in C and "
        "does nothing else. Cause: asyncio's per-read cost in Python (one loop turn per "
        "~64 KiB), on a machine where producer and reader compete for 2 cores."
    ),
    "30 parents / (10 × one child)": (
        "Profile `bench/profiles/delegation.txt` (2 rounds of 30 parents, children's reply delayed 100 ms, cProfile, after "
        "model-agent's shared TLS context; an earlier profile had 49–56% of each round in 60 "
        "CA-bundle loads, one per agent, now gone): 45% of the profiled time is the loop idle "
        "in epoll (children waiting on the scripted model's delay), and 35% is the client "
        "side of the model requests (`HTTPTransport.attempt` 1.42 s of 4.03 s: httpx request "
        "building, the HTTP/1.1 exchange and SSE reading), 90 requests a round. Of those, 60 "
        "are parent rounds — 30 tool-call rounds that must finish before the first child can "
        "start, and 30 closing rounds — which the floor (ten waves of children only) does not "
        "contain; each child hand-off also builds a new agent and request. Cause: the parents' "
        "own model rounds and the per-child start-up on a 2-core machine shared with the "
        "model server process, added to ten child waves; the queue itself is saturated (max "
        "concurrency 3)."
    ),
}
