/**
 * `Location` values that can only point at this service. A path that starts
 * with `//` (or `/\`, which browsers read the same way) is a network-path
 * reference: `//evil.example/x` sends the browser to another host. A request
 * such as `GET /admin/..//evil.example/` normalises to exactly that path, so
 * a redirect built from a request's path goes through `sameSitePath`.
 */

/** `path` with any run of leading `/` and `\` collapsed to one `/` ("" becomes "/"). */
export function sameSitePath(path: string): string {
  return path.replace(/^[/\\]*/, "/");
}
