/**
 * The admin pages at scale (issue 19 item 4): 5,000 projects, 10,000
 * releases in one project, 50,000 keys and 100,000 audit entries. Every page
 * is fetched by a signed-in admin; the figures are the median time, the HTML
 * size, the time of archiving (and re-activating) the latest release of the
 * big project, and the server's resident memory after browsing every page.
 */
import { AdminClient, httpSender } from "../tests/admin_helpers.ts";
import { recordApiKeyUse } from "../src/credentials/api_keys.ts";
import { createApiKeysBulk, createReleasesBulk } from "../src/seeding/bulk.ts";
import { markSha512BackfillDone } from "../src/feeds/backfill_records.ts";
import { auditKey } from "../src/kv/keys.ts";
import { createProject } from "../src/projects/projects.ts";
import { countDownload } from "../src/stats/downloads.ts";
import { withStore } from "./data.ts";
import { median } from "./stats.ts";
import {
  type Cleanup,
  type Server,
  serverRssMiB,
  startService,
  startServiceIn,
} from "./process.ts";

export interface ScaleSizes {
  projects: number;
  releases: number;
  keys: number;
  audit: number;
}

export const SCALE_SIZES: ScaleSizes = {
  projects: 5_000,
  releases: 10_000,
  keys: 50_000,
  audit: 100_000,
};

const SEEDED_MARKER = "admin-scale-seeded.json";

/**
 * Writes the scale data into `dataDir` (through the store, before any service
 * runs on it), unless a marker says an earlier run did with the same sizes.
 */
export async function seedAdminScale(dataDir: string, sizes: ScaleSizes): Promise<void> {
  const marker = `${dataDir}/${SEEDED_MARKER}`;
  // The seeded releases have no artifact: without this mark every start (and every minute after)
  // would try to backfill their SHA-512 (src/feeds/backfill.ts), 10,000 reads and warnings a time.
  const backfillDone = () => withStore(dataDir, markSha512BackfillDone);
  try {
    if (await Deno.readTextFile(marker) === JSON.stringify(sizes)) return await backfillDone();
  } catch {
    // not seeded yet
  }
  await withStore(dataDir, async (store) => {
    const tags = ["stable", "beta", "internal", "windows", "linux", "mac"];
    const ids: number[] = [];
    for (let i = 0; i < sizes.projects - 1; i++) {
      const project = await createProject(store, {
        name: `Project ${String(i).padStart(4, "0")}`,
        slug: `p-${String(i).padStart(4, "0")}`,
        description: "A project of the scale bench.",
        tags: [tags[i % tags.length], tags[(i * 7) % tags.length]],
      });
      ids.push(project.id);
    }
    const big = await createProject(store, { name: "Big", slug: "big", tags: ["stable"] });
    const release = (i: number) => ({
      version: `1.${Math.floor(i / 100)}.${i % 100}`,
      build: String(i),
      filename: `big-${i}.bin`,
      storage_key: `bench-${i}`,
      checksum_sha256: "0".repeat(64),
      size_bytes: 1024,
      created_at: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
    });
    await createReleasesBulk(
      store,
      Array.from({ length: sizes.releases }, (_, i) => release(i)),
      { projectId: big.id },
    );
    // One release in each of the first 200 other projects (their "latest version").
    for (const id of ids.slice(0, 200)) {
      await createReleasesBulk(store, [release(0)], { projectId: id });
    }
    const keyIds: number[] = [];
    for (let done = 0; done < sizes.keys; done += 5_000) {
      const inputs = Array.from({ length: Math.min(5_000, sizes.keys - done) }, (_, j) => {
        const i = done + j;
        return i % 10 === 0
          ? {
            name: `ci ${i}`,
            can_download: true,
            scope_mode: "project_allow_list",
            project_ids: [ids[i % ids.length], ids[(i * 13) % ids.length]],
          }
          : { name: `updater ${i}`, can_download: true, scope_mode: "all_projects" };
      });
      keyIds.push(...(await createApiKeysBulk(store, inputs)).map(({ apiKey }) => apiKey.id));
    }
    const at = new Date().toISOString();
    for (let i = 0; i < keyIds.length; i += 25) {
      await countDownload(store, { releaseId: 1, projectId: big.id, keyId: keyIds[i] });
      await recordApiKeyUse(store, keyIds[i], at);
    }
    const start = Date.now() - sizes.audit * 1000;
    for (let i = 0; i < sizes.audit; i += 500) {
      const op = store.kv.atomic();
      for (let j = i; j < Math.min(i + 500, sizes.audit); j++) {
        const id = j.toString(16).padStart(14, "0");
        op.set(auditKey(start + j * 1000, id), {
          id,
          at: new Date(start + j * 1000).toISOString(),
          actor: "admin",
          action: "project.update",
          target: `project p-${String(j % 5000).padStart(4, "0")}`,
          details: 'name "Project"; tags stable',
          address: "127.0.0.1",
        });
      }
      await op.commit();
    }
  });
  await backfillDone();
  await Deno.writeTextFile(marker, JSON.stringify(sizes));
}

