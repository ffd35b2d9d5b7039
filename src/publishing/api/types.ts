/** The environment of the publishing API's handlers (mod.ts). */
import type { PublishToken } from "../../credentials/publish_tokens.ts";
import type { Project } from "../../projects/types.ts";
import type { Release } from "../../releases/types.ts";
import type { Store } from "../../kv/store.ts";

export interface PublishEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    /** The store the request reads and writes through: a change's commit carries its audit entry (mod.ts). */
    store: Store;
    /** The accepted publish token of the request (set by auth.ts). */
    publishToken: PublishToken;
    /** The project a project or release route acts on (set by its gate, route_gates.ts `onProject`). */
    project: Project;
    /** The release a release route acts on (set by its gate, route_gates.ts `onRelease`). */
    release: Release;
  };
}
