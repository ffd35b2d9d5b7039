/**
 * Settings (../shared/spec/admin-contract.md "Operator settings (environment variables)"): defaults,
 * parsing, and the refusal to start.
 */
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../src/lib/config.ts";

function assertRejected(env: Record<string, string>, setting: string) {
  assert.throws(
    () => loadConfig(env),
    (error) => {
      assert.ok(error instanceof ConfigError, `expected ConfigError, got ${error}`);
      assert.equal(error.setting, setting);
      assert.match(error.message, new RegExp(`\\b${setting}\\b`));
      return true;
    },
    `${JSON.stringify(env)} must be refused`,
  );
}

Deno.test("every setting has the contract's default", () => {
  const config = loadConfig({});
  assert.equal(config.port, 8000);
  assert.equal(config.host, "0.0.0.0");
  assert.equal(config.dataDir, "./data");
  assert.equal(config.kvPath, "data/kv.sqlite3");
  assert.equal(config.artifactsDir, "data/artifacts");
  assert.equal(config.baseUrl, "http://localhost:8000");
  assert.equal(config.https, false);
  assert.equal(config.serviceName, "Update Distribution Service");
  assert.equal(config.serviceRealm, "update-distribution");
  assert.equal(config.rateLimitPerMinute, 120);
  assert.equal(config.rateLimitBurst, 60);
  assert.equal(config.rateLimitStore, "memory");
  assert.equal(config.maxUploadBytes, 4294967296);
  assert.equal(config.adminUsername, "admin");
  assert.equal(config.adminPassword, undefined);
  assert.equal(config.trustProxy, false);
});

Deno.test("empty or blank values count as unset", () => {
  const config = loadConfig({ APP_PORT: "", APP_SERVICE_NAME: "   ", APP_TRUST_PROXY: "" });
  assert.equal(config.port, 8000);
  assert.equal(config.serviceName, "Update Distribution Service");
  assert.equal(config.trustProxy, false);
});

Deno.test("APP_PORT: a port number, 0 to 65535", async (t) => {
  await t.step("valid values are read", () => {
    assert.equal(loadConfig({ APP_PORT: "9090" }).port, 9090);
    assert.equal(loadConfig({ APP_PORT: "0" }).port, 0);
    assert.equal(loadConfig({ APP_PORT: " 65535 " }).port, 65535);
  });
  await t.step("the default base URL follows the port", () => {
    assert.equal(loadConfig({ APP_PORT: "9090" }).baseUrl, "http://localhost:9090");
  });
  for (const bad of ["abc", "-1", "65536", "80.5", "1e3", "0x50"]) {
    await t.step(`"${bad}" is refused`, () => assertRejected({ APP_PORT: bad }, "APP_PORT"));
  }
});

Deno.test("APP_HOST: the listen address", () => {
  assert.equal(loadConfig({ APP_HOST: "127.0.0.1" }).host, "127.0.0.1");
});

Deno.test("APP_DATA_DIR: root of the KV file and artifacts/", () => {
  const config = loadConfig({ APP_DATA_DIR: "/var/lib/uds" });
  assert.equal(config.dataDir, "/var/lib/uds");
  assert.equal(config.kvPath, "/var/lib/uds/kv.sqlite3");
  assert.equal(config.artifactsDir, "/var/lib/uds/artifacts");
});

Deno.test("APP_KV_PATH: a file path or an http(s):// KV Connect URL", async (t) => {
  await t.step("a file path is kept", () => {
    assert.equal(loadConfig({ APP_KV_PATH: "/tmp/other.sqlite3" }).kvPath, "/tmp/other.sqlite3");
  });
  await t.step("an https:// URL is kept", () => {
    const url = "https://api.deno.com/databases/abc/connect";
    assert.equal(loadConfig({ APP_KV_PATH: url }).kvPath, url);
  });
  await t.step("artifacts stay under APP_DATA_DIR", () => {
    const config = loadConfig({ APP_KV_PATH: "/tmp/kv", APP_DATA_DIR: "/srv" });
    assert.equal(config.artifactsDir, "/srv/artifacts");
  });
  for (const bad of ["ftp://example.com/kv", "redis://localhost"]) {
    await t.step(`"${bad}" is refused`, () => assertRejected({ APP_KV_PATH: bad }, "APP_KV_PATH"));
  }
});

Deno.test("APP_BASE_URL: an absolute http(s) URL; https:// turns on HSTS", async (t) => {
  await t.step("http:// leaves HSTS off", () => {
    const config = loadConfig({ APP_BASE_URL: "http://updates.example.com" });
    assert.equal(config.baseUrl, "http://updates.example.com");
    assert.equal(config.https, false);
  });
  await t.step("https:// turns HSTS on; a trailing slash is dropped", () => {
    const config = loadConfig({ APP_BASE_URL: "https://updates.example.com/" });
    assert.equal(config.baseUrl, "https://updates.example.com");
    assert.equal(config.https, true);
  });
  for (const bad of ["not a url", "updates.example.com", "ftp://example.com", "/relative"]) {
    await t.step(
      `"${bad}" is refused`,
      () => assertRejected({ APP_BASE_URL: bad }, "APP_BASE_URL"),
    );
  }
});

