/** The environment of the publishing API's handlers (mod.ts). */
import type { Project, PublishToken, Release } from "../../store/mod.ts";

export interface PublishEnv {
  Bindings: { remoteAddr?: Deno.Addr };
  Variables: {
    /** The accepted publish token of the request (set by auth.ts). */
    publishToken: PublishToken;
    /** The project a project or release route acts on (set by its gate, mod.ts `onProject`). */
    project: Project;
    /** The release a release route acts on (set by its gate, mod.ts `onRelease`). */
    release: Release;
  };
}
