"""The containment guard: a child subreaper that owns one process tree and outlives its members.

Linux only, standard library only (it runs with `python -I -S` and on remote hosts). Every
process a command starts — a `setsid` sleeper, a double-forked daemon, one that cleared its
environment — stays a descendant of its guard, because orphans re-parent to the nearest
subreaper (`PR_SET_CHILD_SUBREAPER`) instead of PID 1. "The tree is gone" is then one fact:
the guard has no children left. The guard kills the whole tree when its owner goes away.

Two modes:

- **Command** (`python -m subagent_core.guard [--eof-grace S] [--term-grace S] -- CMD ARGS…`):
  runs CMD with stdout/stderr inherited and stdin relayed, so it sees its own stdin reach EOF.
  On EOF it closes CMD's stdin, waits `--eof-grace` seconds, then SIGTERMs the tree, waits
  `--term-grace`, and SIGKILLs what is left. SIGHUP, SIGTERM or SIGINT (a dropped SSH
  connection) kill the tree at once. It exits with CMD's exit code (128 + N for a signal)
  once nothing of the tree is alive. This is the remote side of an SSH child.
- **Server** (`--server`, fd 0 is a `SOCK_SEQPACKET` socket to the owner): the spawn service
  behind `open_managed_process`. It keeps one idle guard forked in advance; each spawn request
  is handed to it, so a spawn costs no interpreter start. Each request carries a control
  socket; that run's guard answers `pid N` or `error REASON`, later `exit RC` (the leader's
  returncode) and `gone` (no process of the tree is left; then it exits); facts learnt at
  the same moment share one message, one per line. The guard learns of the leader's exit
  from a pidfd (Linux ≥ 5.3), and listens for SIGCHLD only while other members remain. It
  obeys `term`, `kill` and `signal N` (the leader alone). When the control socket closes — the owner
  finished, or died by any signal, SIGKILL included — it SIGKILLs the whole tree and exits
  once every member is reaped. Between runs a guard's cwd is `/`, so an idle guard pins no
  workspace. A guard's orphans (a hostile child killed its guard) re-parent
  to the server, which kills them.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":  # pragma: no cover - Windows contains trees with Job Objects
    raise ImportError("the containment guard runs on POSIX only")

import contextlib
import ctypes
import errno
import json
import os
import selectors
import signal
import socket
import time
from collections.abc import Iterator
from typing import cast

__all__ = ["proc_stat_fields", "task_children"]
"""What the in-process tree code imports; the rest is the guard's own (run as a script)."""

_PR_SET_CHILD_SUBREAPER = 36
_MAX_FDS = 8
_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16
_REQUEST_BYTES = 1 << 16
_KILL_RETRY_SECONDS = 0.05
_KILL_PASSES = 64
_RESET_SIGNALS = (
    signal.SIGPIPE,
    signal.SIGXFSZ,
    signal.SIGCHLD,
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
)
"""Signals this interpreter handles or ignores, reset to their defaults in a spawned command."""


def become_subreaper() -> bool:
    """Makes orphaned descendants re-parent to this process; True when the kernel agreed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def task_children(pid: int) -> list[int] | None:
    """`pid`'s children from `/proc/<pid>/task/<tid>/children`; None when `pid` is gone.

    One home for the per-process read this guard and the in-process tree code both make.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    kids: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as file:
                kids.extend(int(part) for part in file.read().split())
        except OSError:
            continue
    return kids


def proc_stat_fields() -> Iterator[tuple[int, list[bytes]]]:
    """Each readable `/proc/<pid>/stat` as `(pid, fields after the command name)`.

    Field 0 is then the state, 1 the parent pid, 2 the process group. One home for the
    `/proc` scan this guard and the in-process tree code both make.
    """
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        yield int(name), data[data.rfind(b")") + 2 :].split()


def _parent_map() -> dict[int, list[int]]:
    """Fallback for kernels without `/proc/<pid>/task/<tid>/children`: one `/proc` scan."""
    parents: dict[int, list[int]] = {}
    for pid, fields in proc_stat_fields():
        if len(fields) > 1:
            parents.setdefault(int(fields[1]), []).append(pid)
    return parents


