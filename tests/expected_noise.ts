/**
 * What test servers pass when they drop a download on purpose. Deno.serve logs
 * the reason of a failed response body; an Error would print as "Error: …"
 * with a stack trace and read like a failure in the test log, while this plain
 * string prints as the one-line note it is.
 */
export const EXPECTED_DROP = "(expected in this test) the server drops the connection here";
