/**
 * The file scenarios, driven by curl: artifact download (against nginx), and upload through the
 * admin form and, in the same run with the same file, the publishing API
 * (bench/scenarios_publish.ts).
 */
import { join } from "node:path";
import { basicDataDir, INSTALL_HINT, MB, MiB, type Scenario, scratch } from "./context.ts";
import { seedUpload, storagePaths, writeFillerFile } from "./data.ts";
import { findServicePid, procStatusKiB, run, startNginx, startService } from "./process.ts";
import { publishFigures, publishTemplate } from "./scenarios_publish.ts";
import { median } from "./stats.ts";
import { makeRow } from "./table.ts";

/** Downloads per figure; the median is kept. */
const DOWNLOAD_ROUNDS = 3;

/**
 * `clients` concurrent curl downloads of `url` to /dev/null. Returns MB/s of
 * all bytes over the slowest client's transfer time (curl's own timer, so
 * process start-up is not counted). Fails unless every client got status 200
 * and exactly `size` bytes.
 */
async function downloadRate(
  curl: string,
  url: string,
  headers: string[],
  clients: number,
  size: number,
): Promise<number> {
  const args = ["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{time_total}"];
  for (const header of headers) args.push("-H", header);
  const results = await Promise.all(
    Array.from({ length: clients }, () => run(curl, [...args, url])),
  );
  let slowest = 0;
  for (const { code, stdout, stderr } of results) {
    const [status, bytes, seconds] = stdout.trim().split(" ").map(Number);
    if (code !== 0 || status !== 200 || bytes !== size) {
      throw new Error(
        `download of ${url} failed: curl exit ${code}, status ${status}, ${bytes} of ${size} bytes ${stderr}`,
      );
    }
    slowest = Math.max(slowest, seconds);
  }
  return (size * clients) / slowest / MB;
}

/** {@link downloadRate} run DOWNLOAD_ROUNDS times; the median. */
async function medianRate(...args: Parameters<typeof downloadRate>): Promise<number> {
  const rates: number[] = [];
  for (let i = 0; i < DOWNLOAD_ROUNDS; i++) rates.push(await downloadRate(...args));
  return median(rates);
}

const DOWNLOAD = "download";
const NGINX = "nginx sendfile";

export const download: Scenario = {
  name: "download",
  needs: ["curl"],
  template: (params) =>
    [1, params.downloadClients].map((clients) => ({
      scenario: DOWNLOAD,
      metric: `${params.artifactMiB} MiB, ${clients} client${clients === 1 ? "" : "s"}`,
      unit: "MB/s",
      service: null,
      baselineName: NGINX,
      ratioOf: "service/baseline" as const,
      target: { of: "ratio" as const, op: ">=" as const, value: 0.7 },
    })),
  async run(ctx) {
    const { data, server } = await ctx.basic();
    const size = data.release.size_bytes;
    const serviceUrl = `${server.baseUrl}/api/v1/releases/${data.release.id}/download`;
    const auth = [`Authorization: Bearer ${data.key}`];
    const curl = ctx.tools.curl!;
    const nginx = ctx.tools.nginx
      ? await startNginx(
        ctx.tools.nginx,
        storagePaths(basicDataDir(ctx.workDir)).artifactsDir,
        scratch(ctx, "nginx"),
        ctx.cleanup,
      )
      : null;
    try {
      const nginxUrl = nginx ? `${nginx.baseUrl}/${data.release.storage_key}` : "";
      // One unmeasured download each: the file in the page cache, both servers warm.
      await downloadRate(curl, serviceUrl, auth, 1, size);
      if (nginx) await downloadRate(curl, nginxUrl, [], 1, size);
      const rows = [];
      for (const [i, template] of this.template(ctx.params).entries()) {
        const clients = i === 0 ? 1 : ctx.params.downloadClients;
        ctx.log(`${DOWNLOAD}: ${clients} client(s) on the service`);
        const service = await medianRate(curl, serviceUrl, auth, clients, size);
        let baseline: number | null = null;
        if (nginx) {
          ctx.log(`${DOWNLOAD}: ${clients} client(s) on nginx`);
          baseline = await medianRate(curl, nginxUrl, [], clients, size);
        }
        rows.push(makeRow({
          ...template,
          service,
          baseline,
          note: nginx
            ? `median of ${DOWNLOAD_ROUNDS} rounds; MB = 10^6 bytes`
            : `nginx not installed (${INSTALL_HINT.nginx}): no baseline`,
        }));
      }
      return rows;
    } finally {
      await nginx?.stop();
    }
  },
};

// ---------------------------------------------------------------------------

/** A minimal cookie jar for the admin sign-in. */
class Cookies {
  readonly values = new Map<string, string>();
  take(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair.indexOf("=");
      this.values.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  }
  header(): string {
    return [...this.values].map(([name, value]) => `${name}=${value}`).join("; ");
  }
}