_HAS_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def descendants(root: int, *, skip: frozenset[int] = frozenset()) -> list[int]:
    """Every process below `root` through parent links, except the subtrees of `skip`."""
    if _HAS_CHILDREN_FILES:

        def children(pid: int) -> list[int]:
            return task_children(pid) or []

    else:
        parents = _parent_map()

        def children(pid: int) -> list[int]:
            return parents.get(pid, [])

    found: list[int] = []
    seen: set[int] = set()
    stack = [pid for pid in children(root) if pid not in skip]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        found.append(pid)
        stack.extend(children(pid))
    return found


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return True
    return data[data.rfind(b")") + 2 : data.rfind(b")") + 3] in (b"Z", b"X")


def signal_tree(sig: int, *, root: int | None = None, skip: frozenset[int] = frozenset()) -> int:
    """Sends `sig` to every live descendant of `root` (default: this process); returns how many.

    SIGKILL is repeated while a pass still finds someone (a process forking while it dies), in
    a bounded number of passes; a stopped process also gets SIGCONT so a SIGTERM can act.
    """
    base = os.getpid() if root is None else root
    total = 0
    for _ in range(_KILL_PASSES if sig == signal.SIGKILL else 1):
        live = [pid for pid in descendants(base, skip=skip) if not _is_zombie(pid)]
        if not live:
            break
        for pid in live:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
                if sig != signal.SIGKILL:
                    os.kill(pid, signal.SIGCONT)
        total += len(live)
    return total


def _resolve(program: str, env: dict[str, str]) -> list[str]:
    """Candidate paths for `program`, searched on the child's own PATH (as `subprocess` does)."""
    if os.sep in program:
        return [program]
    return [os.path.join(directory, program) for directory in os.get_exec_path(env)]


def spawn(argv: list[str], env: dict[str, str], stdio: tuple[int, int, int]) -> int | str:
    """Starts `argv` in a new session with the given stdio; the pid, or a closed error reason."""
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(stdio)]
    first_error: OSError | None = None
    for path in _resolve(argv[0], env):
        try:
            return os.posix_spawn(
                path,
                argv,
                env,
                file_actions=actions,
                setsid=True,
                setsigmask=(),
                setsigdef=_RESET_SIGNALS,
            )
        except OSError as error:
            # Like execvp: a later PATH entry may still hold the program.
            if first_error is None or error.errno not in (errno.ENOENT, errno.ENOTDIR):
                first_error = error
    return _reason(first_error)


def _reason(error: OSError | None) -> str:
    number = errno.ENOENT if error is None or error.errno is None else error.errno
    if number in (errno.ENOENT, errno.ENOTDIR):
        return f"not-found {number}"
    if number in (errno.EACCES, errno.EPERM, errno.ENOEXEC):
        return f"not-executable {number}"
    return f"os-error {number}"


class _Wakeup:
    """SIGCHLD (while listened for) and the guard's own stop signals as bytes on a pipe."""

    def __init__(self, stop_signals: tuple[int, ...] = (), *, children: bool = True) -> None:
        self.read_fd, self.write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        self.children = not children
        self.listen(children=children)
        for sig in stop_signals:
            signal.signal(sig, _ignore)

    def listen(self, *, children: bool) -> None:
        """Whether a child's exit writes a byte. Off, SIGCHLD has its default action: it
        interrupts nothing and runs no handler, and an exited child still waits to be reaped."""
        if children != self.children:
            signal.signal(signal.SIGCHLD, _ignore if children else signal.SIG_DFL)
            self.children = children

    def drain(self) -> bytes:
        data = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.read_fd, 256):
                data += chunk
        return data

    def close(self) -> None:
        signal.set_wakeup_fd(-1)
        os.close(self.read_fd)
        os.close(self.write_fd)


def _ignore(signum: int, frame: object) -> None:
    """A handler that does nothing: the wakeup fd carries the signal to the loop."""


def reap() -> tuple[list[tuple[int, int]], bool]:
    """Collects every exited child; returns (pid, returncode) pairs and whether any remain."""
    exited: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return exited, False
        if pid == 0:
            return exited, True
        exited.append((pid, os.waitstatus_to_exitcode(status)))


