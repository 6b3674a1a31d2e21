"""An SDK runtime that misbehaves on purpose once a prompt arrives; argv[1] picks how.

It answers `initialize` normally. On `session/prompt`:
- `flood-requests N`: answers the receipt, writes N runtime→client requests, then never reads
  its stdin again (and ignores EOF: it just sleeps).
- `answer-twice first` / `answer-twice second`: answers the prompt twice with different
  message ids and splices the first (or the second) before a normal turn.
- `big-answer BYTES`: streams BYTES of text as 64 KiB `text-delta`s, no final message.
- `orphan-stdout [setsid]`: streams one delta, starts a grandchild holding stdout open (in a
  session of its own with `setsid`), exits with 3.
- `flood-notifications N`: writes N root `session.status running` notifications before it
  answers the prompt, then runs a normal turn.
- `many-deltas N`: streams N one-character `text-delta`s, then a completed turn.
"""

import json
import subprocess
import sys
import threading

mode = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else ""
out = sys.stdout.buffer
seq = 0


def send(frame):
    out.write(json.dumps(frame, separators=(",", ":")).encode() + b"\n")
    out.flush()


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def event(session, kind, data):
    global seq
    seq += 1
    event = {"type": kind, "seq": seq, "time": None, "data": data}
    params = {"sessionId": session, "event": event}
    send({"jsonrpc": "2.0", "method": "session.event", "params": params})


def status(session, value):
    params = {"sessionId": session, "status": value}
    send({"jsonrpc": "2.0", "method": "session.status", "params": params})


def delta(session, text):
    event(session, "assistant/chunk", {"chunk": {"type": "text-delta", "text": text}})


def turn(session, message_id, text):
    status(session, "running")
    event(session, "agent/inbox/spliced", {"inserted": [{"id": message_id, "role": "user"}]})
    event(session, "turn/start", {})
    delta(session, text)
    event(session, "assistant/message", {"message": {"content": [{"type": "text", "text": text}]}})
    event(session, "turn/end", {"reason": {"kind": "completed"}})
    status(session, "idle")


def sleep_forever():
    threading.Event().wait()


def prompt(request_id, session):
    if mode == "flood-requests":
        answer(request_id, {"messageId": "m-1"})
        line = b'{"jsonrpc":"2.0","id":"srv-%d","method":"fs/read_text_file","params":{}}\n'
        for n in range(int(arg)):
            out.write(line % n)
        out.flush()
        sleep_forever()
    elif mode == "answer-twice":
        answer(request_id, {"messageId": "m-first"})
        answer(request_id, {"messageId": "m-second"})
        turn(session, "m-" + arg, "the answer")
    elif mode == "big-answer":
        answer(request_id, {"messageId": "m-1"})
        status(session, "running")
        event(session, "agent/inbox/spliced", {"inserted": [{"id": "m-1", "role": "user"}]})
        event(session, "turn/start", {})
        chunk = "x" * 65536
        for _ in range(int(arg) // len(chunk)):
            delta(session, chunk)
        event(session, "turn/end", {"reason": {"kind": "completed"}})
        status(session, "idle")
    elif mode == "flood-notifications":
        line = b'{"jsonrpc":"2.0","method":"session.status","params":{"sessionId":"%s",' % (
            session.encode()
        )
        line += b'"status":"running"}}\n'
        for _ in range(int(arg)):
            out.write(line)
        answer(request_id, {"messageId": "m-1"})
        turn(session, "m-1", "the answer")
    elif mode == "many-deltas":
        answer(request_id, {"messageId": "m-1"})
        status(session, "running")
        event(session, "agent/inbox/spliced", {"inserted": [{"id": "m-1", "role": "user"}]})
        event(session, "turn/start", {})
        for _ in range(int(arg)):
            delta(session, "x")
        event(session, "turn/end", {"reason": {"kind": "completed"}})
        status(session, "idle")
    elif mode == "orphan-stdout":
        answer(request_id, {"messageId": "m-1"})
        status(session, "running")
        event(session, "agent/inbox/spliced", {"inserted": [{"id": "m-1", "role": "user"}]})
        delta(session, "partial")
        # The grandchild inherits stdout and outlives the leader.
        subprocess.Popen(
            [sys.executable, "-c", "import threading; threading.Event().wait()"],
            start_new_session=arg == "setsid",
        )
        sys.exit(3)


while True:
    raw = sys.stdin.buffer.readline()
    if not raw:
        sys.exit(0)
    frame = json.loads(raw)
    method, request_id, params = frame.get("method"), frame.get("id"), frame.get("params") or {}
    if method == "initialize":
        info = {"name": "deepseek-harness-sdk-runtime", "version": "1"}
        answer(request_id, {"serverInfo": info})
    elif method == "session/prompt":
        prompt(request_id, params["sessionId"])
    elif method == "shutdown":
        answer(request_id, {})
        sys.exit(0)