function csrfTokenIn(html: string): string {
  const token = /name="csrf_token" value="([^"]*)"/.exec(html)?.[1];
  if (!token) throw new Error("no csrf_token in the admin page");
  return token;
}

/** Signs in to the admin UI; returns the session cookie header and the page's CSRF token. */
async function signIn(
  baseUrl: string,
  username: string,
  password: string,
  pagePath: string,
): Promise<{ cookie: string; csrfToken: string }> {
  const cookies = new Cookies();
  const login = await fetch(`${baseUrl}/admin/login`);
  cookies.take(login);
  const loginToken = csrfTokenIn(await login.text());
  const res = await fetch(`${baseUrl}/admin/login`, {
    method: "POST",
    headers: { cookie: cookies.header() },
    body: new URLSearchParams({ username, password, csrf_token: loginToken }),
    redirect: "manual",
  });
  await res.body?.cancel();
  if (res.status !== 303) throw new Error(`admin sign-in answered ${res.status}`);
  cookies.take(res);
  const page = await fetch(`${baseUrl}${pagePath}`, { headers: { cookie: cookies.header() } });
  if (page.status !== 200) throw new Error(`GET ${pagePath} answered ${page.status}`);
  return { cookie: cookies.header(), csrfToken: csrfTokenIn(await page.text()) };
}

const UPLOAD = "upload";

export const upload: Scenario = {
  name: "upload",
  needs: ["curl"],
  template: (params) => [
    {
      scenario: UPLOAD,
      metric: `${params.uploadMiB} MiB, admin form`,
      unit: "MB/s",
      service: null,
      target: { of: "service", op: ">=", value: 300 },
    },
    {
      scenario: UPLOAD,
      metric: "peak resident memory",
      unit: "MiB",
      service: null,
      target: { of: "service", op: "<=", value: 150 },
    },
    ...publishTemplate(params),
  ],
  async run(ctx) {
    const bytes = Math.round(ctx.params.uploadMiB * MiB);
    const dataDir = join(ctx.workDir, "upload");
    const { slug } = await seedUpload(dataDir);
    const file = scratch(ctx, "upload.bin");
    ctx.log(`${UPLOAD}: writing a ${ctx.params.uploadMiB} MiB file`);
    await writeFillerFile(file, bytes);
    const password = `bench-${crypto.randomUUID()}`;
    const server = await startService(dataDir, {
      APP_ADMIN_USERNAME: "bench",
      APP_ADMIN_PASSWORD: password,
      APP_MAX_UPLOAD_BYTES: String(Math.max(4 * 1024 * MiB, bytes * 2)),
    }, ctx.cleanup);
    try {
      const pid = await findServicePid(server.pid);
      const { cookie, csrfToken } = await signIn(
        server.baseUrl,
        "bench",
        password,
        `/admin/projects/${slug}`,
      );
      const before = await procStatusKiB(pid, "VmHWM");
      ctx.log(`${UPLOAD}: curl -F file=@… to the service (pid ${pid})`);
      const { code, stdout, stderr } = await run(ctx.tools.curl!, [
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{time_total}",
        "-H",
        "Expect:", // no 100-continue round trip
        "-H",
        `Cookie: ${cookie}`,
        "-F",
        `csrf_token=${csrfToken}`,
        "-F",
        "version=1.0.0",
        "-F",
        `file=@${file};type=application/octet-stream`,
        `${server.baseUrl}/admin/projects/${slug}/releases`,
      ]);
      const [status, seconds] = stdout.trim().split(" ").map(Number);
      if (code !== 0 || status !== 303) {
        throw new Error(`upload failed: curl exit ${code}, status ${status} ${stderr}`);
      }
      const peak = await procStatusKiB(pid, "VmHWM");
      await assertStored(storagePaths(dataDir).artifactsDir, bytes);
      const [rate, memory] = this.template(ctx.params);
      const api = await publishFigures(ctx, {
        baseUrl: server.baseUrl,
        pid,
        cookie,
        csrfToken,
        slug,
        file,
        bytes,
      });
      return [
        makeRow({ ...rate, service: bytes / seconds / MB, note: "MB = 10^6 bytes" }),
        makeRow({
          ...memory,
          service: peak / 1024,
          note: `VmHWM of the server process after the upload (${
            (before / 1024).toFixed(0)
          } MiB before it)`,
        }),
        ...api,
      ];
    } finally {
      await server.stop();
    }
  },
};

/** The upload really landed: one artifact file of the uploaded size. */
async function assertStored(artifactsDir: string, bytes: number): Promise<void> {
  for await (const entry of Deno.readDir(artifactsDir)) {
    if (entry.isFile && (await Deno.stat(join(artifactsDir, entry.name))).size === bytes) return;
  }
  throw new Error(`the upload answered 303 but no artifact of ${bytes} bytes is stored`);
}