/** The `rel="next"` link of a page, or null. */
function nextLink(html: string): string | null {
  const match = /<a href="([^"]*)" rel="next"/.exec(html);
  return match === null ? null : match[1].replaceAll("&amp;", "&");
}

interface PageFigure {
  path: string;
  status: number;
  p50_ms: number;
  html_kb: number;
}

/** Fetches `path` `samples` times (after one warm-up): median time and size. */
async function measurePage(
  admin: AdminClient,
  path: string,
  samples: number,
): Promise<PageFigure & { html: string }> {
  const times: number[] = [];
  let html = "";
  let status = 0;
  for (let i = 0; i <= samples; i++) {
    const started = performance.now();
    const page = await admin.page(path);
    if (i > 0) times.push(performance.now() - started);
    html = page.html;
    status = page.res.status;
  }
  const bytes = new TextEncoder().encode(html).length;
  return {
    path,
    status,
    p50_ms: +median(times).toFixed(1),
    html_kb: +(bytes / 1024).toFixed(1),
    html,
  };
}

/** Every admin page of the scale data on `server`, then archive/activate and memory. */
async function browseEveryPage(server: Server, password: string, samples: number) {
  const admin = new AdminClient(httpSender([server.baseUrl]));
  if ((await admin.signIn("admin", password)).status !== 303) throw new Error("sign-in failed");
  const pages: PageFigure[] = [];
  const visit = async (path: string, followNext = false) => {
    const { html, ...figure } = await measurePage(admin, path, samples);
    pages.push(figure);
    const next = followNext ? nextLink(html) : null;
    if (next !== null) {
      const { html: _, ...nextFigure } = await measurePage(admin, next, samples);
      pages.push({ ...nextFigure, path: `${path} → next` });
    }
    return html;
  };
  await visit("/admin");
  await visit("/admin/projects", true);
  await visit("/admin/projects?q=p-4");
  const projectHtml = await visit("/admin/projects/big", true);
  await visit("/admin/projects/big?q=1.0.5");
  await visit("/admin/api-keys", true);
  await visit("/admin/api-keys?q=ci+777");
  await visit("/admin/audit", true);
  const latest = /data-release-id="(\d+)"/.exec(projectHtml)?.[1];
  if (latest === undefined) throw new Error("no release row on the project page");
  const archive: number[] = [];
  const activate: number[] = [];
  for (let i = 0; i < samples; i++) {
    for (const [action, times] of [["archive", archive], ["activate", activate]] as const) {
      const started = performance.now();
      const res = await admin.post(`/admin/releases/${latest}/${action}`);
      times.push(performance.now() - started);
      await res.body?.cancel();
      if (res.status !== 303) throw new Error(`${action} answered ${res.status}`);
    }
  }
  return {
    pages,
    slowest_page_p50_ms: Math.max(...pages.map((page) => page.p50_ms)),
    largest_page_kb: Math.max(...pages.map((page) => page.html_kb)),
    archive_p50_ms: +median(archive).toFixed(1),
    activate_p50_ms: +median(activate).toFixed(1),
    rss_after_browsing_mib: await serverRssMiB(server.pid),
  };
}

/**
 * The admin pages on the scale data, with this checkout and, when `beforeRoot`
 * is given (another checkout, e.g. `git archive <commit> | tar -x -C /tmp/before`),
 * with that one too: rounds interleaved on the same data, each on a fresh start.
 */
export async function adminPagesAtScale(
  options: {
    dataDir: string;
    env: Record<string, string>;
    password: string;
    cleanup: Cleanup;
    beforeRoot?: string;
    rounds: number;
    samples: number;
  },
) {
  const { dataDir, env, cleanup } = options;
  const variants: Array<[string, () => Promise<Server>]> = [
    ["after", () => startService(dataDir, env, cleanup)],
  ];
  if (options.beforeRoot) {
    const root = options.beforeRoot;
    variants.unshift(["before", () => startServiceIn({ root, dataDir, env, cleanup })]);
  }
  const runs: Record<string, unknown[]> = {};
  for (let round = 0; round < options.rounds; round++) {
    for (const [name, start] of variants) {
      const server = await start();
      try {
        (runs[name] ??= []).push(await browseEveryPage(server, options.password, options.samples));
      } finally {
        await server.stop();
      }
    }
  }
  return runs;
}