# -- server mode --------------------------------------------------------------------------


def _send(sock: socket.socket, text: str) -> None:
    with contextlib.suppress(OSError):
        sock.send(text.encode())


def _run_one(
    ctl: socket.socket,
    request: dict[str, object],
    stdio: tuple[int, int, int],
    wakeup: _Wakeup,
    selector: selectors.BaseSelector,
) -> bool:
    """Runs one command to the end of its tree; True when this guard may serve another.

    Spawn, report, obey, and when the owner goes away kill everything. A guard is reusable
    once it has reported "gone" to an owner that is still there: it has no children left.
    """
    argv_value, env, cwd = request.get("argv"), request.get("env"), request.get("cwd")
    if not isinstance(argv_value, list) or not argv_value or not isinstance(env, dict):
        _send(ctl, f"error os-error {errno.EINVAL}")
        _close_all(stdio)
        return True
    argv = [str(part) for part in cast("list[object]", argv_value)]
    try:
        os.chdir(str(cwd))
    except (OSError, ValueError) as error:
        _close_all(stdio)
        number = error.errno if isinstance(error, OSError) and error.errno else errno.ENOENT
        _send(ctl, f"error bad-cwd {number}")
        return True
    leader = spawn(argv, cast("dict[str, str]", env), stdio)
    _close_all(stdio)
    if isinstance(leader, str):
        _send(ctl, f"error {leader}")
        return True
    # The leader's exit wakes us through its pidfd, with no signal handler on the way. Only
    # once it is gone and other members of the tree remain (or without a pidfd) does SIGCHLD
    # wake us, for each exit that may be the last.
    exit_fd = _exit_fd(leader)
    try:
        if exit_fd >= 0:
            selector.register(exit_fd, selectors.EVENT_READ)
        wakeup.listen(children=exit_fd < 0)
        _send(ctl, f"pid {leader}")
        ctl.setblocking(False)
        return _supervise(ctl, leader, exit_fd, wakeup, selector)
    finally:
        # Quiet until the next run's leader is gone: nothing can write a byte after this drain.
        wakeup.listen(children=False)
        wakeup.drain()
        if exit_fd >= 0 and exit_fd in selector.get_map():
            selector.unregister(exit_fd)
        _close_all((exit_fd,))