Deno.test("APP_SERVICE_NAME: the service field", () => {
  assert.equal(loadConfig({ APP_SERVICE_NAME: "Acme Updates" }).serviceName, "Acme Updates");
});

Deno.test("APP_SERVICE_REALM: the WWW-Authenticate realm, safe inside quotes", async (t) => {
  await t.step("a plain realm is read", () => {
    assert.equal(loadConfig({ APP_SERVICE_REALM: "acme" }).serviceRealm, "acme");
  });
  for (const bad of ['ac"me', "ac\\me", "ac\u0001me"]) {
    await t.step(`${JSON.stringify(bad)} is refused`, () => {
      assertRejected({ APP_SERVICE_REALM: bad }, "APP_SERVICE_REALM");
    });
  }
});

for (
  const [setting, field] of [
    ["APP_CLIENT_RATE_LIMIT_PER_MINUTE", "rateLimitPerMinute"],
    ["APP_CLIENT_RATE_LIMIT_BURST", "rateLimitBurst"],
  ] as const
) {
  Deno.test(`${setting}: a positive whole number`, async (t) => {
    await t.step("a valid value is read", () => {
      assert.equal(loadConfig({ [setting]: "600" })[field], 600);
    });
    for (const bad of ["-5", "0", "ten", "1.5", "99999999999999999999"]) {
      await t.step(`"${bad}" is refused`, () => assertRejected({ [setting]: bad }, setting));
    }
  });
}

Deno.test("APP_MAX_UPLOAD_BYTES: a positive whole number of bytes", async (t) => {
  await t.step("a valid value is read", () => {
    assert.equal(loadConfig({ APP_MAX_UPLOAD_BYTES: "1048576" }).maxUploadBytes, 1048576);
  });
  for (const bad of ["0", "-1", "1GB", "4.5"]) {
    await t.step(`"${bad}" is refused`, () => {
      assertRejected({ APP_MAX_UPLOAD_BYTES: bad }, "APP_MAX_UPLOAD_BYTES");
    });
  }
});

Deno.test("APP_ADMIN_USERNAME and APP_ADMIN_PASSWORD: the first admin account", () => {
  const config = loadConfig({ APP_ADMIN_USERNAME: "root", APP_ADMIN_PASSWORD: " s3cret " });
  assert.equal(config.adminUsername, "root");
  // A password is taken as typed: surrounding spaces are part of it.
  assert.equal(config.adminPassword, " s3cret ");
});

Deno.test("APP_TRUST_PROXY: true or false", async (t) => {
  for (const yes of ["true", "TRUE", "1", "yes", "on"]) {
    await t.step(`"${yes}" is true`, () => {
      assert.equal(loadConfig({ APP_TRUST_PROXY: yes }).trustProxy, true);
    });
  }
  for (const no of ["false", "0", "no", "off"]) {
    await t.step(`"${no}" is false`, () => {
      assert.equal(loadConfig({ APP_TRUST_PROXY: no }).trustProxy, false);
    });
  }
  await t.step(`"maybe" is refused`, () => {
    assertRejected({ APP_TRUST_PROXY: "maybe" }, "APP_TRUST_PROXY");
  });
});

Deno.test("APP_RATE_LIMIT_STORE: memory or kv", async (t) => {
  await t.step("kv is read", () => {
    assert.equal(loadConfig({ APP_RATE_LIMIT_STORE: "kv" }).rateLimitStore, "kv");
  });
  await t.step(`"redis" is refused`, () => {
    assertRejected({ APP_RATE_LIMIT_STORE: "redis" }, "APP_RATE_LIMIT_STORE");
  });
});

Deno.test("the settings are read from the process environment by default", () => {
  const previous = Deno.env.get("APP_SERVICE_NAME");
  Deno.env.set("APP_SERVICE_NAME", "From The Environment");
  try {
    assert.equal(loadConfig().serviceName, "From The Environment");
  } finally {
    if (previous === undefined) Deno.env.delete("APP_SERVICE_NAME");
    else Deno.env.set("APP_SERVICE_NAME", previous);
  }
});

Deno.test("an invalid setting stops `deno task start` with a message naming it", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "start"],
    cwd: new URL("..", import.meta.url).pathname,
    env: { APP_CLIENT_RATE_LIMIT_BURST: "-3", APP_PORT: "0", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 1);
  assert.match(stderr, /cannot start: invalid setting APP_CLIENT_RATE_LIMIT_BURST/);
  assert.doesNotMatch(stderr, /\n\s+at /, "no stack trace");
});
