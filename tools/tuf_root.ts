/**
 * `deno task tuf-root`: the TUF root of the service's repositories
 * (docs/tuf.md "The root"). Run it on the machines that hold the root keys,
 * never on the server. The root keys are Ed25519 PKCS#8 PEM files, made with
 * `deno task sign-key-set new-root --out root-1.pem` (it prints the public key).
 *
 *   deno task tuf-root make (--version N | --previous FILE) --root-key=KEY... [--threshold T]
 *       --key-set FILE|URL [--days N] --out FILE
 *       writes a new, unsigned root version: the root role is the given public keys
 *       (base64url; default: those of --previous) with threshold T (default 1; or that of
 *       --previous); the targets, snapshot and timestamp roles are the key set's keys but the
 *       retired ones (threshold 1); valid N days (default 365)
 *   deno task tuf-root sign --in FILE --key PEM [--key PEM...] [--out FILE]
 *       adds the signatures of the given root keys (to FILE itself without --out)
 *   deno task tuf-root verify --in FILE [--previous FILE]
 *       checks that FILE carries the threshold of its own root keys and, with --previous,
 *       of the previous version's (what clients check); prints what it lists
 *
 * Relative paths are taken from the directory the command was run in
 * (tools/caller_paths.ts), not from the checkout `deno task` runs it in.
 *
 * Exit codes: 0 done, 2 usage, 1 anything else (with a message).
 */
import { createPublicKey } from "node:crypto";
import { parseArgs } from "node:util";
import type { Metadata, Root } from "@tufjs/models";
import {
  buildRoot,
  metadataText,
  parseRoot,
  publicKeyOf,
  signWith,
  tufKeyOf,
} from "../src/tuf/metadata.ts";
import { runCliMain, UsageError } from "./cli_main.ts";
import { readEd25519Key, readKeySet } from "./key_inputs.ts";
import { callerPath } from "./caller_paths.ts";

const USAGE = `usage:
  deno task tuf-root make (--version N | --previous FILE) [--root-key=KEY]... [--threshold T]
      --key-set FILE|URL [--days N] --out FILE
  deno task tuf-root sign --in FILE --key PEM [--key PEM]... [--out FILE]
  deno task tuf-root verify --in FILE [--previous FILE]`;

async function readRootFile(path: string): Promise<Metadata<Root>> {
  try {
    return parseRoot(await Deno.readTextFile(callerPath(path)));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) throw error;
    throw new Error(`${path}: ${(error as Error).message}`);
  }
}

function positiveInteger(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`${name} must be a whole number >= 1`);
  }
  return n;
}

/** The root-role public keys of a root version (base64url). */
function rootKeysOf(root: Metadata<Root>): string[] {
  return root.signed.roles.root.keyIDs.map((id) => publicKeyOf(root.signed.keys[id]));
}

/** Whether `signer` (a root) has its threshold of signatures on `signed`; the error otherwise. */
function thresholdError(signer: Metadata<Root>, signed: Metadata<Root>): string | null {
  try {
    signer.verifyDelegate("root", signed);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

export async function run(args: string[]): Promise<string> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      version: { type: "string" },
      previous: { type: "string" },
      "root-key": { type: "string", multiple: true },
      threshold: { type: "string" },
      "key-set": { type: "string" },
      days: { type: "string" },
      out: { type: "string" },
      in: { type: "string" },
      key: { type: "string", multiple: true },
    },
  });
  const [command] = positionals;
  if (command === "make") {
    if (!values.out) throw new UsageError("--out FILE is needed");
    if (!values["key-set"]) throw new UsageError("--key-set FILE|URL is needed");
    const previous = values.previous ? await readRootFile(values.previous) : null;
    if (previous === null && values.version === undefined) {
      throw new UsageError("--version N or --previous FILE is needed");
    }
    const version = previous
      ? previous.signed.version + 1
      : positiveInteger(values.version, "--version", 1);
    const rootKeys = values["root-key"] ?? (previous ? rootKeysOf(previous) : []);
    if (rootKeys.length === 0) throw new UsageError("--root-key=KEY is needed (one per root key)");
    for (const key of rootKeys) {
      if (!/^[A-Za-z0-9_-]{43}$/.test(key)) {
        throw new UsageError(`--root-key ${key} is not a base64url Ed25519 public key`);
      }
    }
    const threshold = positiveInteger(
      values.threshold,
      "--threshold",
      previous?.signed.roles.root.threshold ?? 1,
    );
    if (threshold > rootKeys.length) {
      throw new UsageError(
        `--threshold ${threshold} is more than the ${rootKeys.length} root keys`,
      );
    }
    const onlineKeys = (await readKeySet(values["key-set"]))
      .filter((key) => key.status !== "retired").map((key) => key.public_key);
    if (onlineKeys.length === 0) throw new Error("the key set has no key that is not retired");
    const days = positiveInteger(values.days, "--days", 365);
    const root = buildRoot({
      version,
      expiresMs: Date.now() + days * 86_400_000,
      rootKeys,
      rootThreshold: threshold,
      onlineKeys,
    });
    await Deno.writeTextFile(callerPath(values.out), metadataText(root) + "\n");
    return `root version ${version} written to ${
      callerPath(values.out)
    } (unsigned): sign it with ` +
      `${threshold} root key(s)${previous ? " and the previous version's threshold" : ""}`;
  }
  if (command === "sign") {
    if (!values.in) throw new UsageError("--in FILE is needed");
    if (!values.key?.length) throw new UsageError("--key PEM is needed");
    const root = await readRootFile(values.in);
    const signers = await Promise.all(values.key.map(async (path) => {
      const key = await readEd25519Key(path);
      const publicKey = createPublicKey(key).export({ format: "jwk" }).x as string;
      return { keyId: tufKeyOf(publicKey).keyID, key };
    }));
    signWith(root, signers);
    const out = values.out ?? values.in;
    await Deno.writeTextFile(callerPath(out), metadataText(root) + "\n");
    return `root version ${root.signed.version} signed by ${
      signers.map((s) => s.keyId.slice(0, 16)).join(", ")
    }: written to ${out}`;
  }
  if (command === "verify") {
    if (!values.in) throw new UsageError("--in FILE is needed");
    const root = await readRootFile(values.in);
    const problems: string[] = [];
    const own = thresholdError(root, root);
    if (own) problems.push(`its own root keys: ${own}`);
    if (values.previous) {
      const previous = await readRootFile(values.previous);
      if (previous.signed.version + 1 !== root.signed.version) {
        problems.push(`it is version ${root.signed.version}, not ${previous.signed.version + 1}`);
      }
      const chained = thresholdError(previous, root);
      if (chained) problems.push(`the previous version's root keys: ${chained}`);
    }
    if (problems.length > 0) throw new Error(`root not valid: ${problems.join("; ")}`);
    const { signed } = root;
    return `root version ${signed.version}, expires ${signed.expires}: root keys ${
      rootKeysOf(root).join(", ")
    } (threshold ${signed.roles.root.threshold}); online keys ${
      signed.roles.timestamp.keyIDs.map((id) => publicKeyOf(signed.keys[id])).join(", ")
    }`;
  }
  throw new UsageError(command ? `unknown command "${command}"` : "missing command");
}

if (import.meta.main) await runCliMain(() => run(Deno.args), USAGE);