def _exit_fd(pid: int) -> int:
    """A pidfd that turns readable when `pid` exits; -1 where the kernel has none (< 5.3)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


def _supervise(
    ctl: socket.socket,
    leader: int,
    exit_fd: int,
    wakeup: _Wakeup,
    selector: selectors.BaseSelector,
) -> bool:
    """Reports the leader's exit and the tree's end, obeys the owner; see `_run_one`."""
    leader_alive = True
    owner_gone = False
    while True:
        if wakeup.children:
            wakeup.drain()
        exited, remaining = reap()
        facts = [f"exit {code}" for pid, code in exited if pid == leader]
        leader_alive = leader_alive and not facts
        done = not remaining and not leader_alive
        if done:
            facts.append("gone")
        if facts:
            # Facts learnt together go in one message, one per line: each message wakes the
            # owner, and a second one would find it busy with the first.
            _send(ctl, "\n".join(facts))
        if done:
            return not owner_gone
        if not leader_alive and not wakeup.children:
            # A reaped pid's pidfd stays readable: from here on SIGCHLD tells of the rest. Look
            # again at once, since an exit before the handler existed sent nothing.
            selector.unregister(exit_fd)
            wakeup.listen(children=True)
            continue
        if owner_gone:
            signal_tree(signal.SIGKILL)
        timeout = _KILL_RETRY_SECONDS if owner_gone else None
        for key, _ in selector.select(timeout):
            if key.fileobj is not ctl or owner_gone:
                continue
            try:
                command = ctl.recv(256).decode()
            except BlockingIOError:
                continue
            except OSError:
                command = ""
            if command == "":
                owner_gone = True
                selector.unregister(ctl)
            elif command == "term":
                signal_tree(signal.SIGTERM)
            elif command == "kill":
                signal_tree(signal.SIGKILL)
            elif command.startswith("signal ") and leader_alive:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(leader, int(command.split()[1]))


def _close_all(fds: tuple[int, ...]) -> None:
    for fd in set(fds):
        with contextlib.suppress(OSError):
            os.close(fd)


def _next_request(ctl: socket.socket) -> tuple[dict[str, object], tuple[int, int, int]] | None:
    """Waits on a finished run's control socket for the owner's next request; None at EOF.

    Commands that arrive here (a late `term`) are for a tree that is already gone: dropped.
    The owner closes first, so this socket never closes with unread data (which would reset
    the connection and lose our last message).
    """
    ctl.setblocking(True)
    while True:
        try:
            data, ancillary, _flags, _addr = ctl.recvmsg(
                _REQUEST_BYTES, socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC
            )
        except OSError:
            return None
        if not data:
            return None
        fds = _fds_of(ancillary)
        if data[:1] in (b"R", b"M"):
            parsed = _parse_request(data, fds, with_control=False)
            if parsed is not None:
                request, _, stdio = parsed
                return request, stdio
        else:
            _close_all(tuple(fds))


def _serve(ctl: socket.socket, request: dict[str, object], stdio: tuple[int, int, int]) -> None:
    """A guard's life: one run after another over the same control socket, until EOF."""
    become_subreaper()
    wakeup = _Wakeup(children=False)
    selector = selectors.DefaultSelector()
    selector.register(ctl, selectors.EVENT_READ)
    selector.register(wakeup.read_fd, selectors.EVENT_READ)
    while _run_one(ctl, request, stdio, wakeup, selector):
        # Idle, the guard holds no run's directory: a workspace it last ran in can be removed
        # or unmounted, and nothing reads a stale cwd from it.
        with contextlib.suppress(OSError):
            os.chdir("/")
        following = _next_request(ctl)
        if following is None:
            return
        request, stdio = following


def _parse_request(
    data: bytes, fds: list[int], *, with_control: bool
) -> tuple[dict[str, object], socket.socket | None, tuple[int, int, int]] | None:
    """JSON argv and cwd, NUL, the JSON env (inline `R…`, or `M` with a memfd last) and its
    fds ([control,] stdin, stdout, stderr). A malformed request closes every fd it carried."""
    wanted = 4 if with_control else 3
    try:
        if data[:1] == b"M" and len(fds) == wanted + 1:
            with os.fdopen(fds.pop(), "rb") as file:
                data = b"R" + file.read()
        if data[:1] == b"R" and len(fds) == wanted:
            header, _, env_text = data[1:].partition(b"\0")
            request: object = json.loads(header)
            if isinstance(request, dict):
                fields = cast("dict[str, object]", request)
                fields["env"] = _environment(env_text)
                control = socket.socket(fileno=fds[0]) if with_control else None
                stdio = fds[-3], fds[-2], fds[-1]
                return fields, control, stdio
    except (OSError, ValueError):
        pass
    _close_all(tuple(fds))
    return None


_last_environment: tuple[bytes, dict[str, str] | None] = (b"", None)


def _environment(text: bytes) -> dict[str, str] | None:
    """The request's environment (None when malformed), decoded once per distinct text.

    A reused guard's next request nearly always carries the same environment as its last.
    """
    global _last_environment
    if text != _last_environment[0]:
        found: dict[str, str] | None = None
        try:
            value: object = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            found = {str(k): str(v) for k, v in cast("dict[object, object]", value).items()}
        _last_environment = (text, found)
    return _last_environment[1]


