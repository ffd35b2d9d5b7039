/**
 * Parsing of MIME header blocks and `type; name=value` header parameters
 * (Content-Type, Content-Disposition), as multipart parts and requests send them.
 */
export function parseHeaderBlock(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of block.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  return headers;
}

/**
 * Splits `type; a=1; b="x;y"` into "type" and [["a","1"], ["b","x;y"]]. Quoted
 * values may escape `"` and `\` with a backslash; any other backslash is kept
 * (old browsers send Windows paths unescaped).
 */
export function splitParams(header: string): { type: string; params: Array<[string, string]> } {
  const semicolon = header.indexOf(";");
  const type = (semicolon < 0 ? header : header.slice(0, semicolon)).trim();
  const params: Array<[string, string]> = [];
  let i = semicolon < 0 ? header.length : semicolon + 1;
  while (i < header.length) {
    while (i < header.length && /[\s;]/.test(header[i])) i++;
    const eq = header.indexOf("=", i);
    if (eq < 0) break;
    const name = header.slice(i, eq).trim().toLowerCase();
    i = eq + 1;
    while (i < header.length && /[ \t]/.test(header[i])) i++;
    let value = "";
    if (header[i] === '"') {
      i++;
      while (i < header.length && header[i] !== '"') {
        if (header[i] === "\\" && (header[i + 1] === '"' || header[i + 1] === "\\")) i++;
        value += header[i++];
      }
      i++;
    } else {
      const end = header.indexOf(";", i);
      value = header.slice(i, end < 0 ? header.length : end).trim();
      i = end < 0 ? header.length : end;
    }
    params.push([name, value]);
  }
  return { type, params };
}

export function paramValue(params: Array<[string, string]>, name: string): string | undefined {
  return params.find(([key]) => key === name)?.[1];
}

/** `filename*=UTF-8''…` (RFC 5987) wins over `filename` when both are sent. */
export function filenameOf(params: Array<[string, string]>): string | undefined {
  const extended = paramValue(params, "filename*");
  if (extended !== undefined) {
    const match = /^utf-8'[^']*'(.*)$/i.exec(extended);
    if (match) {
      try {
        return decodeURIComponent(match[1]);
      } catch {
        // fall back to the plain parameter
      }
    }
  }
  return paramValue(params, "filename");
}
