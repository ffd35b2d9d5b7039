/**
 * The repository documents itself: every relative link in the README and in
 * docs/ leads to a file that is in the repository (and to a heading of it,
 * when the link names one), and no page sends the reader to a contract file
 * that is not in it (the contract lives beside the repository, in
 * `../shared/spec/`).
 *
 * Code comments are held to the same rule: a file or folder a comment names
 * exists, and a section it names is a heading of that file. The conventions
 * (docs/contributing.md, "References in comments"):
 * - paths are written from the repository root, or relative to the commenting
 *   file's folder; a bare source or page name is a file somewhere in the
 *   repository (bare `.json` names are files the service writes, not checked);
 * - a section is a `#anchor` (GitHub's heading slug) or the heading's text in
 *   double quotes after the path; "section N" needs a heading numbered N;
 * - the contract is named by its path, `../shared/spec/client-api.md` or
 *   `../shared/spec/admin-contract.md`, never by a bare file name that a
 *   reader would look for in docs/.
 */
import assert from "node:assert/strict";
import { basename, dirname, join, relative } from "node:path";
import { PROJECT_ROOT } from "./server_process.ts";
import { exists } from "./helpers.ts";

/** Where code comments are read. */
const CODE_ROOTS = ["src", "admin", "app.ts", "main.ts", "client", "tools", "bench", "tests"];
const CODE_FILE = /\.(ts|tsx|js|sh)$/;
/** Folders that hold no source: test output. */
const SKIPPED_DIRS = new Set(["screenshots", "node_modules"]);
/** The contract, beside the repository. */
const SPEC_DIR = join(PROJECT_ROOT, "..", "shared", "spec");
const CONTRACT_FILES = /(?<![\w./-])(client-api|admin-contract)\.md\b/g;

async function pages(): Promise<string[]> {
  const files = [join(PROJECT_ROOT, "README.md")];
  for await (const entry of Deno.readDir(join(PROJECT_ROOT, "docs"))) {
    if (entry.isFile && entry.name.endsWith(".md")) {
      files.push(join(PROJECT_ROOT, "docs", entry.name));
    }
  }
  return files.sort();
}

async function filesUnder(path: string): Promise<string[]> {
  const info = await Deno.stat(path);
  if (info.isFile) return [path];
  const files: string[] = [];
  for await (const entry of Deno.readDir(path)) {
    if (SKIPPED_DIRS.has(entry.name)) continue;
    files.push(...await filesUnder(join(path, entry.name)));
  }
  return files;
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
export function headingSlug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
}

/** The headings of a Markdown file (outside code fences), as written. */
export function headingsOf(markdown: string): string[] {
  const headings: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const match = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (match) headings.push(match[1]);
  }
  return headings;
}

