/**
 * The reference nginx configurations of deploy/nginx/ as the tests run them:
 * the shipped file with only the values on its lines marked `# CHANGE:`
 * replaced (ports, upstreams, certificate), included in a minimal nginx.conf
 * of a temp dir, and a test certificate authority for its TLS.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PROJECT_ROOT } from "./server_process.ts";

const MARK = "# CHANGE:";

/**
 * `deploy/nginx/<name>` with each `[from, to]` replaced on the lines marked
 * `# CHANGE:`; every replacement must apply to at least one marked line, and
 * none of the `from` values may appear on a line that is not marked.
 */
export async function referenceConfig(
  name: string,
  replacements: ReadonlyArray<readonly [string, string]>,
): Promise<string> {
  const lines = (await Deno.readTextFile(join(PROJECT_ROOT, "deploy/nginx", name))).split("\n");
  const used = new Set<string>();
  const out = lines.map((line) => {
    const marked = line.includes(MARK);
    for (const [from, to] of replacements) {
      if (!line.includes(from)) continue;
      assert.ok(marked, `${name}: "${from}" is on a line not marked ${MARK}: ${line}`);
      line = line.replace(from, to);
      used.add(from);
    }
    return line;
  });
  for (const [from] of replacements) {
    assert.ok(used.has(from), `${name} has no line marked ${MARK} with "${from}"`);
  }
  return out.join("\n");
}

/**
 * Starts nginx (no daemon) on `conf`, included in the http block of a
 * minimal nginx.conf in `workDir` (pid file, logs and temp paths there).
 */
export async function startNginxWith(
  nginx: string,
  { workDir, conf, file = "reference.conf" }: { workDir: string; conf: string; file?: string },
): Promise<Deno.ChildProcess> {
  await Deno.writeTextFile(join(workDir, file), conf);
  const main = join(workDir, "nginx.conf");
  await Deno.writeTextFile(
    main,
    [
      Deno.uid() === 0 ? "user root;" : "",
      "daemon off;",
      "worker_processes 1;",
      `pid ${join(workDir, "nginx.pid")};`,
      `error_log ${join(workDir, "error.log")} warn;`,
      "events { worker_connections 1024; }",
      "http {",
      "  access_log off;",
      ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((kind) =>
        `  ${kind}_temp_path ${join(workDir, `${kind}_temp`)};`
      ),
      `  include ${join(workDir, file)};`,
      "}",
    ].join("\n"),
  );
  return new Deno.Command(nginx, {
    args: ["-p", `${workDir}/`, "-e", join(workDir, "error.log"), "-c", main],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

/**
 * A test CA and a certificate for `localhost` signed by it (rustls refuses a
 * self-signed leaf), made with `openssl` in `workDir`.
 */
export async function makeTestCertificate(
  openssl: string,
  workDir: string,
): Promise<{ cert: string; key: string; ca: string }> {
  const cert = join(workDir, "cert.pem");
  const key = join(workDir, "key.pem");
  const ca = join(workDir, "ca.pem");
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await Deno.writeTextFile(join(workDir, "san.ext"), "subjectAltName=DNS:localhost\n");
  for (
    const args of [
      ["req", "-x509", ...ec, "-days", "1", "-subj", "/CN=uds-test-ca", "-keyout"]
        .concat([join(workDir, "ca.key"), "-out", ca]),
      ["req", ...ec, "-subj", "/CN=localhost", "-keyout", key, "-out"]
        .concat([join(workDir, "leaf.csr")]),
      ["x509", "-req", "-in", join(workDir, "leaf.csr"), "-CA", ca, "-CAkey"]
        .concat([join(workDir, "ca.key"), "-CAcreateserial", "-days", "1"])
        .concat(["-extfile", join(workDir, "san.ext"), "-out", cert]),
    ]
  ) {
    const made = await new Deno.Command(openssl, { args, stdout: "null", stderr: "piped" })
      .output();
    assert.ok(made.success, new TextDecoder().decode(made.stderr));
  }
  return { cert, key, ca };
}
