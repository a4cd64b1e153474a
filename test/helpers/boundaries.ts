/**
 * The layering rules of docs/architecture.md, checked over a source tree:
 * - `src/modules/<feature>/` is HTTP only and imports no other module;
 * - nothing but the composition root (`src/app.ts`) imports `src/modules/`;
 * - no import cycles anywhere in `src/` (type-only imports count: they are a second opinion too).
 * Works on a map path → source, so a test can also feed it a tree that breaks a rule.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'

export const COMPOSITION_ROOT = 'src/app.ts'

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g

export function readTree(root: string, dir = 'src'): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (d: string) => {
    for (const name of readdirSync(join(root, d))) {
      const p = join(d, name)
      if (statSync(join(root, p)).isDirectory()) walk(p)
      else if (p.endsWith('.ts')) out.set(p, readFileSync(join(root, p), 'utf8'))
    }
  }
  walk(dir)
  return out
}

/** Relative imports of one file, resolved to paths of the tree (unresolvable ones dropped). */
export function importsOf(file: string, source: string, tree: Map<string, string>): string[] {
  const out: string[] = []
  for (const m of source.matchAll(IMPORT)) {
    const spec = (m[1] ?? m[2])!
    const base = normalize(join(dirname(file), spec))
    const hit = [base + '.ts', base, join(base, 'index.ts')].find((c) => tree.has(c))
    if (hit) out.push(hit)
  }
  return out
}

const moduleOf = (p: string) => /^src\/modules\/([^/]+)\//.exec(p)?.[1] ?? null

/**
 * The paid request's layers (docs/architecture.md, "Walks"): front doors over the paid request over
 * the provider request, the metering, the scripts and Redis. A request walks them downwards only.
 */
const FRONT_DOORS = ['src/calls/', 'src/proxy/', 'src/mcp/', 'src/oauth/', 'src/modules/']
const PAID_REQUEST = 'src/paid-request/'
const UNDER_PAID_REQUEST = ['src/upstream/', 'src/metering/', 'src/lua/', 'src/redis/']
const under = (file: string, folders: string[]) => folders.some((f) => file.startsWith(f))

function climbsBack(file: string, dep: string): string | null {
  if (file.startsWith(PAID_REQUEST) && (under(dep, FRONT_DOORS) || dep === 'src/services.ts')) return 'the paid request imports a front door or the composition root'
  if (under(file, UNDER_PAID_REQUEST) && (dep.startsWith(PAID_REQUEST) || under(dep, FRONT_DOORS))) return 'a layer under the paid request imports one above it'
  return null
}

export function layeringViolations(tree: Map<string, string>): string[] {
  const problems: string[] = []
  const graph = new Map<string, string[]>()
  for (const [file, src] of tree) {
    const deps = importsOf(file, src, tree)
    graph.set(file, deps)
    for (const dep of deps) {
      const from = moduleOf(file)
      const to = moduleOf(dep)
      if (to && from && from !== to) problems.push(`${file} imports ${dep}: a module imports another module`)
      if (to && !from && file !== COMPOSITION_ROOT) problems.push(`${file} imports ${dep}: only ${COMPOSITION_ROOT} may import modules/`)
      const climb = climbsBack(file, dep)
      if (climb) problems.push(`${file} imports ${dep}: ${climb}`)
    }
  }
  for (const cycle of cyclesOf(graph)) problems.push(`import cycle: ${cycle.join(' → ')}`)
  return problems
}

/** Every strongly connected component of more than one file (or a file importing itself). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  let index = 0
  const idx = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const on = new Set<string>()
  const out: string[][] = []
  const visit = (v: string) => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!))
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = []
      let w: string
      do {
        w = stack.pop()!
        on.delete(w)
        comp.push(w)
      } while (w !== v)
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(comp.sort())
    }
  }
  for (const v of graph.keys()) if (!idx.has(v)) visit(v)
  return out
}

