/**
 * `deno task sign-key-set`: the offline root (docs/signing.md "Offline root").
 * Run it on a machine that holds the root's private key, never on the server.
 *
 *   deno task sign-key-set new-root --out root.pem
 *       makes a root key pair: the private key (PKCS#8 PEM, 0600) in root.pem,
 *       which must lie outside the checkout; prints the public key that clients
 *       pin with --pin-root
 *   deno task sign-key-set public --root root.pem
 *       prints the public key of root.pem again
 *   deno task sign-key-set sign --root root.pem --key-set FILE|URL [--days N] [--out FILE]
 *       signs the keys of a key set (a saved /.well-known/uds-keys.json, or its
 *       URL) but the retired ones, valid for N days (default 90); writes the
 *       document to paste on the admin UI's Signing keys page (stdout without --out)
 *
 * Relative paths are taken from the directory the command was run in
 * (tools/caller_paths.ts), not from the checkout `deno task` runs it in.
 *
 * Exit codes: 0 done, 2 usage, 1 anything else (with a message).
 */
import { createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { parseArgs } from "node:util";
import { kidOf } from "../src/signing/key_files.ts";
import { signRootDocument } from "../src/signing/root.ts";
import { createPrivateFile } from "../src/lib/private_files.ts";
import { runCliMain, UsageError } from "./cli_main.ts";
import { readEd25519Key, readKeySet } from "./key_inputs.ts";
import { callerPath, outsideCheckout } from "./caller_paths.ts";

const USAGE = `usage:
  deno task sign-key-set new-root --out root.pem
  deno task sign-key-set public --root root.pem
  deno task sign-key-set sign --root root.pem --key-set FILE|URL [--days N] [--out FILE]`;

/** The raw public key (base64url) and key id of a private key. */
function publicHalf(key: KeyObject): { publicKey: string; kid: string } {
  const publicKey = createPublicKey(key).export({ format: "jwk" }).x as string;
  return { publicKey, kid: kidOf(publicKey) };
}

async function readRoot(path: string | undefined): Promise<KeyObject> {
  if (!path) throw new UsageError("--root FILE is needed");
  return await readEd25519Key(path);
}

export async function run(args: string[]): Promise<string> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      root: { type: "string" },
      "key-set": { type: "string" },
      days: { type: "string" },
    },
  });
  const [command] = positionals;
  if (command === "new-root") {
    if (!values.out) throw new UsageError("--out FILE is needed");
    const out = outsideCheckout(values.out, "--out");
    const { privateKey } = generateKeyPairSync("ed25519");
    const file = await createPrivateFile(out);
    try {
      const pem = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
      await file.write(new TextEncoder().encode(pem));
    } finally {
      file.close();
    }
    const { publicKey, kid } = publicHalf(privateKey);
    return `root key written to ${out} (keep it off the server)\n` +
      `root public key (pin it with --pin-root): ${publicKey}\nroot key id: ${kid}`;
  }
  if (command === "public") {
    const { publicKey, kid } = publicHalf(await readRoot(values.root));
    return `root public key: ${publicKey}\nroot key id: ${kid}`;
  }
  if (command === "sign") {
    const rootKey = await readRoot(values.root);
    if (!values["key-set"]) throw new UsageError("--key-set FILE|URL is needed");
    const days = values.days === undefined ? 90 : Number(values.days);
    if (!Number.isFinite(days) || days <= 0 || days > 3660) {
      throw new UsageError("--days must be a number of days from 1 to 3660");
    }
    const document = signRootDocument({
      keys: await readKeySet(values["key-set"]),
      rootKey,
      rootKid: publicHalf(rootKey).kid,
      days,
    });
    const text = JSON.stringify(document, null, 2) + "\n";
    if (!values.out) return text.trimEnd();
    const out = callerPath(values.out);
    await Deno.writeTextFile(out, text);
    return `root document written to ${out}: paste it on the Signing keys page`;
  }
  throw new UsageError(command ? `unknown command "${command}"` : "missing command");
}

if (import.meta.main) await runCliMain(() => run(Deno.args), USAGE);
