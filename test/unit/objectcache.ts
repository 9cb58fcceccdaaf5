/**
 * The read side of a watch cache (`list`, `getEntry`) over a fixed set of objects, for unit tests
 * of the admission plugins, which read nothing else from it. Not a test file itself.
 */
import type { KubeObject } from '../../src/apimachinery/meta.js';
import type { WatchCache } from '../../src/storage/watchcache.js';

type Entry = { json: string; labels?: Record<string, string>; name: string; namespace: string };

/** A cache holding `objects`, each under its watch-cache group/resource (`[gr, object]`). */
export function objectCache(objects: Array<[string, KubeObject]>): WatchCache {
  const entries = objects.map(([gr, o]) => ({ gr, e: { json: JSON.stringify(o), labels: o.metadata.labels, name: o.metadata.name ?? '', namespace: o.metadata.namespace ?? '' } as Entry }));
  return {
    list: (gr: string, _c: string, ns?: string) => entries.filter((x) => x.gr === gr && (ns === undefined || x.e.namespace === ns)).map((x) => x.e),
    getEntry: (gr: string, _c: string, ns: string, name: string) => entries.find((x) => x.gr === gr && x.e.namespace === ns && x.e.name === name)?.e,
  } as unknown as WatchCache;
}
