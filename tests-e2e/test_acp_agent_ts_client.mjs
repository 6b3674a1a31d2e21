// Drives `harness acp-agent` with the official TypeScript ACP SDK (a client app over stdio).
//
// argv[2]: JSON {sdk: <dir of @agentclientprotocol/sdk>, agent: [argv...], env: {...}, steps: [...]}
// Steps run in order; `$session` stands for the last session id. Every frame the agent writes
// is checked against the SDK's own zod schema for what it answers; the script prints one JSON
// object: {results: [...], updates: [...], permissions: [...], frames: n, invalid: [...],
// dropped: [...]} where `dropped` lists keys the schema does not know (not an error by itself).

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const config = JSON.parse(process.argv[2]);
const sdk = await import(pathToFileURL(path.join(config.sdk, "dist/v1/stable/acp.js")).href);
const z = await import(pathToFileURL(path.join(config.sdk, "dist/v1/schema/zod.gen.js")).href);

const RESPONSES = {
  initialize: z.zInitializeResponse,
  authenticate: z.zAuthenticateResponse,
  "session/new": z.zNewSessionResponse,
  "session/load": z.zLoadSessionResponse,
  "session/list": z.zListSessionsResponse,
  "session/resume": z.zResumeSessionResponse,
  "session/set_mode": z.zSetSessionModeResponse,
  "session/set_config_option": z.zSetSessionConfigOptionResponse,
  "session/prompt": z.zPromptResponse,
};
const REQUESTS = { "session/request_permission": z.zRequestPermissionRequest };
const NOTIFICATIONS = { "session/update": z.zSessionNotification };

const out = { results: [], updates: [], permissions: [], frames: 0, invalid: [], dropped: [] };
const sent = new Map(); // request id -> method (client -> agent requests)

// Compares what the schema kept with what was sent: a changed value means the schema had to
// salvage it (invalid); a missing key is one the schema does not know (reported apart).
function compare(input, parsed, where) {
  if (Array.isArray(input)) {
    if (!Array.isArray(parsed) || parsed.length !== input.length) {
      out.invalid.push(`${where}: array changed`);
      return;
    }
    input.forEach((item, i) => compare(item, parsed[i], `${where}.${i}`));
    return;
  }
  if (input !== null && typeof input === "object") {
    if (parsed === null || typeof parsed !== "object") {
      out.invalid.push(`${where}: object changed`);
      return;
    }
    for (const key of Object.keys(input)) {
      if (!(key in parsed)) {
        if (input[key] !== null) out.dropped.push(`${where}.${key}`);
        continue;
      }
      compare(input[key], parsed[key], `${where}.${key}`);
    }
    return;
  }
  if (input !== parsed && !(input === null && parsed === undefined)) {
    out.invalid.push(`${where}: value changed`);
  }
}

function check(schema, value, where) {
  if (!schema) {
    out.invalid.push(`${where}: no schema`);
    return;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    out.invalid.push(`${where}: ${parsed.error.message.slice(0, 300)}`);
    return;
  }
  compare(value, parsed.data, where);
}

function validate(frame) {
  out.frames += 1;
  if (frame.jsonrpc !== "2.0") out.invalid.push("frame without jsonrpc 2.0");
  if ("method" in frame && "id" in frame) {
    check(REQUESTS[frame.method], frame.params, frame.method);
  } else if ("method" in frame) {
    check(NOTIFICATIONS[frame.method], frame.params, frame.method);
  } else {
    const method = sent.get(frame.id);
    if ("error" in frame) check(z.zError, frame.error, `${method} error`);
    else check(RESPONSES[method], frame.result, `${method} result`);
  }
}

// Records our own requests (by id) so responses are checked against the right schema.
function recordOutgoing(line) {
  try {
    const frame = JSON.parse(line);
    if ("method" in frame && "id" in frame) sent.set(frame.id, frame.method);
  } catch {}
}

function startAgent() {
  const child = spawn(config.agent[0], config.agent.slice(1), {
    env: config.env,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const [forClient, forCheck] = Readable.toWeb(child.stdout).tee();
  (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of forCheck) {
      buffer += decoder.decode(chunk, { stream: true });
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.trim()) validate(JSON.parse(line));
      }
    }
  })();
  const stdin = Writable.toWeb(child.stdin);
  const writer = new WritableStream({
    async write(chunk) {
      recordOutgoing(new TextDecoder().decode(chunk));
      const w = stdin.getWriter();
      try {
        await w.write(chunk);
      } finally {
        w.releaseLock();
      }
    },
    async close() {
      await stdin.close();
    },
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, stream: sdk.ndJsonStream(writer, forClient), exited };
}

const app = sdk
  .client()
  .onNotification("session/update", ({ params }) => {
    out.updates.push(params.update);
  })
  .onRequest("session/request_permission", ({ params }) => {
    out.permissions.push(params.toolCall.kind ?? null);
    const allow = params.options.find((o) => o.kind === "allow_once" || o.kind === "allow_always");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

let session = null;
let agent = startAgent();
let connection = app.connect(agent.stream);

async function call(method, params) {
  try {
    const result = await connection.agent.request(method, params);
    return { ok: result };
  } catch (error) {
    return { error: { code: error.code ?? null, message: String(error.message ?? error) } };
  }
}

const subst = (value) =>
  JSON.parse(JSON.stringify(value).replaceAll('"$session"', JSON.stringify(session)));

for (const step of config.steps) {
  if (step.op === "restart") {
    agent.child.kill("SIGKILL");
    await agent.exited;
    connection.close();
    agent = startAgent();
    connection = app.connect(agent.stream);
    out.results.push({ op: "restart" });
    continue;
  }
  if (step.op === "mark") {
    out.results.push({ op: "mark", updates: out.updates.length });
    continue;
  }
  const result = await call(step.method, subst(step.params ?? {}));
  if (step.method === "session/new" && result.ok) session = result.ok.sessionId;
  out.results.push({ op: step.method, ...result });
}

connection.close();
agent.child.stdin.end();
const ended = await Promise.race([
  agent.exited,
  new Promise((resolve) => setTimeout(() => resolve(null), 10000)),
]);
if (ended === null) agent.child.kill("SIGKILL");
out.exit = ended;
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
