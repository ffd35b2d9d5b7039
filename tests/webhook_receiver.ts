/** A webhook receiver for tests: a real HTTP server on 127.0.0.1 (docs/webhooks.md). */
import { createHmac } from "node:crypto";

/** A receiver on 127.0.0.1 that checks each delivery's signature with its own HMAC code. */
export function startReceiver(answer: () => number = () => 204) {
  const received: { id: string; event: string; body: unknown; valid: boolean }[] = [];
  let secret = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.text();
    const id = req.headers.get("webhook-id") ?? "";
    const timestamp = req.headers.get("webhook-timestamp") ?? "";
    const expected = "sha256=" +
      createHmac("sha256", secret).update(`${id}.${timestamp}.${body}`).digest("hex");
    const status = answer();
    received.push({
      id,
      event: req.headers.get("webhook-event") ?? "",
      body: JSON.parse(body),
      valid: req.headers.get("webhook-signature") === expected &&
        Math.abs(Date.now() / 1000 - Number(timestamp)) < 300,
    });
    return new Response(null, { status });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    received,
    setSecret: (value: string) => {
      secret = value;
    },
    close: () => server.shutdown(),
  };
}
