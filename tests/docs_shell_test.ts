/**
 * The docs are true when followed literally: every shell block (```sh, ```bash,
 * ```shell) of README.md, docs/publishing.md and docs/operators.md runs here
 * and exits 0, in the order of the page, as a reader would run it
 * (docs/contributing.md "Shell blocks in the docs"):
 *
 * - README.md and docs/operators.md run in a fresh copy of the repository
 *   (its files as `git ls-files` lists them, with an empty ./data), like a new
 *   checkout; for operators.md the service already runs there on ./data, since
 *   its recipes (a backup "while the service runs") are for a running service.
 * - docs/publishing.md runs in a vendor's repository (an empty directory with
 *   `dist/desktop-2.4.0.zip`, `dist/app.zip` and a changelog), against a
 *   service started from a temp data dir that has the project `desktop` and a
 *   publish token for it, made in the admin UI.
 *
 * The placeholders a reader replaces with their own values are replaced
 * (`placeholders` below), nothing else. Every block gets `APP_PORT` set to a
 * free port (8000 may be taken here) and `APP_HOST=127.0.0.1`; operators.md's
 * `APP_WORKERS=2`, so that `start:all-cores` starts two workers on any machine.
 *
 * An HTML comment on the line before a block's fence says how to run it:
 * - `<!-- not run: reason -->`: skipped (what cannot run here: Docker, a real
 *   S3 host, the whole test suite); the reason is printed;
 * - `<!-- run: serves -->`: a command that keeps serving (`deno task start`):
 *   started in the background, it must answer `GET /healthz` on `APP_PORT`;
 *   the page's later blocks run while it serves, and at the end of the page
 *   it is sent SIGTERM and must exit 0.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { freePort } from "../bench/process.ts";
import { randomBytes } from "./admin_helpers.ts";
import { setUpPipeline } from "./publish_helpers.ts";
import { makeDataTempDir, PROJECT_ROOT, removedAtEnd, startServer } from "./server_process.ts";

/** How long one block may run. */
const BLOCK_TIMEOUT_MS = 180_000;
/** How long a serving block may take to answer `/healthz`. */
const SERVE_TIMEOUT_MS = 60_000;
const SHELL_LANGUAGES = new Set(["sh", "bash", "shell"]);

export interface ShellBlock {
  /** The 1-based line of the opening fence. */
  line: number;
  code: string;
  /** How to run it: the marker on the line before the fence. */
  mode: { run: "once" } | { run: "serves" } | { run: "never"; reason: string };
}

/** The shell blocks of `markdown`, with the marker before each (indented fences included). */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)\s*$/.exec(lines[i]);
    if (open === null) continue;
    const [, indent, fence, language] = open;
    let end = i + 1;
    while (end < lines.length && lines[end].trim() !== fence) end++;
    if (SHELL_LANGUAGES.has(language)) {
      const code = lines.slice(i + 1, end)
        .map((line) => line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())
        .join("\n");
      blocks.push({ line: i + 1, code, mode: markerBefore(lines, i) });
    }
    i = end;
  }
  return blocks;
}

function markerBefore(lines: string[], fence: number): ShellBlock["mode"] {
  let before = fence - 1;
  while (before >= 0 && lines[before].trim() === "") before--;
  const comment = before >= 0 ? /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(lines[before]) : null;
  const text = comment?.[1] ?? "";
  const skipped = /^not run:\s*(.+)$/.exec(text);
  if (skipped) return { run: "never", reason: skipped[1] };
  if (text === "run: serves") return { run: "serves" };
  return { run: "once" };
}

/** A copy of the repository as a checkout has it: tracked and new files, ./data empty. */
async function scratchCheckout(parent: string): Promise<string> {
  const root = join(parent, "checkout");
  const listed = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: PROJECT_ROOT,
    stdout: "piped",
  }).output();
  assert.equal(
    listed.code,
    0,
    "git ls-files: the test copies the repository's files as git lists them",
  );
  const files = new TextDecoder().decode(listed.stdout).split("\0").filter((file) =>
    file !== "" && (!file.startsWith("data/") || file === "data/.keep")
  );
  for (const file of files) {
    const info = await Deno.lstat(join(PROJECT_ROOT, file)).catch(() => null);
    if (info === null || !info.isFile) continue; // deleted in the work tree
    await Deno.mkdir(dirname(join(root, file)), { recursive: true });
    await Deno.copyFile(join(PROJECT_ROOT, file), join(root, file));
    await Deno.chmod(join(root, file), info.mode! & 0o777);
  }
  await Deno.mkdir(join(root, "data"), { recursive: true });
  await Deno.chmod(join(root, "data"), 0o755);
  return root;
}

/** The environment of a reader's shell: ours, without settings of the service's own, plus these. */
function readerEnv(extra: Record<string, string>): Record<string, string> {
  const env = Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([name]) => !name.startsWith("APP_")),
  );
  return {
    ...env,
    PATH: `${dirname(Deno.execPath())}:${env.PATH ?? "/usr/bin:/bin"}`,
    NO_COLOR: "1",
    APP_HOST: "127.0.0.1",
    APP_PORT: String(freePort()),
    ...extra,
  };
}

function withPlaceholders(code: string, placeholders: Record<string, string>): string {
  let replaced = code;
  for (const [placeholder, value] of Object.entries(placeholders)) {
    replaced = replaced.replaceAll(placeholder, value);
  }
  return replaced;
}

interface Page {
  file: string;
  cwd: string;
  env: Record<string, string>;
  placeholders: Record<string, string>;
}

