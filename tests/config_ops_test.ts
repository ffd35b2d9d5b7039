import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../src/lib/config.ts";

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error;
  }
  assert.fail(`expected a ConfigError for ${JSON.stringify(env)}`);
}

Deno.test("operations settings", async (t) => {
  await t.step("defaults: metrics off, JSON logs, 30 s to drain", () => {
    const config = loadConfig({});
    assert.equal(config.metricsToken, undefined);
    assert.equal(config.metricsAddress, undefined);
    assert.equal(config.logFormat, "json");
    assert.equal(config.shutdownTimeoutSeconds, 30);
  });

  await t.step("values are read", () => {
    const config = loadConfig({
      APP_METRICS_TOKEN: "a-long-enough-token",
      APP_METRICS_ADDRESS: "127.0.0.1:9464",
      APP_LOG_FORMAT: "text",
      APP_SHUTDOWN_TIMEOUT_SECONDS: "5",
    });
    assert.equal(config.metricsToken, "a-long-enough-token");
    assert.deepEqual(config.metricsAddress, { hostname: "127.0.0.1", port: 9464 });
    assert.equal(config.logFormat, "text");
    assert.equal(config.shutdownTimeoutSeconds, 5);
  });

  await t.step("metrics address forms", () => {
    const address = (value: string) => loadConfig({ APP_METRICS_ADDRESS: value }).metricsAddress;
    assert.deepEqual(address(":9464"), { hostname: "0.0.0.0", port: 9464 });
    assert.deepEqual(address("[::1]:9464"), { hostname: "::1", port: 9464 });
    assert.deepEqual(address("metrics.internal:9100"), {
      hostname: "metrics.internal",
      port: 9100,
    });
  });

  await t.step("invalid values stop the start, naming the setting", () => {
    for (
      const [name, value] of [
        ["APP_METRICS_TOKEN", "short"],
        ["APP_METRICS_TOKEN", "has a space in it, long enough"],
        ["APP_METRICS_ADDRESS", "9464"],
        ["APP_METRICS_ADDRESS", "localhost:99999"],
        ["APP_METRICS_ADDRESS", "localhost:8000"],
        ["APP_LOG_FORMAT", "xml"],
        ["APP_SHUTDOWN_TIMEOUT_SECONDS", "-1"],
        ["APP_SHUTDOWN_TIMEOUT_SECONDS", "soon"],
      ]
    ) {
      assert.equal(configError({ [name]: value }).setting, name, `${name}=${value}`);
    }
  });
});
