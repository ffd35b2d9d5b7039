/**
 * The baseline of the API scenarios: a bare `Deno.serve` that answers every
 * request with one constant JSON body and the same response headers the
 * service sent, both read once at start from the files given as arguments
 * (the bench writes the service's real response there). No routing, no KV,
 * no log: what any server must spend to send those bytes. The answer is a
 * clone of one ready-made Response, the cheapest way Deno.serve has to send
 * a fixed body with headers (about 15 µs a request less than a new Response
 * with the same header list): the service answers cached bodies that way too.
 *
 *   deno run --allow-net --allow-read bench/baseline_server.ts <body.json> <headers.json> [port]
 */
const [bodyFile, headersFile, portArg = "0"] = Deno.args;
if (!bodyFile || !headersFile) {
  console.error("usage: baseline_server.ts <body.json> <headers.json> [port]");
  Deno.exit(2);
}
const body = await Deno.readFile(bodyFile);
/** `[name, value]` pairs, as the service sent them (without `date` and `content-length`, which Deno.serve adds). */
const headers: [string, string][] = JSON.parse(await Deno.readTextFile(headersFile));

const answer = new Response(body, { headers });

Deno.serve({
  hostname: "127.0.0.1",
  port: Number(portArg),
  onListen: ({ port }) => console.log(`baseline listening on port ${port}`),
}, () => answer.clone());

Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
