"""The process tree where no guard contains it: macOS and other POSIX, and Windows.

(Linux uses the guard in `_containment.py`.) POSIX: the tree is the child's process group plus
every descendant reachable through parent links from the leader, snapshotted while it lives,
so a descendant that called `setsid` is still found. Windows: a Job Object owns the tree
(`_job_object.py`); its active process count is the liveness check.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import psutil

Step = Literal["term", "kill"]


@dataclass(slots=True)
class ProcessTree:
    """The members seen so far: pid → create time (guards against pid reuse)."""

    leader: int
    pgid: int | None
    job: int | None = None
    """The Windows Job Object that owns the tree, when there is one."""
    members: dict[int, float] = field(default_factory=dict[int, float])

    def snapshot(self) -> None:
        """Adds every current member: the group (POSIX) and descendants of known members."""
        roots = [self.leader]
        roots.extend(pid for pid, created in self.members.items() if _same_process(pid, created))
        for pid in _descendants(roots):
            self._add_pid(pid)
        self.snapshot_group_only()

    def alive(self) -> list[int]:
        """Members that still exist and are not zombies; a zombie counts as gone."""
        if self.job is not None:
            return [self.leader] if _job_active(self.job) else []
        alive: list[int] = []
        if self.pgid is not None:
            self.snapshot_group_only()
        for pid, created in list(self.members.items()):
            if _is_alive(pid, created):
                alive.append(pid)
        return alive

    def snapshot_group_only(self) -> None:
        """Adds group members without walking descendants (cheap enough to poll)."""
        if self.pgid is None:
            return
        for pid in _group_members(self.pgid):
            if pid not in self.members:
                self._add_pid(pid)

    def signal(self, step: Step) -> None:
        """Sends SIGTERM or SIGKILL (POSIX) or terminates (Windows) every live member."""
        self.snapshot()
        _signal_members(self, step)

    def _add_pid(self, pid: int) -> None:
        if pid in self.members:
            return
        try:
            self.members[pid] = psutil.Process(pid).create_time()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return


def _same_process(pid: int, created: float) -> bool:
    try:
        return psutil.Process(pid).create_time() == created
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _descendants(roots: Iterable[int]) -> set[int]:
    """The roots that exist plus everything below them, through parent links."""
    children = _children_reader()
    found: set[int] = set()
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        kids = children(pid)
        if kids is None:
            continue
        found.add(pid)
        stack.extend(kids)
    return found


def _children_reader() -> Callable[[int], list[int] | None]:
    """Linux: `/proc/<pid>/task/<tid>/children` per process (no full scan); else one ppid map."""
    if _PROC_CHILDREN and sys.platform != "win32":
        from .guard import task_children  # Linux only: the guard refuses to import on Windows

        return task_children
    parents: dict[int, list[int]] = {}
    for proc in psutil.process_iter(["ppid"]):
        ppid = proc.info.get("ppid")
        if isinstance(ppid, int):
            parents.setdefault(ppid, []).append(proc.pid)
    existing = set(psutil.pids())
    return lambda pid: parents.get(pid, []) if pid in existing else None


_PROC_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _is_alive(pid: int, created: float) -> bool:
    try:
        proc = psutil.Process(pid)
        if proc.create_time() != created:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True


if sys.platform == "win32":
    from . import _job_object

    def spawn_options() -> dict[str, Any]:
        """Windows: a new process group (no console control events from us), started suspended.

        `started` then puts it in its Job Object before it runs.
        """
        flags = subprocess.CREATE_NEW_PROCESS_GROUP | _job_object.CREATE_SUSPENDED
        return {"creationflags": flags}

    def started(pid: int) -> int | None:
        """Puts the suspended child in a kill-on-close Job Object and resumes it; the job."""
        return _job_object.contain(pid)

    def _job_active(job: int) -> bool:
        return _job_object.active_processes(job) > 0

    def release_job(job: int | None) -> None:
        """Closes the job handle (kill-on-close ends anything still in it)."""
        if job is not None:
            _job_object.close_job(job)

    def leader_pgid(pid: int) -> int | None:
        """Windows has no POSIX process groups."""
        return None

    def _group_members(pgid: int) -> Iterable[int]:
        return ()

    def _signal_members(tree: ProcessTree, step: Step) -> None:
        if tree.job is not None:
            _job_object.terminate_job(tree.job)
            return
        for pid, created in list(tree.members.items()):
            if not _is_alive(pid, created):
                continue
            try:
                proc = psutil.Process(pid)
                if step == "term":
                    proc.terminate()
                else:
                    proc.kill()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue

    def signal_name(returncode: int) -> str | None:
        """Windows exit codes are never signals."""
        return None

else:

    def spawn_options() -> dict[str, Any]:
        """POSIX: a new session, so the child leads its own process group."""
        return {"start_new_session": True}

    def started(pid: int) -> int | None:
        """Nothing to do on POSIX: the new session already holds the child."""
        return None

    def _job_active(job: int) -> bool:
        return False

    def release_job(job: int | None) -> None:
        """No jobs on POSIX."""

    def leader_pgid(pid: int) -> int | None:
        """With a new session, the group id is the leader's pid (recorded at spawn)."""
        return pid

    def _group_members(pgid: int) -> Iterable[int]:
        if sys.platform.startswith("linux"):
            return _linux_group_members(pgid)
        members: list[int] = []
        for pid in psutil.pids():
            try:
                if os.getpgid(pid) == pgid:
                    members.append(pid)
            except OSError:
                continue
        return members

    def _linux_group_members(pgid: int) -> list[int]:
        # An empty group (not even a zombie) answers ESRCH: no scan needed.
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        from .guard import proc_stat_fields  # Linux only: the guard refuses to import on Windows

        # One read of /proc/<pid>/stat per process: field 5 is the process group.
        return [
            pid for pid, fields in proc_stat_fields() if len(fields) > 2 and int(fields[2]) == pgid
        ]

    def _signal_members(tree: ProcessTree, step: Step) -> None:
        sig = signal.SIGTERM if step == "term" else signal.SIGKILL
        if tree.pgid is not None:
            try:
                os.killpg(tree.pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        # Members still in the group got the group signal; signal only the escapees, so a
        # child that handles one SIGTERM is not hit by a second one.
        for pid, created in list(tree.members.items()):
            if not _is_alive(pid, created):
                continue
            try:
                if tree.pgid is not None and os.getpgid(pid) == tree.pgid:
                    continue
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                continue

    def signal_name(returncode: int) -> str | None:
        """`SIGKILL` for a returncode of -9; `None` for a normal exit."""
        if returncode >= 0:
            return None
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"SIG{-returncode}"
