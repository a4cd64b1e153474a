/**
 * Writes docs/configuration.md from src/config.ts: each setting's name, default and the JSDoc that
 * says what it is for, so that the settings are declared once (test/deploy/settings-doc.test.ts
 * fails when the page is stale). Run: `bun scripts/settings-doc.ts`.
 */
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

export interface Setting {
  name: string
  what: string
  default: string
}

/** The settings of ConfigSchema in source order, each with its JSDoc text and `@default`. */
export function settingsOf(source: string): Setting[] {
  const body = source.slice(source.indexOf('export const ConfigSchema = T.Object({'), source.indexOf('\n})', source.indexOf('export const ConfigSchema')))
  const out: Setting[] = []
  let doc = ''
  for (const line of body.split('\n').slice(1)) {
    const t = line.trim()
    if (t.startsWith('/**') || t.startsWith('*')) {
      doc += ' ' + t.replace(/^\/\*\*|\*\/$|^\*\/?/g, '').trim()
      continue
    }
    const m = /^([A-Z][A-Z0-9_]*):/.exec(t)
    if (!m) continue
    const text = doc.replace(/\s+/g, ' ').trim()
    const d = /@default\s+(.*)$/.exec(text)
    out.push({ name: m[1]!, what: (d ? text.slice(0, d.index) : text).trim(), default: d ? d[1]!.trim() : 'unset' })
    doc = ''
  }
  return out
}

export function settingsPage(settings: Setting[]): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|')
  const rows = settings.map((s) => `| \`${s.name}\` | ${cell(s.default === 'unset' ? 'unset' : '`' + s.default + '`')} | ${cell(s.what)} |`)
  return `# Configuration

The service reads only environment variables, validated once at start: a missing or malformed one
stops the process with a message that names it. This page is generated from \`src/config.ts\`
(\`bun scripts/settings-doc.ts\`); a test fails when it is stale.

Besides these, each provider of the catalog reads its house key from the variable its \`key_env\`
names (e.g. \`OPENAI_API_KEY\`; unset → its house routes answer \`API_UNAVAILABLE\`), and
\`PROVIDER_<ID>_BASE_URL\` (the provider id upper-cased, \`-\` as \`_\`) points a provider at another
base URL, e.g. a regional endpoint or a test fake (docs/catalog.md). \`<ID>_ADMIN_KEY\` (the same
spelling, e.g. \`OPENAI_ADMIN_KEY\`, \`ANTHROPIC_ADMIN_KEY\`) is the provider's admin key for its
usage API: set, the provider's house lane is reconciled with its bill every UTC day (docs/api.md §13d).

| Setting | Default | What it is for |
|---|---|---|
${rows.join('\n')}
`
}

if (import.meta.main) {
  const source = await Bun.file(join(ROOT, 'src', 'config.ts')).text()
  await Bun.write(join(ROOT, 'docs', 'configuration.md'), settingsPage(settingsOf(source)))
}
