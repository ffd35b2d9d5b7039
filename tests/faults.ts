/** Faults on purpose: a KV that fails or hangs where asked, and a capture of logged errors. */

export interface KvFaults {
  /** `get`/`getMany` of a key for which this returns true throws. */
  failGet?: (key: Deno.KvKey) => boolean;
  /** `get`/`getMany` of a key for which this returns true never settles. */
  hangGet?: (key: Deno.KvKey) => boolean;
  /** Every atomic commit throws. */
  failCommit?: boolean;
  /** Every write (`set`, `delete`, atomic commit) throws this, as SQLite would (e.g. "database or disk is full"). */
  refuseWrites?: string;
  /** Runs before each atomic commit (to land another writer's change between a read and a commit). */
  beforeCommit?: () => Promise<void>;
}

/** A KV that behaves like `kv` except for the faults asked for. */
export function faultyKv(kv: Deno.Kv, faults: KvFaults): Deno.Kv {
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "get") {
        return (key: Deno.KvKey, options?: { consistency?: Deno.KvConsistencyLevel }) => {
          if (faults.hangGet?.(key)) return new Promise(() => {});
          if (faults.failGet?.(key)) return Promise.reject(new Error("kv get failed (test fault)"));
          return target.get(key, options);
        };
      }
      if (prop === "getMany") {
        return (keys: Deno.KvKey[], options?: { consistency?: Deno.KvConsistencyLevel }) => {
          if (keys.some((key) => faults.hangGet?.(key))) return new Promise(() => {});
          if (keys.some((key) => faults.failGet?.(key))) {
            return Promise.reject(new Error("kv getMany failed (test fault)"));
          }
          return target.getMany(keys, options);
        };
      }
      if ((prop === "set" || prop === "delete") && faults.refuseWrites) {
        return () => Promise.reject(new TypeError(faults.refuseWrites));
      }
      if (prop === "atomic" && (faults.failCommit || faults.refuseWrites || faults.beforeCommit)) {
        const failure = faults.failCommit || faults.refuseWrites
          ? faults.refuseWrites ?? "kv commit failed (test fault)"
          : null;
        return () => {
          const op = target.atomic();
          const proxy: Deno.AtomicOperation = new Proxy(op, {
            get(opTarget, opProp) {
              if (opProp === "commit") {
                return async () => {
                  await faults.beforeCommit?.();
                  if (failure !== null) throw new TypeError(failure);
                  return await opTarget.commit();
                };
              }
              const value = Reflect.get(opTarget, opProp, opTarget);
              if (typeof value !== "function") return value;
              // Builder methods return the operation: keep returning the proxy.
              return (...args: unknown[]) => {
                value.apply(opTarget, args);
                return proxy;
              };
            },
          });
          return proxy;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Captures console.error while `fn` runs. */
export async function captureErrors<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; logged: string }> {
  const original = console.error;
  const lines: string[] = [];
  console.error = (...args: unknown[]) => {
    lines.push(
      args.map((a) => a instanceof Error ? `${a.name}: ${a.message}` : String(a)).join(" "),
    );
  };
  try {
    return { value: await fn(), logged: lines.join("\n") };
  } finally {
    console.error = original;
  }
}
