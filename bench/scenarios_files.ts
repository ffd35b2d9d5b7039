/**
 * The file scenarios, driven by curl: artifact download (against nginx), and upload through the
 * admin form and, in the same run with the same file, the publishing API
 * (bench/scenarios_publish.ts).
 */
import { join } from "node:path";
import { basicDataDir, INSTALL_HINT, MB, MiB, type Scenario, scratch } from "./context.ts";
import { seedUpload, storagePaths, writeFillerFile } from "./data.ts";
import {
  cpuMsSince,
  descendants,
  findServicePid,
  procStatusKiB,
  run,
  startNginx,
  startService,
  threadCpuNs,
} from "./process.ts";
import type { BenchParams } from "./params.ts";
import { publishFigures, publishTemplate } from "./scenarios_publish.ts";
import { median } from "./stats.ts";
import { makeRow } from "./table.ts";

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

/** One side of the download comparison: its URL and headers, and the process that serves it. */
interface DownloadSide {
  url: string;
  headers: string[];
  pid: number;
}

/** A round's figures: MB/s, and the server's CPU milliseconds per download. */
interface DownloadFigures {
  rate: number;
  cpuMs: number;
}

/** {@link downloadRate} of `side`, with the CPU time its server process used for it. */
async function measureDownload(
  curl: string,
  side: DownloadSide,
  { clients, size }: { clients: number; size: number },
): Promise<DownloadFigures> {
  const before = await threadCpuNs(side.pid);
  const rate = await downloadRate(curl, side.url, side.headers, clients, size);
  const cpuMs = await cpuMsSince(side.pid, before) / clients;
  return { rate, cpuMs };
}

/** The medians of a figure's rounds, and the rounds' own ratios (service ÷ nginx). */
interface RoundMedians {
  service: DownloadFigures;
  baseline: DownloadFigures | null;
  /** Per round: the service's MB/s over nginx's in the same round, sorted. */
  ratios: number[];
}

/**
 * The service and nginx, `rounds` rounds interleaved (service first in odd
 * rounds, nginx first in even ones), so that both see the same spells of a
 * busy machine; the median of each figure.
 */
async function interleavedRounds(
  rounds: number,
  service: () => Promise<DownloadFigures>,
  baseline: (() => Promise<DownloadFigures>) | null,
): Promise<RoundMedians> {
  const ours: DownloadFigures[] = [];
  const theirs: DownloadFigures[] = [];
  for (let i = 0; i < rounds; i++) {
    if (baseline && i % 2 === 1) theirs.push(await baseline());
    ours.push(await service());
    if (baseline && i % 2 === 0) theirs.push(await baseline());
  }
  const medians = (figures: DownloadFigures[]) => ({
    rate: median(figures.map((round) => round.rate)),
    cpuMs: median(figures.map((round) => round.cpuMs)),
  });
  return {
    service: medians(ours),
    baseline: baseline ? medians(theirs) : null,
    ratios: theirs.map((round, i) => ours[i].rate / round.rate).sort((a, b) => a - b),
  };
}

const DOWNLOAD = "download";
const NGINX = "nginx sendfile";

/** The clients of each download figure: one, then `--download-clients`. */
const downloadClients = (params: BenchParams) => [1, params.downloadClients];

export const download: Scenario = {
  name: "download",
  needs: ["curl"],
  template: (params) =>
    downloadClients(params).flatMap((clients) => {
      const metric = `${params.artifactMiB} MiB, ${clients} client${clients === 1 ? "" : "s"}`;
      return [
        {
          scenario: DOWNLOAD,
          metric,
          unit: "MB/s",
          service: null,
          baselineName: NGINX,
          ratioOf: "service/baseline" as const,
          target: { of: "ratio" as const, op: ">=" as const, value: 0.8 },
        },
        {
          scenario: DOWNLOAD,
          metric: `${metric}: server CPU per download`,
          unit: "ms",
          service: null,
          baselineName: NGINX,
          ratioOf: "baseline/service" as const,
        },
      ];
    }),
  async run(ctx) {
    const { data, server } = await ctx.basic();
    const size = data.release.size_bytes;
    const curl = ctx.tools.curl!;
    const service: DownloadSide = {
      url: `${server.baseUrl}/api/v1/releases/${data.release.id}/download`,
      headers: [`Authorization: Bearer ${data.key}`],
      pid: await findServicePid(server.pid),
    };
    const nginx = ctx.tools.nginx
      ? await startNginx(
        ctx.tools.nginx,
        storagePaths(basicDataDir(ctx.workDir)).artifactsDir,
        scratch(ctx, "nginx"),
        ctx.cleanup,
      )
      : null;
    try {
      // nginx's one worker process serves the downloads (its master only starts it).
      const baseline: DownloadSide | null = nginx && {
        url: `${nginx.baseUrl}/${data.release.storage_key}`,
        headers: [],
        pid: (await descendants(nginx.pid))[0] ?? nginx.pid,
      };
      // One unmeasured download each: the file in the page cache, both servers warm.
      await downloadRate(curl, service.url, service.headers, 1, size);
      if (baseline) await downloadRate(curl, baseline.url, [], 1, size);
      const template = this.template(ctx.params);
      const rows = [];
      for (const [i, clients] of downloadClients(ctx.params).entries()) {
        ctx.log(`${DOWNLOAD}: ${clients} client(s), service and nginx interleaved`);
        const load = { clients, size };
        const rounds = ctx.params.downloadRounds;
        const figures = await interleavedRounds(
          rounds,
          () => measureDownload(curl, service, load),
          baseline && (() => measureDownload(curl, baseline, load)),
        );
        const { ratios } = figures;
        const note = nginx
          ? `medians of ${rounds} rounds, interleaved with nginx; the rounds' own ratios ${
            ratios[0].toFixed(2)
          } to ${ratios[ratios.length - 1].toFixed(2)}, median ${
            median(ratios).toFixed(2)
          }; MB = 10^6 bytes`
          : `nginx not installed (${INSTALL_HINT.nginx}): no baseline`;
        rows.push(
          makeRow({
            ...template[2 * i],
            service: figures.service.rate,
            baseline: figures.baseline?.rate ?? null,
            note,
          }),
          makeRow({
            ...template[2 * i + 1],
            service: figures.service.cpuMs,
            baseline: figures.baseline?.cpuMs ?? null,
            note:
              "CPU time of the server process's threads per download (/proc/<pid>/task/*/schedstat)",
          }),
        );
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
