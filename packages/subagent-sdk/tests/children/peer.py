"""A raw JSON-RPC peer for transport tests: answers by method name, one line at a time.

argv[1] (optional): a file every received line is appended to, byte for byte.

Methods: `echo` → {"params": …}; `fail` → error -32001 "boom" with data; `hold` → no answer
until `release`, then every held request is answered in reverse order; `exit` → writes
params.stderr to stderr and exits with params.code, answering nothing; `notify` → sends
params.notifications, then answers {}; `raw` → writes params.data (latin-1) to stdout, then
answers {}; `stderr` → writes params.size bytes to stderr, then answers {}; `ask` → sends a request to the client and answers with the client's reply;
`initialize`, `session/prompt`, `shutdown` → minimal valid results (shutdown then exits 0).
"""

import json
import sys

record = open(sys.argv[1], "ab") if len(sys.argv) > 1 else None  # noqa: SIM115
out = sys.stdout.buffer


def send(frame):
    out.write(json.dumps(frame, separators=(",", ":")).encode() + b"\n")
    out.flush()


def answer(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


held = []
while True:
    line = sys.stdin.buffer.readline()
    if not line:
        break
    if record is not None:
        record.write(line)
        record.flush()
    frame = json.loads(line)
    method, request_id, params = frame.get("method"), frame.get("id"), frame.get("params")
    if method == "echo":
        answer(request_id, {"params": params})
    elif method == "fail":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32001, "message": "boom", "data": {"detail": [1, 2]}},
            }
        )
    elif method == "hold":
        held.append(request_id)
    elif method == "release":
        for held_id in reversed(held):
            answer(held_id, {"held": held_id})
        held.clear()
        answer(request_id, {})
    elif method == "exit":
        sys.stderr.write(params.get("stderr", ""))
        sys.stderr.flush()
        sys.exit(params.get("code", 0))
    elif method == "notify":
        for notification in params["notifications"]:
            send({"jsonrpc": "2.0", "method": notification[0], "params": notification[1]})
        answer(request_id, {})
    elif method == "raw":
        out.write(params["data"].encode("latin-1"))
        out.flush()
        answer(request_id, {})
    elif method == "stderr":
        sys.stderr.write("e" * params["size"] + "\n")
        sys.stderr.flush()
        answer(request_id, {})
    elif method == "ask":
        send({"jsonrpc": "2.0", "id": "peer-1", "method": "fs/read_text_file", "params": {}})
        reply = json.loads(sys.stdin.buffer.readline())
        answer(request_id, {"reply": reply})
    elif method == "initialize":
        answer(request_id, {"serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "1"}})
    elif method == "session/prompt":
        answer(request_id, {"messageId": "message-1"})
    elif method == "shutdown":
        answer(request_id, {})
        sys.exit(0)
