/**
 * kube-apiserver's `--runtime-config` for the group/versions kcp-ts serves only on request. Kept
 * apart from the resource descriptors so that the command line parses it without loading them.
 */

/**
 * Group/versions served only when `--runtime-config` turns them on, as kube-apiserver 1.34 keeps
 * beta APIs off by default (pkg/controlplane/instance.go `DefaultAPIResourceConfigSource`) and
 * kcp v0.30 serves them likewise: MutatingAdmissionPolicy and its binding.
 */
export const OFF_BY_DEFAULT_GROUP_VERSIONS: ReadonlySet<string> = new Set(['admissionregistration.k8s.io/v1beta1']);

/**
 * Parses kube-apiserver's `--runtime-config` (`<group>/<version>[=true|false]`, comma-separated;
 * a key without a value means true). Only the group/versions this server can turn on are
 * accepted. @throws Error naming an unknown group/version or a value other than true/false
 */
export function parseRuntimeConfig(text: string): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? 'true' : part.slice(eq + 1);
    if (!OFF_BY_DEFAULT_GROUP_VERSIONS.has(key)) throw new Error(`unknown --runtime-config group/version "${key}" (known: ${[...OFF_BY_DEFAULT_GROUP_VERSIONS].join(', ')})`);
    if (value !== 'true' && value !== 'false') throw new Error(`invalid --runtime-config value "${value}" for ${key} (true or false)`);
    out[key] = value === 'true';
  }
  return out;
}
