/** The environment of the publishing API's handlers (mod.ts). */
import type { PublishToken } from "../../store/mod.ts";

export interface PublishEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    /** The accepted publish token of the request (set by auth.ts). */
    publishToken: PublishToken;
  };
}
