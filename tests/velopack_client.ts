/**
 * The real Velopack client core for the tests: the `velopack` npm package's
 * Linux build (its UpdateManager, the Rust core every Velopack SDK wraps),
 * run under Node by the script tests/fixtures/velopack_client.mjs (node).
 *
 * The version is 0.0.1298, the first published build whose client core
 * downloads and applies delta packages (0.0.1053, the build before it, has
 * no delta code). Its Linux addon asks for glibc 2.39 only for two symbols
 * it links weakly (`pidfd_spawnp`, `pidfd_getpid`, which Rust's std looks
 * for at run time and does without); on Debian 12's glibc 2.36 the loader
 * refuses the whole file for that version need. `loadableOnThisGlibc` marks
 * that one need weak (VER_FLG_WEAK in `.gnu.version_r`), as a linker does for
 * weak references, and changes nothing else.
 */
import { join } from "node:path";
import { npmInstallOnce } from "../bench/process.ts";

export const VELOPACK_NPM = "velopack@0.0.1298";
/** The last build before deltas, whose addon loads as published: the feed serves it too. */
export const VELOPACK_NPM_BEFORE_DELTAS = "velopack@0.0.1053";
const ADDON = "lib/native/velopack_nodeffi_linux_x64_gnu.node";
/** The version of the install's prepare step (the addon made loadable): changed with it. */
export const VELOPACK_PREPARE = "1";
const SHT_GNU_VERNEED = 0x6ffffffe;
const VER_FLG_WEAK = 0x2;

/** Marks the addon's version needs named `version` weak; how many it marked. */
export function loadableOnThisGlibc(elf: Uint8Array, version = "GLIBC_2.39"): number {
  const view = new DataView(elf.buffer, elf.byteOffset, elf.byteLength);
  const shoff = Number(view.getBigUint64(0x28, true));
  const shentsize = view.getUint16(0x3a, true);
  const shnum = view.getUint16(0x3c, true);
  const section = (i: number) => {
    const at = shoff + i * shentsize;
    return {
      type: view.getUint32(at + 4, true),
      offset: Number(view.getBigUint64(at + 24, true)),
      link: view.getUint32(at + 40, true),
    };
  };
  const nameAt = (at: number) => {
    let end = at;
    while (elf[end] !== 0) end++;
    return new TextDecoder().decode(elf.subarray(at, end));
  };
  let marked = 0;
  for (let i = 0; i < shnum; i++) {
    const verneed = section(i);
    if (verneed.type !== SHT_GNU_VERNEED) continue;
    const strings = section(verneed.link).offset;
    let need = verneed.offset;
    while (true) {
      const count = view.getUint16(need + 2, true);
      let aux = need + view.getUint32(need + 8, true);
      for (let j = 0; j < count; j++) {
        if (nameAt(strings + view.getUint32(aux + 8, true)) === version) {
          view.setUint16(aux + 4, view.getUint16(aux + 4, true) | VER_FLG_WEAK, true);
          marked++;
        }
        const next = view.getUint32(aux + 12, true);
        if (next === 0) break;
        aux += next;
      }
      const next = view.getUint32(need + 12, true);
      if (next === 0) break;
      need += next;
    }
  }
  return marked;
}

/**
 * Throws, saying what is missing, unless `node` and `npm` run from `path` (the
 * process's PATH unless given). The client tests need both; CI's machine has
 * NodeSource's Node 20, npm included (.ci/run installs neither).
 */
export async function requireNode(path = Deno.env.get("PATH") ?? ""): Promise<void> {
  const missing: string[] = [];
  for (const program of ["node", "npm"]) {
    let ran = false;
    try {
      const command = new Deno.Command(program, {
        args: ["--version"],
        env: { PATH: path },
        stdout: "null",
        stderr: "null",
      });
      ran = (await command.output()).success;
    } catch {
      // Not found on `path`, or not runnable.
    }
    if (!ran) missing.push(program);
  }
  if (missing.length > 0) {
    throw new Error(
      `the Velopack client tests need Node.js and npm on PATH; ${missing.join(" and ")} ` +
        `did not run (install Node.js 20 with npm, e.g. NodeSource's nodejs package)`,
    );
  }
}

/**
 * The directory of the installed `velopack` package (`spec`, VELOPACK_NPM unless given),
 * installed once per machine under the temp dir (`npmInstallOnce` of bench/process.ts), its addon
 * made loadable on this glibc before it is put in place.
 */
export async function installVelopack(spec = VELOPACK_NPM): Promise<string> {
  const dir = await npmInstallOnce(spec, {
    npmArgs: ["--ignore-scripts"],
    before: () => requireNode(),
    prepare: {
      version: VELOPACK_PREPARE,
      async run(fresh) {
        const addon = join(fresh, "node_modules", "velopack", ADDON);
        const elf = await Deno.readFile(addon);
        if (loadableOnThisGlibc(elf) > 0) await Deno.writeFile(addon, elf);
      },
    },
  });
  return join(dir, "node_modules", "velopack");
}

export interface ClientRun {
  /** The client's log messages, in order. */
  log: string[];
  /** The UpdateInfo it acted on, or null when it found none. */
  update: Record<string, unknown> | null;
  error?: string;
}

/**
 * Runs the client once: check for updates at `url`, download what it offers. Its log is the
 * file the client core writes in the temp dir (`velopack_{app id}.log`), so the run gets a temp
 * dir of its own.
 */
export async function runVelopackClient(
  moduleDir: string,
  { url, locator, options }: {
    url: string;
    locator: Record<string, unknown>;
    options?: Record<string, unknown>;
  },
): Promise<ClientRun> {
  const script = new URL("./fixtures/velopack_client.mjs", import.meta.url).pathname;
  const args = [script, moduleDir, url, JSON.stringify(locator)];
  if (options) args.push(JSON.stringify(options));
  const tmp = await Deno.makeTempDir({ prefix: "uds-velopack-client-" });
  try {
    const out = await new Deno.Command("node", {
      args,
      env: { TMPDIR: tmp },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(out.stdout).split("\n")
      .filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    const last = lines.at(-1) ?? {};
    const log: string[] = [];
    for await (const entry of Deno.readDir(tmp)) {
      if (entry.name.endsWith(".log")) {
        log.push(...(await Deno.readTextFile(join(tmp, entry.name))).split("\n"));
      }
    }
    return {
      log,
      update: last.update ?? null,
      error: last.error ?? (out.success ? undefined : new TextDecoder().decode(out.stderr)),
    };
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}
