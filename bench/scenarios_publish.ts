/**
 * The publishing API's figures, measured in the upload scenario's run against the same server
 * and the same file as the admin form (bench/scenarios_files.ts): one upload through
 * `POST /publish/v1/projects/{slug}/releases` with curl (its MB/s and the server's peak RSS
 * during it), then 8 publishes to the same project at once (every one must answer 201; a 409
 * conflict answered to a pipeline counts against the figure). See docs/publishing.md "Figures".
 */
import { createHash } from "node:crypto";
import { type BenchContext, MB, MiB, scratch } from "./context.ts";
import type { BenchParams } from "./params.ts";
import { writeFillerFile } from "./data.ts";
import { procStatusKiB, run } from "./process.ts";
import { makeRow, type Row, type RowInput } from "./table.ts";

const SCENARIO = "upload";
/** Publishes sent at once to one project. */
export const PARALLEL_PUBLISHES = 8;
/** Size of each parallel publish (at most the upload size). */
const PARALLEL_MIB = 8;

export function publishTemplate(params: BenchParams): RowInput[] {
  return [
    {
      scenario: SCENARIO,
      metric: `${params.uploadMiB} MiB, publishing API`,
      unit: "MB/s",
      service: null,
      target: { of: "service", op: ">=", value: 300 },
    },
    {
      scenario: SCENARIO,
      metric: "peak resident memory, publishing API",
      unit: "MiB",
      service: null,
      target: { of: "service", op: "<=", value: 150 },
    },
    {
      scenario: SCENARIO,
      metric: `${PARALLEL_PUBLISHES} parallel publishes, one project: 201 answers`,
      unit: "count",
      service: null,
      target: { of: "service", op: ">=", value: PARALLEL_PUBLISHES },
    },
  ];
}

/** Where the API figures are taken: the running server, its admin session, the project, the file. */
export interface PublishTarget {
  baseUrl: string;
  /** The server process (for /proc/<pid>/status). */
  pid: number;
  cookie: string;
  csrfToken: string;
  slug: string;
  file: string;
  bytes: number;
}

/** Creates a publish token through the admin UI (as an admin would) and returns it. */
async function createToken(target: PublishTarget): Promise<string> {
  const res = await fetch(`${target.baseUrl}/admin/publish-tokens`, {
    method: "POST",
    headers: { cookie: target.cookie },
    body: new URLSearchParams({
      csrf_token: target.csrfToken,
      name: "bench",
      all_projects: "on",
      can_upload: "on",
    }),
  });
  const token = /data-publish-token="([^"]+)"/.exec(await res.text())?.[1];
  if (res.status !== 200 || token === undefined) {
    throw new Error(`creating a publish token answered ${res.status}`);
  }
  return token;
}

async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of (await Deno.open(path)).readable) hash.update(chunk);
  return hash.digest("hex");
}

/** One curl upload through the API; its status and curl's own transfer time. */
async function apiUpload(
  ctx: BenchContext,
  { target, token, version, file, sha256 }: {
    target: PublishTarget;
    token: string;
    version: string;
    file: string;
    sha256: string;
  },
): Promise<{ status: number; seconds: number }> {
  const { code, stdout, stderr } = await run(ctx.tools.curl!, [
    "-s",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code} %{time_total}",
    "-H",
    "Expect:", // no 100-continue round trip, as the form upload
    "-H",
    `Authorization: Bearer ${token}`,
    "-F",
    `version=${version}`,
    "-F",
    `sha256=${sha256}`,
    "-F",
    `file=@${file};type=application/octet-stream`,
    `${target.baseUrl}/publish/v1/projects/${target.slug}/releases`,
  ]);
  if (code !== 0) throw new Error(`API upload failed: curl exit ${code} ${stderr}`);
  const [status, seconds] = stdout.trim().split(" ").map(Number);
  return { status, seconds };
}

/**
 * Resets the server's VmHWM (Linux: `5` to /proc/<pid>/clear_refs), so the peak after the API
 * upload is that upload's own; false when the kernel refuses (the peak then includes the form's).
 */
async function resetPeak(pid: number): Promise<boolean> {
  try {
    await Deno.writeTextFile(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

export async function publishFigures(ctx: BenchContext, target: PublishTarget): Promise<Row[]> {
  const token = await createToken(target);
  ctx.log(`${SCENARIO}: SHA-256 of the ${ctx.params.uploadMiB} MiB file (the pipeline's side)`);
  const sha256 = await sha256OfFile(target.file);
  const reset = await resetPeak(target.pid);
  const before = await procStatusKiB(target.pid, "VmRSS");
  ctx.log(`${SCENARIO}: curl -F file=@… to the publishing API`);
  const single = await apiUpload(ctx, {
    target,
    token,
    version: "2.0.0",
    file: target.file,
    sha256,
  });
  if (single.status !== 201) throw new Error(`API upload answered ${single.status}`);
  const peak = await procStatusKiB(target.pid, "VmHWM");

  const small = scratch(ctx, "publish-parallel.bin");
  const smallBytes = Math.min(target.bytes, PARALLEL_MIB * MiB);
  await writeFillerFile(small, smallBytes);
  const smallSha = await sha256OfFile(small);
  ctx.log(`${SCENARIO}: ${PARALLEL_PUBLISHES} publishes at once to one project`);
  const started = performance.now();
  const answers = await Promise.all(
    Array.from(
      { length: PARALLEL_PUBLISHES },
      (_, i) =>
        apiUpload(ctx, { target, token, version: `3.0.${i}`, file: small, sha256: smallSha }),
    ),
  );
  const wallSeconds = (performance.now() - started) / 1000;
  const created = answers.filter((a) => a.status === 201).length;
  const conflicts = answers.filter((a) => a.status === 409).length;
  const others = answers.filter((a) => a.status !== 201 && a.status !== 409).map((a) => a.status);
  if (others.length > 0) throw new Error(`parallel publishes answered ${others.join(", ")}`);

  const [rate, memory, parallel] = publishTemplate(ctx.params);
  return [
    makeRow({ ...rate, service: target.bytes / single.seconds / MB, note: "MB = 10^6 bytes" }),
    makeRow({
      ...memory,
      service: peak / 1024,
      note: reset
        ? `VmHWM during the API upload alone (${(before / 1024).toFixed(0)} MiB RSS before it)`
        : "VmHWM since start (clear_refs refused): includes the form upload",
    }),
    makeRow({
      ...parallel,
      service: created,
      note: `${conflicts} conflicts (409) answered; ${PARALLEL_PUBLISHES} × ${
        (smallBytes / MiB).toFixed(0)
      } MiB in ${wallSeconds.toFixed(2)} s`,
    }),
  ];
}
