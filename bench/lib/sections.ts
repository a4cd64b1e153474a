/**
 * Replaces one script's section of bench/RESULTS.md, found by its title and end marker (or appends
 * it); every other byte of the file is kept, so each bench refreshes only what it measured.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'

const HEADER = '# Bench results\n\nEach section is written by its own script; rerun the command it names to refresh it.\n'

export function replaceSection(file: string, title: string, endMarker: string, section: string): void {
  let text = existsSync(file) ? readFileSync(file, 'utf8') : HEADER
  const end = text.indexOf(endMarker)
  const start = end === -1 ? -1 : text.lastIndexOf(title, end)
  if (start !== -1 && end > start) text = text.slice(0, start) + section + text.slice(end + endMarker.length)
  else text = text.replace(/\n*$/, '\n\n') + section + '\n'
  writeFileSync(file, text)
}