/** The comments of a source file: block and line comments, or `#` lines of a shell script. */
export function commentsOf(source: string, shell: boolean): string[] {
  if (shell) return [...source.matchAll(/(?:^|\s)#(?!!)(.*)$/gm)].map((match) => match[1]);
  // A `//` after `:` or inside a quote is a URL or a string, not a comment.
  const pattern = /\/\*[\s\S]*?\*\/|(?<![:"'`\\])\/\/.*$/gm;
  return [...source.matchAll(pattern)].map((match) => match[0]);
}

export interface Reference {
  path: string;
  /** `#anchor`, a quoted heading, or a section number, when one follows the path. */
  anchor?: string;
  heading?: string;
  section?: string;
}

const TOP_DIRS = "src|admin|tests|docs|client|tools|bench|scripts|data";
const REFERENCE = new RegExp(
  String.raw`(?<![\w./@:-])(` +
    // a file, with or without folders: src/lib/limits.ts, ../shared/spec/client-api.md, cache.ts
    String.raw`(?:\.\.?\/)*(?:[\w-][\w.-]*\/)*[\w-][\w.-]*\.(?:tsx?|js|md|json|ya?ml|sh|css)` +
    // or a folder of the repository: src/storage/, admin/views
    String.raw`|(?:${TOP_DIRS})(?:\/[\w-][\w.-]*)*\/?` +
    String.raw`)(?![\w/-])` +
    // then maybe a section: #anchor, "Heading" or section N
    String.raw`(?:#([\w-]+)|,? "([^"\n]+)"|,? sections? (\d+))?`,
  "g",
);

/** Repository paths (and their sections) named in a comment. */
export function referencesIn(comment: string): Reference[] {
  const found: Reference[] = [];
  const text = comment.replace(/^\s*\*\s?/gm, " ").replace(/\s+/g, " ");
  for (const match of text.matchAll(REFERENCE)) {
    const [, named, anchor, heading, section] = match;
    // A glob (tests/screenshots/flow-*.png) names its folder.
    const glob = text[match.index + named.length] === "*";
    const path = glob ? named.slice(0, named.lastIndexOf("/") + 1) : named;
    if (path === "") continue;
    // A bare `.json` name is a file the service writes (manifest.json, api.json): not checked.
    if (!path.includes("/") && path.endsWith(".json")) continue;
    found.push({ path, anchor, heading, section });
  }
  return found;
}

Deno.test("reference parsing: paths, anchors, quoted headings and section numbers", () => {
  const refs = (text: string) => referencesIn(text).map((ref) => JSON.stringify(ref));
  assert.deepEqual(refs("/** see `src/lib/limits.ts` and cache.ts; ids in admin/views/ */"), [
    JSON.stringify({ path: "src/lib/limits.ts" }),
    JSON.stringify({ path: "cache.ts" }),
    JSON.stringify({ path: "admin/views/" }),
  ]);
  assert.deepEqual(refs(`// ../shared/spec/client-api.md "7. Errors" and docs/x.md#a-b`), [
    JSON.stringify({ path: "../shared/spec/client-api.md", heading: "7. Errors" }),
    JSON.stringify({ path: "docs/x.md", anchor: "a-b" }),
  ]);
  assert.deepEqual(refs("// client-api.md section 5; https://example.com/a.md; manifest.json"), [
    JSON.stringify({ path: "client-api.md", section: "5" }),
  ]);
  assert.deepEqual(refs("/** GET /admin/api-keys and /api/v1/projects, flow-*.png */"), []);
  assert.deepEqual(refs("// tests/screenshots/flow-*.png"), [
    JSON.stringify({ path: "tests/screenshots/" }),
  ]);
  // Built from parts, so that this file's own comments hold no made-up names.
  const [line, open, close] = ["/".repeat(2), "/*", "*/"];
  assert.deepEqual(
    commentsOf(`const a = "http://x/y.ts"; ${line} b\n${open} c ${close} x("${line} d")`, false),
    [`${line} b`, `${open} c ${close}`],
  );
  assert.equal(headingSlug("GET /api/v1/projects/{projectSlug}"), "get-apiv1projectsprojectslug");
  assert.equal(headingSlug("5. Authentication"), "5-authentication");
});

/** Paths that `.gitignore` keeps out of the repository (made at run time), as prefixes. */
async function ignoredPrefixes(): Promise<string[]> {
  const text = await Deno.readTextFile(join(PROJECT_ROOT, ".gitignore"));
  return text.split("\n").map((line) => line.trim().replace(/\*+$/, ""))
    .filter((line) => line !== "" && !line.startsWith("#") && !line.startsWith("!"));
}

/** Every file of the repository by base name, for bare names in comments. */
async function baseNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const root of [...CODE_ROOTS, "docs", "scripts", "README.md", "deno.json"]) {
    const path = join(PROJECT_ROOT, root);
    if (!await exists(path)) continue;
    for (const file of await filesUnder(path)) names.add(basename(file));
  }
  return names;
}

/** Why a reference does not resolve, or null when it does. */
async function brokenReason(
  ref: Reference,
  from: string,
  names: Set<string>,
): Promise<string | null> {
  const candidates = [join(PROJECT_ROOT, ref.path), join(dirname(from), ref.path)];
  let target: string | undefined;
  for (const candidate of candidates) {
    if (await exists(candidate)) {
      target = candidate;
      break;
    }
  }
  if (target === undefined) {
    if (ref.path.includes("/") || !names.has(ref.path)) return "no such file or folder";
    if (ref.anchor || ref.heading || ref.section) return "a section of a bare name: give the path";
    return null;
  }
  if (!(ref.anchor || ref.heading || ref.section)) return null;
  if (!target.endsWith(".md")) return "a section of a file that is not Markdown";
  const headings = headingsOf(await Deno.readTextFile(target));
  if (ref.anchor && !headings.some((heading) => headingSlug(heading) === ref.anchor)) {
    return `no heading with the anchor #${ref.anchor}`;
  }
  if (ref.heading && !headings.includes(ref.heading)) return `no heading "${ref.heading}"`;
  if (ref.section && !headings.some((heading) => heading.startsWith(`${ref.section}.`))) {
    return `no heading numbered ${ref.section}`;
  }
  return null;
}

Deno.test("docs: relative links resolve; no page points at a file outside the repository", async (t) => {
  for (const file of await pages()) {
    const name = relative(PROJECT_ROOT, file);
    await t.step(name, async () => {
      const text = await Deno.readTextFile(file);
      const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]);
      for (const link of links) {
        if (/^[a-z]+:/i.test(link)) continue;
        const [path, anchor] = link.split("#");
        const target = path === "" ? file : join(dirname(file), path);
        assert.ok(await exists(target), `${name}: ${link} does not exist`);
        if (anchor !== undefined && target.endsWith(".md")) {
          const slugs = headingsOf(await Deno.readTextFile(target)).map(headingSlug);
          assert.ok(slugs.includes(anchor), `${name}: ${link}: no such heading`);
        }
      }
      // A bare mention (not a link) of a contract file means a file the reader cannot open.
      const bare = text.replace(/\[[^\]]*\]\([^)]*\)/g, "link").match(
        /`?(client-api|admin-contract)\.md`?/g,
      );
      assert.equal(bare, null, `${name} names ${bare} without a link to a file here`);
    });
  }
});

