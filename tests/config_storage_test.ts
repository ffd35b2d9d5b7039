/** Storage and download settings: APP_STORAGE, APP_S3_*, APP_DOWNLOAD_MODE and friends. */
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../src/lib/config.ts";

const S3 = { APP_STORAGE: "s3", APP_S3_BUCKET: "artifacts" };

Deno.test("storage settings: defaults are fs and stream", () => {
  const config = loadConfig({});
  assert.equal(config.storage, "fs");
  assert.equal(config.s3, undefined);
  assert.equal(config.downloadMode, "stream");
  assert.equal(config.downloadUrlTtlSeconds, 60);
  assert.equal(config.xAccelPrefix, "/_uds_artifacts/");
  assert.equal(config.xAccelSecret, undefined);
  assert.equal(config.fsSweepAfterSeconds, 600);
  assert.equal(loadConfig({ APP_FS_SWEEP_AFTER_SECONDS: "0" }).fsSweepAfterSeconds, 0);
});

Deno.test("storage settings: x-accel needs the secret nginx sends", () => {
  const secret = "0123456789abcdef0123";
  const config = loadConfig({ APP_DOWNLOAD_MODE: "x-accel", APP_X_ACCEL_SECRET: secret });
  assert.equal(config.xAccelSecret, secret);
  // Not x-accel: the secret is not used.
  assert.equal(loadConfig({ APP_X_ACCEL_SECRET: secret }).xAccelSecret, undefined);
});

Deno.test("storage settings: s3 with its defaults and every APP_S3_* setting", () => {
  assert.deepEqual(loadConfig(S3).s3, {
    endpoint: undefined,
    region: "us-east-1",
    bucket: "artifacts",
    prefix: "",
    accessKeyId: undefined,
    secretAccessKey: undefined,
    forcePathStyle: false,
    sweepAfterSeconds: 86_400,
    timeoutSeconds: 10,
  });
  const config = loadConfig({
    ...S3,
    APP_S3_ENDPOINT: "http://127.0.0.1:7480/",
    APP_S3_REGION: "eu-central-1",
    APP_S3_PREFIX: "uds",
    APP_S3_ACCESS_KEY_ID: "AKID",
    APP_S3_SECRET_ACCESS_KEY: "secret",
    APP_S3_FORCE_PATH_STYLE: "true",
    APP_S3_SWEEP_AFTER_SECONDS: "600",
    APP_S3_TIMEOUT_SECONDS: "3",
    APP_DOWNLOAD_MODE: "redirect",
    APP_DOWNLOAD_URL_TTL_SECONDS: "300",
  });
  assert.deepEqual(config.s3, {
    endpoint: "http://127.0.0.1:7480",
    region: "eu-central-1",
    bucket: "artifacts",
    prefix: "uds/",
    accessKeyId: "AKID",
    secretAccessKey: "secret",
    forcePathStyle: true,
    sweepAfterSeconds: 600,
    timeoutSeconds: 3,
  });
  assert.equal(config.downloadMode, "redirect");
  assert.equal(config.downloadUrlTtlSeconds, 300);
});

Deno.test("storage settings: wrong combinations name the setting", () => {
  const refused: Array<[Record<string, string>, string, RegExp]> = [
    [{ APP_STORAGE: "disk" }, "APP_STORAGE", /fs, s3/],
    [{ APP_STORAGE: "s3" }, "APP_S3_BUCKET", /required/],
    [{ ...S3, APP_S3_ENDPOINT: "minio:9000" }, "APP_S3_ENDPOINT", /http:\/\/ or https:\/\//],
    [{ ...S3, APP_S3_ACCESS_KEY_ID: "AKID" }, "APP_S3_SECRET_ACCESS_KEY", /both/],
    [{ ...S3, APP_S3_PREFIX: "/abs" }, "APP_S3_PREFIX", /leading/],
    [{ ...S3, APP_S3_FORCE_PATH_STYLE: "maybe" }, "APP_S3_FORCE_PATH_STYLE", /true or false/],
    [{ APP_DOWNLOAD_MODE: "redirect" }, "APP_DOWNLOAD_MODE", /APP_STORAGE=s3/],
    [{ ...S3, APP_DOWNLOAD_MODE: "x-accel" }, "APP_DOWNLOAD_MODE", /APP_STORAGE=fs/],
    [{ APP_DOWNLOAD_MODE: "sendfile" }, "APP_DOWNLOAD_MODE", /stream, redirect, x-accel/],
    [{ APP_DOWNLOAD_URL_TTL_SECONDS: "0" }, "APP_DOWNLOAD_URL_TTL_SECONDS", /1 to 604800/],
    [{ APP_X_ACCEL_PREFIX: "files/" }, "APP_X_ACCEL_PREFIX", /starts and ends with \//],
    [{ APP_X_ACCEL_PREFIX: "/a b/" }, "APP_X_ACCEL_PREFIX", /starts and ends/],
    [{ APP_DOWNLOAD_MODE: "x-accel" }, "APP_X_ACCEL_SECRET", /required .*X-Accel-Secret/],
    [
      { APP_DOWNLOAD_MODE: "x-accel", APP_X_ACCEL_SECRET: "short" },
      "APP_X_ACCEL_SECRET",
      /at least 16/,
    ],
    [{ APP_FS_SWEEP_AFTER_SECONDS: "-1" }, "APP_FS_SWEEP_AFTER_SECONDS", /whole number/],
  ];
  for (const [env, setting, message] of refused) {
    assert.throws(() => loadConfig(env), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.setting, setting, JSON.stringify(env));
      assert.match(error.message, message);
      return true;
    });
  }
  assert.equal(
    loadConfig({ APP_X_ACCEL_PREFIX: "/internal/files/" }).xAccelPrefix,
    "/internal/files/",
  );
});
