/**
 * Issue 22 item 4, end to end on the real server: upload metadata can no
 * longer make a release undownloadable. File names are cut by code point
 * (never inside a surrogate pair), a part's Content-Type must be an RFC 9110
 * media type (the form is shown again with the error, nothing is stored, the
 * latest release stays), and records stored before these checks are still
 * served, cleaned on the way out, with bidi controls dropped from both
 * file-name forms.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { releaseKey } from "../src/kv/keys.ts";
import type { Release } from "../src/releases/types.ts";
import { contentDisposition, downloadContentType } from "../src/http/content_disposition.ts";
import { cutToCodePoints, isMediaType } from "../src/lib/header_text.ts";
import { safeFilename } from "../src/projects/validate.ts";
import { AdminClient, httpSender } from "./admin_helpers.ts";
import { createClientKey } from "./data_dir_fixtures.ts";
import { makeDataTempDir, type ServerProcess, startServer } from "./server_process.ts";

const encoder = new TextEncoder();
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const BIDI_ENCODED = /%E2%80%8[EF]|%E2%80%A[A-E]|%E2%81%A[6-9]|%D8%9C/i;

/** A multipart upload whose file part carries `contentType` byte for byte (FormData cannot). */
function rawUploadBody(
  csrfToken: string,
  version: string,
  file: { name: string; contentType: string; bytes: string },
): { body: Uint8Array; type: string } {
  const boundary = `----b${crypto.randomUUID()}`;
  const text = [
    `--${boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n${csrfToken}\r\n`,
    `--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n${version}\r\n`,
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\n` +
    `Content-Type: ${file.contentType}\r\n\r\n${file.bytes}\r\n`,
    `--${boundary}--\r\n`,
  ].join("");
  return { body: encoder.encode(text), type: `multipart/form-data; boundary=${boundary}` };
}

async function artifactFiles(dataDir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(join(dataDir, "artifacts"))) {
    if (entry.isFile) names.push(entry.name);
  }
  return names.sort();
}

/** The `filename*` of a Content-Disposition, decoded. */
function extendedName(disposition: string): string | undefined {
  const encoded = /filename\*=UTF-8''([^;]*)/.exec(disposition)?.[1];
  return encoded === undefined ? undefined : decodeURIComponent(encoded);
}

Deno.test({
  name: "issue 22.4: upload metadata never makes a release undownloadable",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const dataDir = await makeDataTempDir("upload-metadata");
  let server: ServerProcess = await startServer(dataDir);
  try {
    const admin = new AdminClient(httpSender([server.baseUrl]));
    assert.equal((await admin.signIn("admin", "test-password-123")).status, 303);
    const created = await admin.post("/admin/projects", { name: "App", slug: "app" });
    assert.equal(created.status, 303);
    await created.body?.cancel();
    await admin.page("/admin/projects/app");

    const { secret } = await createClientKey(dataDir);
    const auth = { authorization: `Bearer ${secret}` };
    const latest = async () => {
      const res = await fetch(`${server.baseUrl}/api/v1/projects/app/releases/latest`, {
        headers: auth,
      });
      assert.equal(res.status, 200);
      return (await res.json()).release;
    };
    const download = async (id: number, method: "GET" | "HEAD") => {
      const res = await fetch(`${server.baseUrl}/api/v1/releases/${id}/download`, {
        method,
        headers: auth,
      });
      const body = method === "GET" ? await res.text() : (await res.body?.cancel(), "");
      return { res, body };
    };
    const upload = async (version: string, name: string, contentType: string) => {
      const { body, type } = rawUploadBody(admin.csrfToken, version, {
        name,
        contentType,
        bytes: `bytes of ${version}`,
      });
      const res = await admin.fetch("/admin/projects/app/releases", {
        method: "POST",
        body: body as BodyInit,
        headers: { "content-type": type },
        redirect: "manual",
      });
      return { status: res.status, html: await res.text() };
    };

    await t.step("a 254-character name plus an emoji is cut before the emoji", async () => {
      const name = `${"a".repeat(254)}\u{1F600}.bin`;
      const answer = await upload("1.0.0", name, "application/octet-stream");
      assert.equal(answer.status, 303, answer.html);
      const release = await latest();
      assert.equal(release.version, "1.0.0");
      assert.equal(release.filename, "a".repeat(254));
      for (const method of ["GET", "HEAD"] as const) {
        const { res, body } = await download(release.id, method);
        assert.equal(res.status, 200, `${method}: ${body}`);
        assert.equal(
          res.headers.get("content-disposition"),
          `attachment; filename=${"a".repeat(254)}`,
        );
      }
    });

    await t.step(
      "a content type that is not an RFC 9110 media type shows the form again",
      async () => {
        const before = await artifactFiles(dataDir);
        const bad = [
          "text/plain\r; a=b",
          "text/plain\n; a=b",
          "text/plain\u2028; a=b",
          'text/plain; a="\u65e5\u672c"',
          'text/plain; a="\u00e9"',
          "text/plain; a=b\rX-Injected: 1",
          "text",
          "text/plain;",
          `application/${"x".repeat(200)}`,
        ];
        for (const contentType of bad) {
          const answer = await upload("9.9.9", "evil.bin", contentType);
          assert.equal(answer.status, 400, JSON.stringify(contentType));
          assert.match(answer.html, /is not a valid media type/, JSON.stringify(contentType));
          assert.match(answer.html, /value="9\.9\.9"/, "the values entered are shown again");
        }
        assert.equal((await latest()).version, "1.0.0", "no bad release became latest");
        assert.deepEqual(await artifactFiles(dataDir), before, "nothing was stored");
      },
    );

    await t.step("valid media types with parameters are kept as sent", async () => {
      const type = 'text/plain; charset="utf-8"; format=flowed';
      const answer = await upload("1.0.1", "notes.txt", type);
      assert.equal(answer.status, 303, answer.html);
      const release = await latest();
      assert.equal(release.content_type, type);
      const { res } = await download(release.id, "GET");
      assert.equal(res.headers.get("content-type"), type);
    });

    await t.step("bidi controls are dropped from the stored name", async () => {
      const answer = await upload("1.0.2", "invoice\u202Efdp.exe", "application/octet-stream");
      assert.equal(answer.status, 303, answer.html);
      const release = await latest();
      assert.equal(release.filename, "invoicefdp.exe");
    });

    await t.step("records stored before the checks are still served, cleaned", async () => {
      const id = (await latest()).id;
      await server.stop();
      const kv = await Deno.openKv(join(dataDir, "kv.sqlite3"));
      const entry = await kv.get<Release>(releaseKey(id));
      const broken: Release = {
        ...entry.value!,
        // What the old upload code stored: half a surrogate pair, a bidi override, and
        // content types that are no valid header value.
        filename: `${"a".repeat(200)}\u202Egpj.exe\uD83D`,
        content_type: "text/html\u2028; charset=\u65e5",
      };
      await kv.set(releaseKey(id), broken);
      kv.close();
      server = await startServer(dataDir);
      for (const method of ["GET", "HEAD"] as const) {
        const { res, body } = await download(id, method);
        assert.equal(res.status, 200, `${method}: ${body}`);
        assert.equal(res.headers.get("content-type"), "application/octet-stream");
        const disposition = res.headers.get("content-disposition")!;
        assert.doesNotMatch(disposition, BIDI_ENCODED, disposition);
        assert.doesNotMatch(disposition, /[^\x20-\x7e]/, disposition);
        const name = extendedName(disposition)!;
        assert.equal(name, `${"a".repeat(200)}gpj.exe\uFFFD`);
        assert.doesNotMatch(name, BIDI);
      }
      const metadata = await fetch(`${server.baseUrl}/api/v1/releases/${id}`, { headers: auth });
      assert.equal(metadata.status, 200);
      assert.equal((await metadata.json()).release.content_type, "application/octet-stream");
    });
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("header text rules: code-point cuts, media types, bidi in both file-name forms", () => {
  assert.equal(cutToCodePoints(`${"a".repeat(254)}\u{1F600}`, 255), "a".repeat(254));
  assert.equal(cutToCodePoints(`${"a".repeat(253)}\u{1F600}`, 255), `${"a".repeat(253)}\u{1F600}`);
  assert.equal(cutToCodePoints("ab\uD83D", 10), "ab\uFFFD");
  assert.equal(safeFilename(`dir/${"b".repeat(254)}\u{1F600}`), "b".repeat(254));
  assert.equal(safeFilename("a\u2028b\u200Fc\u0085.zip"), "abc.zip");
  for (const ok of ["application/zip", 'text/plain; charset="utf-8"', "a/b;c=d ; e=f", "x/y+z"]) {
    assert.ok(isMediaType(ok), ok);
  }
  for (const bad of ["text/plain\r", "a/b;\nc=d", "a/b\u2028", 'a/b; c="\u00e9"', "a/b c", "/b"]) {
    assert.ok(!isMediaType(bad), JSON.stringify(bad));
  }
  assert.equal(downloadContentType("text/html\u2028; x=1"), "application/octet-stream");
  for (const name of ["x\u202Eexe.txt", "x\u2066y\u2069\u200E\u200F\u061C.zip"]) {
    const value = contentDisposition(name);
    assert.doesNotMatch(value, BIDI_ENCODED, value);
    assert.doesNotMatch(extendedName(value) ?? value, BIDI);
  }
  assert.equal(contentDisposition("x\u202Ey.zip"), "attachment; filename=xy.zip");
  // A lone surrogate no longer throws URIError.
  assert.match(contentDisposition("a\uD800.zip"), /filename\*=UTF-8''a%EF%BF%BD\.zip/);
});