def _fds_of(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    return [
        int.from_bytes(payload[i : i + 4], sys.byteorder)
        for level, kind, payload in ancillary
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
        for i in range(0, len(payload) - len(payload) % 4, 4)
    ]


def _idle_guard(link: socket.socket) -> None:
    """A pre-forked guard: waits for its first request (with its control socket), then serves."""
    try:
        data, ancillary, _flags, _addr = link.recvmsg(
            _REQUEST_BYTES, socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC
        )
    except OSError:
        return
    finally:
        link.close()
    parsed = _parse_request(data, _fds_of(ancillary), with_control=True) if data else None
    if parsed is None:
        return
    request, ctl, stdio = parsed
    assert ctl is not None
    try:
        _serve(ctl, request, stdio)
    finally:
        ctl.close()


class _Server:
    """Forks guards ahead of need and hands their request sockets to the owner.

    The owner sends a request straight to an idle guard it already holds (one message, no
    server on the path) and asks for a replacement with `N`; a request sent to the server
    itself (`R…`/`M`, when the owner holds no idle guard) is forwarded to a fresh guard.
    """

    def __init__(self, main: socket.socket) -> None:
        self.main = main
        self.guards: set[int] = set()
        self.wakeup = _Wakeup()

    def fork_guard(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                signal.set_wakeup_fd(-1)
                ours.detach()
                self.main.detach()
                # Keep stdio and our request socket only: a descriptor the server held at the
                # fork (a request being forwarded) would otherwise hold a child's pipe open.
                keep = theirs.fileno()
                os.closerange(3, keep)
                os.closerange(keep + 1, _MAX_FD)
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 0)
                os.close(devnull)
                _idle_guard(theirs)
            except BaseException:
                code = 1
                with contextlib.suppress(BaseException):
                    import traceback

                    traceback.print_exc()
            finally:
                os._exit(code)
        theirs.close()
        self.guards.add(pid)
        return ours

    def offer_guard(self) -> None:
        """Forks an idle guard and gives the owner its request socket."""
        link = self.fork_guard()
        with contextlib.suppress(OSError):
            # Never blocks: an owner that stopped taking offers must not stall the server
            # (the offered guard then just exits).
            self.main.sendmsg(
                [b"G"],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fd_array([link.fileno()]))],
                socket.MSG_DONTWAIT,
            )
        link.close()

    def forward(self, data: bytes, fds: list[int]) -> None:
        """Hands a request the owner sent to us to a freshly forked guard."""
        link = self.fork_guard()
        with contextlib.suppress(OSError):
            link.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fd_array(fds))])
        link.close()
        for fd in fds:
            os.close(fd)

    def collect(self) -> None:
        exited, _ = reap()
        for pid, _code in exited:
            self.guards.discard(pid)
        # Anything else below us was orphaned by a guard that died: it belongs to no live run.
        signal_tree(signal.SIGKILL, skip=frozenset(self.guards))

    def serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.main, selectors.EVENT_READ)
        selector.register(self.wakeup.read_fd, selectors.EVENT_READ)
        self.offer_guard()
        while True:
            for key, _ in selector.select():
                if key.fileobj is not self.main:
                    self.wakeup.drain()
                    self.collect()
                    continue
                try:
                    data, ancillary, _flags, _addr = self.main.recvmsg(
                        _REQUEST_BYTES, socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC
                    )
                except OSError:
                    data, ancillary = b"", []
                if not data:
                    return
                if data == b"N":
                    self.offer_guard()
                else:
                    self.forward(data, _fds_of(ancillary))


def _fd_array(fds: list[int]) -> bytes:
    return b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)


def serve() -> None:
    """Server mode over fd 0 (see the module docstring)."""
    become_subreaper()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main = socket.socket(fileno=0)
    _Server(main).serve()


# -- command mode --------------------------------------------------------------------------


