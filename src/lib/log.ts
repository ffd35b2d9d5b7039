/**
 * Log lines on stdout: one access line per request and a few service events
 * (start, stop), as one JSON object per line (`APP_LOG_FORMAT=json`, the
 * default) or as plain text for a human at a terminal (`text`).
 *
 * Secrets never reach this module: callers pass the key *id*, never the key;
 * the path is logged without its query string; headers other than the
 * User-Agent, cookies and bodies are never logged.
 */
import type { LogFormat } from "./config.ts";
import { redactUrlCredential } from "./url_credential_path.ts";

export interface AccessLogRecord {
  /** When the request arrived (RFC 3339, UTC). */
  time: string;
  method: string;
  /** The request path as sent (percent-encoded), without the query string. */
  path: string;
  status: number;
  /** Until the last body byte was handed to the connection (for downloads: the whole transfer). */
  duration_ms: number;
  /** Response body bytes sent. */
  bytes: number;
  client: string;
  key_id?: number;
  release_id?: number;
  user_agent?: string;
  /** Present when the client went away before the body was fully sent. */
  aborted?: true;
}

/**
 * What the request observer hands the logger for each request: the values as
 * they are, made into a line at once (`jsonAccessLine`, or `accessLogRecord`
 * then `formatAccessLine`).
 */
export interface AccessEntry {
  /** `Date.now()` when the request arrived. */
  startedMs: number;
  method: string;
  /** The full request URL; the line keeps its path only. */
  url: string;
  status: number;
  durationMs: number;
  bytes: number;
  client: string;
  keyId: number | undefined;
  releaseId: number | undefined;
  userAgent: string | undefined;
  aborted: boolean;
}

const MAX_USER_AGENT = 256;

/** The fields of an access line, in their order. */
export function accessLogRecord(entry: AccessEntry): AccessLogRecord {
  const record: AccessLogRecord = {
    time: new Date(entry.startedMs).toISOString(),
    method: entry.method,
    path: redactUrlCredential(rawPath(entry.url)),
    status: entry.status,
    duration_ms: Math.round(entry.durationMs * 1000) / 1000,
    bytes: entry.bytes,
    client: entry.client,
  };
  if (entry.keyId !== undefined) record.key_id = entry.keyId;
  if (entry.releaseId !== undefined) record.release_id = entry.releaseId;
  if (entry.userAgent) record.user_agent = entry.userAgent.slice(0, MAX_USER_AGENT);
  if (entry.aborted) record.aborted = true;
  return record;
}

/**
 * Remembered JSON texts: each map at most `MAX_REMEMBERED_JSON` (then it
 * starts over), and only of texts up to `MAX_REMEMBERED_CHARS` (so odd long
 * URLs cannot fill memory).
 */
const MAX_REMEMBERED_JSON = 1024;
const MAX_REMEMBERED_CHARS = 512;

/**
 * Makes `JSON.stringify(accessLogRecord(entry))`, the same text made without
 * the intermediate object (it runs for every request). The JSON of the path,
 * address and User-Agent is remembered, in maps this function owns: a busy
 * server sees the same few.
 */
export function createJsonAccessLine(): (entry: AccessEntry) => string {
  const methodJson = new Map<string, string>();
  const pathJsonByUrl = new Map<string, string>();
  const clientJson = new Map<string, string>();
  const userAgentJson = new Map<string, string>();
  const isoTime = createIsoClock();

  const remember = (map: Map<string, string>, text: string, json: string): string => {
    if (text.length > MAX_REMEMBERED_CHARS) return json;
    if (map.size >= MAX_REMEMBERED_JSON) map.clear();
    map.set(text, json);
    return json;
  };
  /** `JSON.stringify(text.slice(0, maxLength))`, remembered in `map`. */
  const jsonOf = (map: Map<string, string>, text: string, maxLength = Infinity): string =>
    map.get(text) ?? remember(map, text, JSON.stringify(text.slice(0, maxLength)));
  /** `JSON.stringify` of the logged path (credential redacted), remembered per URL. */
  const pathJson = (url: string): string =>
    pathJsonByUrl.get(url) ??
      remember(pathJsonByUrl, url, JSON.stringify(redactUrlCredential(rawPath(url))));

  return (entry) => {
    let line =
      `{"time":"${isoTime(entry.startedMs)}","method":${jsonOf(methodJson, entry.method)},"path":${
        pathJson(entry.url)
      },"status":${entry.status}` +
      `,"duration_ms":${Math.round(entry.durationMs * 1000) / 1000},"bytes":${entry.bytes}` +
      `,"client":${jsonOf(clientJson, entry.client)}`;
    if (entry.keyId !== undefined) line += `,"key_id":${entry.keyId}`;
    if (entry.releaseId !== undefined) line += `,"release_id":${entry.releaseId}`;
    if (entry.userAgent) {
      line += `,"user_agent":${jsonOf(userAgentJson, entry.userAgent, MAX_USER_AGENT)}`;
    }
    if (entry.aborted) line += `,"aborted":true`;
    return line + "}";
  };
}

