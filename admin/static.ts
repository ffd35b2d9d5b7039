/**
 * The stylesheet and script of the admin UI, served by the app itself (no CDN,
 * and the Content-Security-Policy allows scripts and styles from 'self' only).
 * Files are read once at start; their URLs carry a content hash, so browsers
 * may cache them for good. The route that serves them is static_route.ts.
 */
import { createHash } from "node:crypto";

interface Asset {
  body: string;
  type: string;
  version: string;
}

function load(name: string, type: string): Asset {
  const body = Deno.readTextFileSync(new URL(`./static/${name}`, import.meta.url));
  const version = createHash("sha256").update(body).digest("hex").slice(0, 12);
  return { body, type, version };
}

const ASSETS: ReadonlyMap<string, Asset> = new Map<string, Asset>([
  ["style.css", load("style.css", "text/css; charset=utf-8")],
  ["admin.js", load("admin.js", "text/javascript; charset=utf-8")],
  ["favicon.svg", load("favicon.svg", "image/svg+xml")],
]);

/** The versioned URL of an asset, e.g. `/admin/static/style.css?v=1a2b3c4d5e6f`. */
export function assetUrl(name: "style.css" | "admin.js" | "favicon.svg"): string {
  return `/admin/static/${name}?v=${ASSETS.get(name)!.version}`;
}

/** The asset `name` names, if there is one. */
export function findAsset(name: string): Asset | undefined {
  return ASSETS.get(name);
}
