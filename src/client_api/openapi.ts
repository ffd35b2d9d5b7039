/** The OpenAPI document of the client API, served at /api/v1/openapi.json. */
import document from "../../docs/openapi.json" with { type: "json" };

/** `docs/openapi.json` (generated from `docs/openapi.yaml`) with this service's own base URL as server. */
export function openApiJson(baseUrl: string): string {
  return JSON.stringify({
    ...document,
    servers: [{ url: baseUrl, description: "this service (APP_BASE_URL)" }],
  });
}
