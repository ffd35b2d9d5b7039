/**
 * Test logs: a test server that drops a download on purpose makes Deno.serve
 * log the reason. With an Error that is "Error: …" and a stack trace, which
 * reads like a failure in the test output; the tests pass a one-line note
 * instead (EXPECTED_DROP). This checks what such a drop really prints.
 */
import assert from "node:assert/strict";
import { EXPECTED_DROP } from "./expected_noise.ts";

const SERVER = `
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () =>
  new Response(new ReadableStream({
    start(controller) {
      controller.enqueue(new Uint8Array(10));
    },
    pull(controller) {
      controller.error(${JSON.stringify(EXPECTED_DROP)});
    },
  })));
const res = await fetch("http://127.0.0.1:" + server.addr.port + "/");
await res.arrayBuffer().catch(() => {});
await server.shutdown();
`;

Deno.test("a download dropped on purpose logs one plain line, no error and no stack", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", SERVER],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const log = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, log);
  assert.ok(log.includes(EXPECTED_DROP), `the note is there: ${log}`);
  assert.doesNotMatch(log, /Error:/);
  assert.doesNotMatch(log, /^\s+at /m);
});