Deno.test("code comments: every file, folder and section they name resolves", async (t) => {
  const names = await baseNames();
  const ignored = await ignoredPrefixes();
  const files: string[] = [];
  for (const root of CODE_ROOTS) {
    for (const file of await filesUnder(join(PROJECT_ROOT, root))) {
      if (CODE_FILE.test(file)) files.push(file);
    }
  }
  const specPresent = await exists(SPEC_DIR);
  const broken: string[] = [];
  const ambiguous: string[] = [];
  const checked: Reference[] = [];
  for (const file of files) {
    const name = relative(PROJECT_ROOT, file);
    for (const comment of commentsOf(await Deno.readTextFile(file), file.endsWith(".sh"))) {
      for (const ref of referencesIn(comment)) {
        if (ref.path.startsWith("../shared/spec/") && !specPresent) continue;
        if (ignored.some((prefix) => ref.path.startsWith(prefix))) continue;
        checked.push(ref);
        const reason = await brokenReason(ref, file, names);
        if (reason) {
          broken.push(`${name}: ${ref.path} ${ref.heading ?? ref.anchor ?? ""}: ${reason}`);
        }
      }
      for (const match of comment.matchAll(CONTRACT_FILES)) {
        ambiguous.push(`${name}: bare ${match[0]} (write ../shared/spec/${match[0]})`);
      }
    }
  }

  await t.step("the walk saw the comments", () => {
    assert.ok(files.length > 100, `${files.length} files`);
    assert.ok(checked.length > 50, `${checked.length} references`);
    assert.ok(checked.some((ref) => ref.heading !== undefined), "quoted headings are checked");
  });

  await t.step("each named file, folder and section exists", () => {
    assert.deepEqual(broken, []);
  });

  await t.step("the contract is named by its path, not by a bare file name", () => {
    assert.deepEqual(ambiguous, []);
  });

  if (!specPresent) console.warn(`${SPEC_DIR} is missing: contract references were not checked`);
});
