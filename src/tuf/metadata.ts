/**
 * TUF metadata (docs/tuf.md), built and signed with `@tufjs/models`: the
 * root the operator signs off the server (tools/tuf_root.ts), and the
 * targets, snapshot and timestamp the service signs with its online keys.
 * Keys are Ed25519, scheme `ed25519`, the public key hex in `keyval.public`;
 * a key id is the SHA-256 of the key's canonical JSON, as the TUF
 * specification says. Pure functions of their input (and `node:crypto`).
 */
import { Buffer } from "node:buffer";
import { createHash, type KeyObject, sign } from "node:crypto";
import {
  Key,
  Metadata,
  MetadataKind,
  MetaFile,
  Root,
  Signature,
  Snapshot,
  TargetFile,
  Targets,
  Timestamp,
} from "@tufjs/models";

/** The version of the TUF specification the metadata follows. */
const SPEC_VERSION = "1.0.31";

/** A key that signs metadata: its TUF key id and private key. */
export interface TufSigner {
  keyId: string;
  key: KeyObject;
}

/** The TUF key of a raw Ed25519 public key (base64url, as the key set and root tool print it). */
export function tufKeyOf(publicKeyBase64url: string): Key {
  const hex = Buffer.from(publicKeyBase64url, "base64url").toString("hex");
  // The canonical JSON of {"keytype", "keyval": {"public"}, "scheme"}: keys sorted, no spaces.
  const canonical = `{"keytype":"ed25519","keyval":{"public":"${hex}"},"scheme":"ed25519"}`;
  return new Key({
    keyID: createHash("sha256").update(canonical).digest("hex"),
    keyType: "ed25519",
    scheme: "ed25519",
    keyVal: { public: hex },
  });
}

/** The base64url public key of a TUF Ed25519 key (for display and matching signing keys). */
export function publicKeyOf(key: Key): string {
  return Buffer.from(key.keyVal.public ?? "", "hex").toString("base64url");
}

/** Adds a signature of each signer (Ed25519 over the canonical JSON of `signed`). */
export function signWith<T extends Root | Targets | Snapshot | Timestamp>(
  metadata: Metadata<T>,
  signers: readonly TufSigner[],
): Metadata<T> {
  for (const signer of signers) {
    metadata.sign(
      (data) =>
        new Signature({ keyID: signer.keyId, sig: sign(null, data, signer.key).toString("hex") }),
      true,
    );
  }
  return metadata;
}

/** The metadata as the JSON text that is stored and served. */
export function metadataText(metadata: Metadata<Root | Targets | Snapshot | Timestamp>): string {
  return JSON.stringify(metadata.toJSON());
}

/** TUF's expiry format: RFC 3339 in UTC without fractions. */
export function tufTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** A new, unsigned root version: the root role's keys and threshold, and the online keys. */
export function buildRoot(options: {
  version: number;
  expiresMs: number;
  rootKeys: readonly string[];
  rootThreshold: number;
  onlineKeys: readonly string[];
}): Metadata<Root> {
  const rootKeys = options.rootKeys.map(tufKeyOf);
  const onlineKeys = options.onlineKeys.map(tufKeyOf);
  const keys: Record<string, unknown> = {};
  for (const key of [...rootKeys, ...onlineKeys]) keys[key.keyID] = key.toJSON();
  const onlineRole = { keyids: onlineKeys.map((k) => k.keyID), threshold: 1 };
  // Built from its JSON form: the package exports no Role class to build the roles with.
  return new Metadata(Root.fromJSON(
    {
      _type: "root",
      version: options.version,
      spec_version: SPEC_VERSION,
      expires: tufTime(options.expiresMs),
      consistent_snapshot: true,
      keys,
      roles: {
        root: { keyids: rootKeys.map((k) => k.keyID), threshold: options.rootThreshold },
        targets: onlineRole,
        snapshot: onlineRole,
        timestamp: onlineRole,
      },
    } as Parameters<typeof Root.fromJSON>[0],
  ));
}

/** A root version parsed from its JSON text; throws with a message when it is not one. */
export function parseRoot(text: string): Metadata<Root> {
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error("it is not JSON");
  }
  try {
    return Metadata.fromJSON(MetadataKind.Root, json);
  } catch (error) {
    throw new Error(`it is not TUF root metadata (${(error as Error).message})`);
  }
}

/** One release as a target: its path, length, hashes and the custom fields clients read. */
export interface TargetEntry {
  path: string;
  length: number;
  sha256: string;
  /** Hex. */
  sha512: string;
  custom: { version: string; build: string; release_id: number; created_at: string };
}

export function buildTargets(
  options: { version: number; expiresMs: number; entries: readonly TargetEntry[] },
): Metadata<Targets> {
  const targets: Record<string, TargetFile> = {};
  for (const entry of options.entries) {
    targets[entry.path] = new TargetFile({
      path: entry.path,
      length: entry.length,
      // sha256 first: with consistent snapshots, clients fetch `<first hash>.<name>`.
      hashes: { sha256: entry.sha256, sha512: entry.sha512 },
      unrecognizedFields: { custom: { ...entry.custom } },
    });
  }
  return new Metadata(
    new Targets({
      version: options.version,
      specVersion: SPEC_VERSION,
      expires: tufTime(options.expiresMs),
      targets,
    }),
  );
}

export function buildSnapshot(
  options: { version: number; expiresMs: number; targetsVersion: number },
): Metadata<Snapshot> {
  return new Metadata(
    new Snapshot({
      version: options.version,
      specVersion: SPEC_VERSION,
      expires: tufTime(options.expiresMs),
      meta: { "targets.json": new MetaFile({ version: options.targetsVersion }) },
    }),
  );
}

export function buildTimestamp(
  options: { version: number; expiresMs: number; snapshotVersion: number; snapshotText: string },
): Metadata<Timestamp> {
  const bytes = new TextEncoder().encode(options.snapshotText);
  return new Metadata(
    new Timestamp({
      version: options.version,
      specVersion: SPEC_VERSION,
      expires: tufTime(options.expiresMs),
      snapshotMeta: new MetaFile({
        version: options.snapshotVersion,
        length: bytes.length,
        hashes: { sha256: createHash("sha256").update(bytes).digest("hex") },
      }),
    }),
  );
}
