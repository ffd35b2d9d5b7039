/**
 * Headers on every admin response, on top of the global security headers:
 * a Content-Security-Policy that allows scripts and styles only from this
 * service (no inline code), and no caching of pages that show private data.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

export const ADMIN_RESPONSE_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "cache-control": "no-store",
  "x-robots-tag": "noindex, nofollow",
};
