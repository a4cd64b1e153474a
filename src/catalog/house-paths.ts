/**
 * The path entries of a proxy route's `house` block (docs/house-lane.md): how an `allow` entry is
 * read and what "under a prefix" means, shared by the catalog's checks at start and the proxy.
 */

/** A `house.allow` entry: a path prefix, optionally scoped to one method (`GET /v1/models`). */
export interface AllowEntry {
  method: string | null
  prefix: string
}

export function parseAllowEntry(entry: string): AllowEntry {
  const space = entry.indexOf(' ')
  return space === -1 ? { method: null, prefix: entry } : { method: entry.slice(0, space), prefix: entry.slice(space + 1) }
}

/**
 * `path` equals `prefix` or lies below it, segment-wise, trailing slashes aside: `/v1/models` covers
 * `/v1/models/` and `/v1/models/x`, never `/v1/modelsx` or `/v1/models;x`. Case-sensitive, so no
 * other capitalisation of an opened path is opened with it.
 */
export function under(path: string, prefix: string): boolean {
  const p = prefix.replace(/\/+$/, '')
  const q = path.replace(/\/+$/, '')
  return q === p || q.startsWith(p + '/')
}