/** `new Date(ms).toISOString()`, made once per millisecond (a busy server logs many in one). */
function createIsoClock(): (ms: number) => string {
  let isoMs = NaN;
  let isoText = "";
  return (ms) => {
    if (ms !== isoMs) {
      isoMs = ms;
      isoText = new Date(ms).toISOString();
    }
    return isoText;
  };
}

/** The path part of a request URL exactly as sent: still percent-encoded, no query string. */
export function rawPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}

export type EventLevel = "info" | "warn" | "error";
type EventFields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  access(entry: AccessEntry): void;
  /** A service event for operators. Never pass a secret in `fields`. */
  event(level: EventLevel, message: string, fields?: EventFields): void;
}

/** A logger handing each line, made as it happens, to `writeLine` (e.g. a `LineWriter`'s `write`). */
export function createLogger(format: LogFormat, writeLine: (line: string) => void): Logger {
  const accessLine = format === "json"
    ? createJsonAccessLine()
    : (entry: AccessEntry) => formatAccessLine(accessLogRecord(entry), format);
  return {
    access: (entry) => writeLine(accessLine(entry)),
    event: (level, message, fields = {}) =>
      writeLine(
        formatEventLine({ time: new Date().toISOString(), level, message, fields }, format),
      ),
  };
}

export function formatAccessLine(record: AccessLogRecord, format: LogFormat): string {
  if (format === "json") return JSON.stringify(record);
  const parts = [
    record.time,
    record.client,
    record.method,
    record.path,
    String(record.status),
    `${record.bytes}B`,
    `${record.duration_ms}ms`,
  ];
  if (record.key_id !== undefined) parts.push(`key=${record.key_id}`);
  if (record.release_id !== undefined) parts.push(`release=${record.release_id}`);
  if (record.aborted) parts.push("aborted");
  if (record.user_agent !== undefined) parts.push(JSON.stringify(record.user_agent));
  return parts.join(" ");
}

/** One service event, for `formatEventLine`. */
export interface EventRecord {
  time: string;
  level: EventLevel;
  message: string;
  fields: EventFields;
}

export function formatEventLine(
  { time, level, message, fields }: EventRecord,
  format: LogFormat,
): string {
  if (format === "json") return JSON.stringify({ time, level, msg: message, ...fields });
  const extra = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}=${typeof value === "string" ? JSON.stringify(value) : value}`);
  return [time, level.toUpperCase(), message, ...extra].join(" ");
}

/** How long a log line may wait for others to be written with it. */
const FLUSH_DELAY_MS = 25;

export interface LineWriter {
  write(line: string): void;
  /** Writes out whatever is buffered; call before the process exits. */
  flush(): void;
}

/**
 * Encodes each line into one buffer as it comes and writes the buffer in one
 * batch at most `FLUSH_DELAY_MS` after its first line (or sooner when it is
 * full), so a busy server makes one write per batch instead of one blocking
 * write (and one timer) per request. Nothing of a request outlives its line:
 * entries kept until the batch was written lived through young-generation
 * garbage collections and cost the hot path more than making the line at once.
 */
export function createBufferedWriter(
  out: { writeSync(bytes: Uint8Array): number } = Deno.stdout,
  bufferBytes = 64 * 1024,
): LineWriter {
  const encoder = new TextEncoder();
  const buffer = new Uint8Array(bufferBytes);
  let used = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function writeAll(bytes: Uint8Array): void {
    try {
      for (let written = 0; written < bytes.byteLength;) {
        written += out.writeSync(bytes.subarray(written));
      }
    } catch {
      // A closed or broken stdout must not take the service down; the lines are lost.
    }
  }

  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (used === 0) return;
    const batch = buffer.subarray(0, used);
    used = 0;
    writeAll(batch);
  }

  return {
    write(line) {
      // UTF-8 takes at most 3 bytes per UTF-16 code unit, plus the newline.
      const mostBytes = line.length * 3 + 1;
      if (mostBytes > bufferBytes - used) {
        flush();
        if (mostBytes > bufferBytes) return writeAll(encoder.encode(line + "\n"));
      }
      used += encoder.encodeInto(line, buffer.subarray(used)).written;
      buffer[used++] = 0x0a;
      timer ??= setTimeout(flush, FLUSH_DELAY_MS);
    },
    flush,
  };
}
