/**
 * The tree keeps its layering (docs/architecture.md, "Rules the tests hold"): modules/ is HTTP only, no module imports another, only the
 * composition root imports modules/, and there are no import cycles. The checker is also fed small
 * trees that break each rule, so this test is seen to fail when a rule is broken.
 */
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { layeringViolations, readTree } from '../helpers/boundaries'

const ROOT = join(import.meta.dir, '..', '..')

describe('layering', () => {
  test('the source tree breaks no rule', () => {
    expect(layeringViolations(readTree(ROOT))).toEqual([])
  })

  test('a module importing another module is caught', () => {
    const tree = new Map([
      ['src/modules/a/index.ts', "import { x } from '../b/service'\n"],
      ['src/modules/b/service.ts', 'export const x = 1\n'],
    ])
    expect(layeringViolations(tree)).toEqual(['src/modules/a/index.ts imports src/modules/b/service.ts: a module imports another module'])
  })

  test('core importing modules/ is caught; the composition root may', () => {
    const tree = new Map([
      ['src/ledger/statement.ts', "import type { M } from '../modules/a/model'\n"],
      ['src/app.ts', "import { routes } from './modules/a'\n"],
      ['src/modules/a/index.ts', 'export const routes = 1\n'],
      ['src/modules/a/model.ts', 'export type M = 1\n'],
    ])
    expect(layeringViolations(tree)).toEqual(['src/ledger/statement.ts imports src/modules/a/model.ts: only src/app.ts may import modules/'])
  })

  test('the paid request importing a front door, or the provider request importing the paid request, is caught', () => {
    const tree = new Map([
      ['src/paid-request/proxied.ts', "import { house } from '../proxy/house'\n"],
      ['src/proxy/house.ts', 'export const house = 1\n'],
      ['src/upstream/request.ts', "import type { CallOutcome } from '../paid-request/outcome'\n"],
      ['src/paid-request/outcome.ts', 'export type CallOutcome = 1\n'],
    ])
    expect(layeringViolations(tree)).toEqual([
      'src/paid-request/proxied.ts imports src/proxy/house.ts: the paid request imports a front door or the composition root',
      'src/upstream/request.ts imports src/paid-request/outcome.ts: a layer under the paid request imports one above it',
    ])
  })

  test('an import cycle, type-only included, is caught', () => {
    const tree = new Map([
      ['src/a.ts', "import type { B } from './b'\nexport type A = 1\n"],
      ['src/b.ts', "export { c } from './c'\nexport type B = 2\n"],
      ['src/c.ts', "import type { A } from './a'\nexport const c = 3\n"],
    ])
    expect(layeringViolations(tree)).toEqual(['import cycle: src/a.ts → src/b.ts → src/c.ts'])
  })
})
