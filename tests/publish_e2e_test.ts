/**
 * The publishing API end to end: `deno task start` as a real process
 * (tests/server_process.ts) with `fs` storage; an admin creates a project and
 * a publish token through the admin UI, then the pipeline's side is walked
 * over HTTP, including the GitHub Actions and GitLab CI jobs of
 * docs/publishing.md run as written (their shell, with curl).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { randomBytes } from "./admin_helpers.ts";
import { createClientKey } from "./data_dir_fixtures.ts";
import { listDir, sha256 } from "./helpers.ts";
import { setUpPipeline, uploadForm } from "./publish_helpers.ts";
import { makeDataTempDir, PROJECT_ROOT, startServer } from "./server_process.ts";

/** The fenced yaml blocks of docs/publishing.md, parsed. */
async function docJobs(): Promise<Array<Record<string, unknown>>> {
  const page = await Deno.readTextFile(join(PROJECT_ROOT, "docs", "publishing.md"));
  return [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parse(m[1]));
}

async function runShell(
  shell: string,
  script: string,
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(shell, {
    args: ["-c", script],
    env,
    cwd: env.WORKDIR,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test("e2e: a pipeline publishes through the publishing API (fs)", async (t) => {
  const dataDir = await makeDataTempDir("publish-e2e");
  await using server = await startServer(dataDir, { APP_MAX_UPLOAD_BYTES: String(64 << 20) });
  const base = server.baseUrl;
  const { token, call } = await setUpPipeline(base, "e2e pipeline");
  const artifacts = join(dataDir, "artifacts");
  const work = await Deno.makeTempDir({ prefix: "publish-e2e-work-" });
  let clientKey = "";

  try {
    await t.step("a streamed upload: 201, stored byte for byte, served to clients", async () => {
      const bytes = randomBytes(8 << 20);
      const res = await call("/projects/desktop/releases", {
        method: "POST",
        body: uploadForm({ version: "1.0.0", sha256: sha256(bytes) }, {
          bytes,
          name: "desktop-1.0.0.zip",
        }),
      });
      const body = await res.json();
      assert.equal(res.status, 201, JSON.stringify(body));
      assert.equal(body.release.checksum_sha256, sha256(bytes));
      assert.equal(body.release.is_latest, true);
      clientKey = (await createClientKey(dataDir)).secret;
      const download = await fetch(`${base}${body.release.download_url}`, {
        headers: { authorization: `Bearer ${clientKey}` },
      });
      assert.equal(download.status, 200);
      assert.equal(sha256(new Uint8Array(await download.arrayBuffer())), sha256(bytes));
    });

    await t.step("a SHA-256 mismatch: 422, nothing stored", async () => {
      const before = await listDir(artifacts);
      const res = await call("/projects/desktop/releases", {
        method: "POST",
        body: uploadForm({ version: "1.0.1", sha256: "f".repeat(64) }, {
          bytes: randomBytes(1 << 20),
        }),
      });
      assert.equal(res.status, 422);
      assert.match((await res.json()).error, /sha256 mismatch/);
      assert.deepEqual(await listDir(artifacts), before);
      const list = await (await call("/projects/desktop/releases")).json();
      assert.deepEqual(list.releases.map((r: { version: string }) => r.version), ["1.0.0"]);
    });

    await t.step("keys stay on their side: client key here 401, token on /api/v1 401", async () => {
      const here = await call("/token", {}, clientKey);
      assert.equal(here.status, 401);
      assert.match((await here.json()).error, /client API key/);
      const there = await fetch(`${base}/api/v1/projects`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(there.status, 401);
      assert.deepEqual(await there.json(), { error: "invalid api key" });
    });

    await t.step(
      "a draft is invisible to /api/v1 until published; make-latest and its fallback",
      async () => {
        const client = (path: string) =>
          fetch(base + path, { headers: { authorization: `Bearer ${clientKey}` } });
        const latestId = async () =>
          (await (await client("/api/v1/projects/desktop/releases/latest")).json()).release.id;
        const first = await latestId();
        const res = await call("/projects/desktop/releases", {
          method: "POST",
          body: uploadForm({ version: "1.5.0", draft: "true" }, { bytes: randomBytes(1000) }),
        });
        const draft = (await res.json()).release;
        assert.equal(draft.state, "draft");
        const hidden = await client(`/api/v1/releases/${draft.id}`);
        assert.equal(hidden.status, 404);
        await hidden.body?.cancel();
        assert.equal(await latestId(), first);
        const published = await call(`/releases/${draft.id}/publish?not_latest=true`, {
          method: "POST",
        });
        assert.equal((await published.json()).release.is_latest, false);
        const visible = await client(`/api/v1/releases/${draft.id}`);
        assert.equal(visible.status, 200);
        await visible.body?.cancel();
        assert.equal(await latestId(), first, "published without becoming latest");
        const chosen = await call(`/releases/${draft.id}/make-latest`, { method: "POST" });
        assert.equal((await chosen.json()).release.is_latest, true);
        assert.equal(await latestId(), draft.id);
        await (await call(`/releases/${draft.id}/archive`, { method: "POST" })).body?.cancel();
        assert.equal(await latestId(), first, "archiving the chosen latest falls back");
      },
    );

    await t.step("the GitHub Actions job of docs/publishing.md, run as written", async () => {
      const [github] = await docJobs();
      const steps = (github.jobs as Record<string, { steps: Array<Record<string, unknown>> }>)
        .publish.steps;
      const publish = steps.find((step) => step.name === "Publish to the update service")!;
      await Deno.mkdir(join(work, "dist"), { recursive: true });
      const bytes = randomBytes(300_000);
      await Deno.writeFile(join(work, "dist", "app.zip"), bytes);
      const env = publish.env as Record<string, string>;
      const result = await runShell("bash", String(publish.run), {
        ...env,
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        UDS_URL: base,
        UDS_PUBLISH_TOKEN: token,
        GITHUB_REF_NAME: "v2.0.0",
        GITHUB_RUN_NUMBER: "17",
        WORKDIR: work,
      });
      assert.equal(result.code, 0, result.stderr);
      const answer = JSON.parse(result.stdout);
      assert.equal(answer.release.version, "2.0.0");
      assert.equal(answer.release.build, "17");
      assert.equal(answer.release.checksum_sha256, sha256(bytes));
      assert.equal(answer.release.filename, "app.zip");
    });

    await t.step(
      "the GitLab CI job of docs/publishing.md, run as written; refusals fail it",
      async () => {
        const [, gitlab] = await docJobs();
        const job = gitlab.publish as { script: string[]; variables: Record<string, string> };
        const env = {
          ...job.variables,
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
          UDS_URL: base,
          UDS_PUBLISH_TOKEN: token,
          CI_COMMIT_TAG: "v2.1.0",
          CI_PIPELINE_IID: "5",
          WORKDIR: work,
        };
        const ok = await runShell("sh", job.script.join("\n"), env);
        assert.equal(ok.code, 0, ok.stderr);
        assert.match(ok.stdout, /"version":"2.1.0"/);
        const refused = await runShell("sh", job.script.join("\n"), {
          ...env,
          UDS_PROJECT: "nope",
        });
        assert.notEqual(refused.code, 0);
        assert.match(refused.stdout, /project not found/);
      },
    );
  } finally {
    await server.stop();
    await Deno.remove(work, { recursive: true });
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
