/**
 * The baseline of the API scenarios: a bare `Deno.serve` that answers every
 * request with one constant JSON body, read once at start from the file
 * given as the only argument (the bench writes the service's real response
 * there, so both send bodies of the same size). No routing, no KV, no log.
 *
 *   deno run --allow-net --allow-read bench/baseline_server.ts <body.json> [port]
 */
const [bodyFile, portArg = "0"] = Deno.args;
if (!bodyFile) {
  console.error("usage: baseline_server.ts <body.json> [port]");
  Deno.exit(2);
}
const body = await Deno.readFile(bodyFile);
const headers = { "content-type": "application/json; charset=utf-8" };

Deno.serve({
  hostname: "127.0.0.1",
  port: Number(portArg),
  onListen: ({ port }) => console.log(`baseline listening on port ${port}`),
}, () => new Response(body, { headers }));

Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
