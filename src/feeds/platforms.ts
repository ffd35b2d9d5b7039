/**
 * One URL per app (docs/feeds.md "One URL per app"): what each updater sends
 * about its platform, read as the platform names a sibling project's slug
 * ends in. A feed URL names `{app}`; the project answering is `{app}` itself
 * when the key sees such a project, else the first of `{app}-{platform}` in
 * the order these functions return (most specific first), e.g. `desktop-mac-arm64`,
 * then `desktop-mac`. Operating systems are `win`, `mac` and `linux`;
 * architectures `x64`, `arm64`, `ia32`, `armv7l` and `universal`.
 */

const OS: Readonly<Record<string, string>> = {
  win: "win",
  win32: "win",
  windows: "win",
  mac: "mac",
  osx: "mac",
  darwin: "mac",
  macos: "mac",
  linux: "linux",
};

const ARCH: Readonly<Record<string, string>> = {
  x64: "x64",
  x86_64: "x64",
  amd64: "x64",
  arm64: "arm64",
  aarch64: "arm64",
  ia32: "ia32",
  i686: "ia32",
  x86: "ia32",
  armv7: "armv7l",
  armv7l: "armv7l",
  universal: "universal",
};

/** `{os}-{arch}` then `{os}`, or none when the OS is not one of ours. */
function platformNames(os: string, arch?: string): string[] {
  const system = OS[os.toLowerCase()];
  if (system === undefined) return [];
  const machine = arch === undefined ? undefined : ARCH[arch.toLowerCase()];
  return machine === undefined ? [system] : [`${system}-${machine}`, system];
}

/**
 * electron-updater's file name, `{channel}[-{os}[-{arch}]]` with the `.yml`
 * extension: no OS is Windows, `mac` macOS, `linux` and `linux-arm64` Linux
 * (any channel in place of `latest`).
 */
export function electronPlatforms(file: string): string[] {
  const name = file.replace(/\.yml$/, "");
  const dash = name.indexOf("-");
  if (dash === -1) return ["win"];
  const [os, arch] = name.slice(dash + 1).split("-", 2);
  return platformNames(os, arch);
}

/** Tauri's `{{target}}` (`windows`, `darwin`, `linux`) and `{{arch}}` (`x86_64`, `aarch64`, …). */
export function tauriPlatforms(target: string, arch: string): string[] {
  return platformNames(target, arch);
}

/**
 * Squirrel's platform path segment, as Electron's `process.platform` and
 * optionally `-{process.arch}` write it: `darwin`, `darwin-arm64`, `win32`,
 * `win32-x64`.
 */
export function squirrelPlatforms(platform: string): string[] {
  const [os, arch] = platform.split("-", 2);
  return platformNames(os, arch);
}

/** The operating system a Squirrel platform segment names: `mac`, `win` or null. */
export function squirrelSystem(platform: string): "mac" | "win" | null {
  const system = OS[platform.split("-", 1)[0].toLowerCase()];
  return system === "mac" || system === "win" ? system : null;
}

/**
 * Velopack's channel: its default channels are the OS names `win`, `osx` and
 * `linux` (optionally `-{arch}`); any other channel names the sibling project
 * `{app}-{channel}` itself.
 */
export function velopackPlatforms(channel: string): string[] {
  const [os, arch] = channel.split("-", 2);
  const names = platformNames(os, arch);
  return names.length > 0 ? names : [channel.toLowerCase()];
}
