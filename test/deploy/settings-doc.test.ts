/** docs/configuration.md is generated from src/config.ts: every setting documented, the page current. */
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { settingsOf, settingsPage } from '../../scripts/settings-doc'
import { ConfigSchema } from '../../src/config'

const ROOT = join(import.meta.dir, '..', '..')
const source = await Bun.file(join(ROOT, 'src', 'config.ts')).text()

describe('docs/configuration.md', () => {
  test('lists every setting the service reads, each with what it is for', () => {
    const settings = settingsOf(source)
    expect(settings.map((s) => s.name)).toEqual(Object.keys(ConfigSchema.properties))
    expect(settings.filter((s) => s.what.length < 8).map((s) => s.name)).toEqual([])
  })

  test('is current (regenerate with `bun scripts/settings-doc.ts`)', async () => {
    expect(await Bun.file(join(ROOT, 'docs', 'configuration.md')).text()).toBe(settingsPage(settingsOf(source)))
  })

  test('the parser reads a JSDoc block, its @default, and a setting without one', () => {
    const src = 'export const ConfigSchema = T.Object({\n  /**\n   * Two\n   * lines. @default 7\n   */\n  A_B: Int(7),\n  /** One. */\n  C: T.Optional(T.String()),\n})\n'
    expect(settingsOf(src)).toEqual([
      { name: 'A_B', what: 'Two lines.', default: '7' },
      { name: 'C', what: 'One.', default: 'unset' },
    ])
  })
})
