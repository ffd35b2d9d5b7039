/** The route of the admin UI's stylesheet, script and icon (static.ts). */
import type { Hono } from "hono";
import { pageNotFound } from "./errors.tsx";
import { findAsset } from "./static.ts";
import type { AdminEnv } from "./types.ts";

export function addStaticRoutes(admin: Hono<AdminEnv>): void {
  admin.get("/static/:name", (c) => {
    const asset = findAsset(c.req.param("name"));
    if (asset === undefined) throw pageNotFound();
    const cacheControl = c.req.query("v") === asset.version
      ? "public, max-age=31536000, immutable"
      : "no-cache";
    return c.body(asset.body, 200, { "content-type": asset.type, "cache-control": cacheControl });
  });
}