/** A block that keeps serving, in a process group of its own. */
interface Serving {
  line: number;
  child: Deno.ChildProcess;
  output: () => string;
}

async function runOnce(page: Page, block: ShellBlock, code: string): Promise<void> {
  const result = await new Deno.Command("bash", {
    args: ["-c", `set -eo pipefail\n${code}`],
    cwd: page.cwd,
    env: page.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(BLOCK_TIMEOUT_MS),
  }).output();
  const decoder = new TextDecoder();
  assert.equal(
    result.code,
    0,
    `${page.file}:${block.line} exited ${result.code}:\n${code}\n--- stdout\n` +
      `${decoder.decode(result.stdout)}\n--- stderr\n${decoder.decode(result.stderr)}`,
  );
}

async function startServing(page: Page, block: ShellBlock, code: string): Promise<Serving> {
  const child = new Deno.Command("setsid", {
    args: ["bash", "-c", `set -eo pipefail\n${code}`],
    cwd: page.cwd,
    env: page.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) output += text;
  };
  const drained = Promise.all([collect(child.stdout), collect(child.stderr)]);
  const serving = { line: block.line, child, output: () => output, drained };
  let exited = false;
  child.status.then(() => exited = true);
  const deadline = Date.now() + SERVE_TIMEOUT_MS;
  const url = `http://127.0.0.1:${page.env.APP_PORT}/healthz`;
  while (true) {
    const answer = await fetch(url).catch(() => null);
    await answer?.body?.cancel();
    if (answer?.status === 200) return serving;
    if (exited || Date.now() > deadline) {
      await stopServing(serving).catch(() => {});
      await drained;
      assert.fail(
        `${page.file}:${block.line} did not serve ${url}:\n${code}\n--- output\n${output}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** SIGTERM to the block's process group (deno task and the server alike), then its exit status. */
async function stopServing(serving: Serving): Promise<Deno.CommandStatus> {
  try {
    Deno.kill(-serving.child.pid, "SIGTERM");
  } catch {
    // already gone
  }
  return await serving.child.status;
}

async function runPage(t: Deno.TestContext, page: Page): Promise<void> {
  const blocks = shellBlocks(await Deno.readTextFile(join(PROJECT_ROOT, page.file)));
  assert.ok(blocks.length > 0, `${page.file} has shell blocks`);
  const serving: Serving[] = [];
  try {
    for (const block of blocks) {
      const code = withPlaceholders(block.code, page.placeholders);
      if (block.mode.run === "never") {
        console.log(`${page.file}:${block.line} not run: ${block.mode.reason}`);
        continue;
      }
      const mode = block.mode.run;
      await t.step(`${page.file}:${block.line} (${mode})`, async () => {
        if (mode === "serves") serving.push(await startServing(page, block, code));
        else await runOnce(page, block, code);
      });
    }
  } finally {
    for (const server of serving.reverse()) {
      const status = await stopServing(server);
      assert.equal(
        status.code,
        0,
        `${page.file}:${server.line} exited ${status.code} on SIGTERM:\n${server.output()}`,
      );
    }
  }
}

/** What a reader replaces with their own: the service's address, their token, the checkout. */
function placeholders(baseUrl: string, publishToken: string): Record<string, string> {
  return {
    "https://updates.example.com": baseUrl,
    "udp_…": publishToken,
    "/path/to/service-checkout": new URL("..", import.meta.url).pathname.replace(/\/$/, ""),
  };
}

Deno.test({
  name: "the shell blocks of README.md, publishing.md and operators.md run and exit 0",
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const scratch = await Deno.makeTempDir({ prefix: "uds-docs-shell-" });
  await using _scratch = removedAtEnd(scratch);

  await t.step("README.md, in a fresh checkout", async (t) => {
    const checkout = await scratchCheckout(join(scratch, "readme"));
    await runPage(t, { file: "README.md", cwd: checkout, env: readerEnv({}), placeholders: {} });
  });

  await t.step("docs/publishing.md, in a vendor's repository", async (t) => {
    const dataDir = await makeDataTempDir("docs-shell");
    await using _data = removedAtEnd(dataDir);
    await using server = await startServer(dataDir);
    const { token } = await setUpPipeline(server.baseUrl, "docs");
    const vendor = join(scratch, "vendor");
    await Deno.mkdir(join(vendor, "dist"), { recursive: true });
    await Deno.writeFile(join(vendor, "dist", "desktop-2.4.0.zip"), randomBytes(64 * 1024));
    await Deno.writeFile(join(vendor, "dist", "app.zip"), randomBytes(32 * 1024));
    await Deno.writeTextFile(join(vendor, "CHANGELOG.md"), "# 2.4.0\n\n- Faster start.\n");
    await runPage(t, {
      file: "docs/publishing.md",
      cwd: vendor,
      env: readerEnv({}),
      placeholders: placeholders(server.baseUrl, token),
    });
  });

  await t.step("docs/operators.md, in a checkout where the service runs", async (t) => {
    const checkout = await scratchCheckout(join(scratch, "operators"));
    const metricsToken = "docs-shell-metrics-token";
    await using server = await startServer(join(checkout, "data"), {
      APP_METRICS_TOKEN: metricsToken,
    }, { cwd: checkout });
    await runPage(t, {
      file: "docs/operators.md",
      cwd: checkout,
      env: readerEnv({ APP_WORKERS: "2", APP_METRICS_TOKEN: metricsToken }),
      placeholders: { "http://localhost:8000": server.baseUrl },
    });
  });
});
