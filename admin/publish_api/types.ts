/** The environment of the publishing API's handlers (mod.ts). */
import type { PublishToken } from "../../src/store/mod.ts";
import type { Store } from "../../src/store/store.ts";

export interface PublishEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    /** The store the request reads and writes through: a change's commit carries its audit entry (mod.ts). */
    store: Store;
    /** The accepted publish token of the request (set by auth.ts). */
    publishToken: PublishToken;
  };
}