def run_command(argv: list[str], eof_grace: float, term_grace: float) -> int:
    """Command mode (see the module docstring); returns the exit code to leave with."""
    if not become_subreaper():
        sys.stderr.write("guard: PR_SET_CHILD_SUBREAPER is not available\n")
        return 125
    wakeup = _Wakeup((signal.SIGHUP, signal.SIGTERM, signal.SIGINT))
    selector = selectors.DefaultSelector()
    selector.register(wakeup.read_fd, selectors.EVENT_READ)
    try:
        selector.register(0, selectors.EVENT_READ)
    except (OSError, ValueError):
        # stdin is a file or /dev/null: its end says nothing about our owner, so the command
        # reads it directly and only the signals end the tree early.
        relay_read, relay_write = 0, -1
    else:
        relay_read, relay_write = os.pipe()
    leader = spawn(argv, dict(os.environ), (relay_read, 1, 2))
    if relay_write >= 0:
        os.close(relay_read)
    if isinstance(leader, str):
        if relay_write >= 0:
            os.close(relay_write)
        reason = leader.split()[0]
        sys.stderr.write(f"guard: could not start the command ({reason})\n")
        return 127 if reason == "not-found" else 126
    relay = _Relay(relay_write)
    if relay_write >= 0:
        os.set_blocking(0, False)
        os.set_blocking(relay_write, False)
    code: int | None = None
    deadline = 0.0
    stage = "run"
    while True:
        if any(signum != signal.SIGCHLD for signum in wakeup.drain()):
            stage = "kill"
        exited, remaining = reap()
        for pid, returncode in exited:
            if pid == leader:
                code = returncode if returncode >= 0 else 128 - returncode
        if not remaining and code is not None:
            return code
        now = time.monotonic()
        if stage == "eof" and now >= deadline:
            signal_tree(signal.SIGTERM)
            stage, deadline = "term", now + term_grace
        elif stage == "term" and now >= deadline:
            stage = "kill"
        if stage == "kill":
            signal_tree(signal.SIGKILL)
        timeout = None
        if stage == "kill":
            timeout = _KILL_RETRY_SECONDS
        elif stage in ("eof", "term"):
            timeout = max(0.0, deadline - now)
        for key, events in selector.select(timeout):
            if key.fileobj == relay_write and events & selectors.EVENT_WRITE:
                relay.flush()
            elif key.fileobj == 0 and not relay.feed():
                selector.unregister(0)
                if stage == "run":
                    stage, deadline = "eof", time.monotonic() + eof_grace
            if key.fileobj in (0, relay_write):
                _watch_relay(selector, relay)


class _Relay:
    """Copies our stdin to the command's stdin pipe without ever blocking the guard."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.pending = b""
        self.eof = False

    def feed(self) -> bool:
        """Reads once from stdin; False at EOF (the command's stdin is then closed)."""
        try:
            chunk = os.read(0, 65536)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            self.pending = b""
            self.close()
            return False
        self.pending += chunk
        self.flush()
        return True

    def flush(self) -> None:
        if self.target < 0:
            self.pending = b""
            return
        try:
            self.pending = self.pending[os.write(self.target, self.pending) :]
        except BlockingIOError:
            return
        except OSError:
            self.pending = b""

    def close(self) -> None:
        if self.target >= 0:
            with contextlib.suppress(OSError):
                os.close(self.target)
            self.target = -1


def _watch_relay(selector: selectors.BaseSelector, relay: _Relay) -> None:
    """Reads stdin only while the command's pipe has room; waits for room while data is held."""
    registered = selector.get_map()
    if relay.target < 0:
        return
    want_write = bool(relay.pending)
    if want_write and relay.target not in registered:
        selector.register(relay.target, selectors.EVENT_WRITE)
    elif not want_write and relay.target in registered:
        selector.unregister(relay.target)
    if relay.eof:
        return
    if want_write and 0 in registered:
        selector.unregister(0)
    elif not want_write and 0 not in registered:
        selector.register(0, selectors.EVENT_READ)


def main(args: list[str]) -> int:
    """Entry point: `--server`, or `[--eof-grace S] [--term-grace S] -- CMD ARGS…`."""
    if args == ["--server"]:
        serve()
        return 0
    eof_grace, term_grace = 0.5, 0.5
    while args and args[0] != "--":
        option = args.pop(0)
        if option in ("--eof-grace", "--term-grace") and args:
            value = float(args.pop(0))
            if option == "--eof-grace":
                eof_grace = value
            else:
                term_grace = value
        else:
            sys.stderr.write("usage: guard [--eof-grace S] [--term-grace S] -- CMD [ARGS...]\n")
            return 2
    if len(args) < 2:
        sys.stderr.write("usage: guard [--eof-grace S] [--term-grace S] -- CMD [ARGS...]\n")
        return 2
    return run_command(args[1:], eof_grace, term_grace)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
