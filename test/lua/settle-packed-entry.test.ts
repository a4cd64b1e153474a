/**
 * settle.lua writes a batch's filed calls as one `packed_charged_calls` entry (lua/settle.lua's
 * header): field `c`, a line per call, `<call_id>|<organic>|<charged>|<tcw,tcw1h or ''>|<bytes of
 * settle>|<settle>|<record>`, joined by '\n'. The one parser (src/write-behind/outbox.ts) must give,
 * line by line, exactly the entries of the plain `charged_call` entry the line stands for (its debit,
 * then its call), whatever the target and model hold; a line that does not unpack keeps the whole
 * entry its kind (dead-lettered whole). The newest remainder of settles sharing a stream id is the
 * last one's (src/recovery/reconcile.ts).
 */
import { describe, expect, test } from 'bun:test'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { lastRemainder, type AccountLedger, type LedgerLine } from '../../src/recovery/reconcile'

interface Plain {
  id: string
  organic: string
  charged: string
  rec: string
  settle: string
  tcw?: string
  tcw1h?: string
}

/** The plain entry settle.lua writes for a lone filed call, as XRANGE gives it. */
const plainRaw = (c: Plain, origId?: string): string[] => [
  'kind', 'charged_call', 'id', `${c.id}:call`, 'organic', c.organic, 'charged', c.charged, 'rec', c.rec, 'settle', c.settle,
  ...(c.tcw !== undefined ? ['tcw', c.tcw, 'tcw1h', c.tcw1h!] : []),
  ...(origId ? ['orig_id', origId] : []),
]
/** Its line in the packed entry. */
const line = (c: Plain) => `${c.id}|${c.organic}|${c.charged}|${c.tcw !== undefined ? `${c.tcw},${c.tcw1h}` : ''}|${Buffer.byteLength(c.settle)}|${c.settle}|${c.rec}`

const settle = (acct: string, amount: string, bal: string, target: string, model: string) =>
  `${acct}||${amount}|${bal}|123456|0|7000|1000|3330|provider|1712345678901|${Buffer.byteLength(target)}|${target}|${model}`
const rec = (id: string, extra = '') => JSON.stringify({ call_id: id, slug: 'proxy:openai/x', note: `a|b\nc${extra}` }).slice(0, -1) + ',"charged":5,"uncharged":0}'

const CALLS: Plain[] = [
  { id: 'call_1', organic: '1', charged: '5', rec: rec('call_1'), settle: settle('acc_x', '-5', '495', 'proxy:openai/gpt-test', 'gpt-test') },
  { id: 'call_2', organic: '0', charged: '0', rec: rec('call_2', 'é'), settle: settle('acc_x', '0', '495', 'proxy:openai/m|ödd|é', 'm|ödd|é') },
  { id: 'call_3', organic: '1', charged: '12', rec: rec('call_3'), settle: settle('acc_y', '-12', '488', 'proxy:openai/two\nlines|', 'two\nlines|'), tcw: '250', tcw1h: '40' },
  { id: 'call_4', organic: '1', charged: '1', rec: rec('call_4'), settle: settle('acc_x', '-1', '494', 'p', '|\n|'), tcw: '0', tcw1h: '7' },
]

describe("a settle batch's filed calls entry (packed_charged_calls)", () => {
  test('parses to the entries of each call\'s plain charged_call, in order, under the one stream id', () => {
    for (const origId of [undefined, '4-1']) {
      const raw = ['kind', 'packed_charged_calls', 'c', CALLS.map(line).join('\n'), ...(origId ? ['orig_id', origId] : [])]
      const parsed = parseOutboxEntry('5-0', raw)
      expect(parsed).toEqual(CALLS.flatMap((c) => parseOutboxEntry('5-0', plainRaw(c, origId))))
      expect(parsed.map((e) => [e.streamId, e.kind, e.fields.id, e.fields.model, e.fields.tcw, e.fields.orig_id])).toEqual([
        ['5-0', 'debit', 'call_1:debit', 'gpt-test', undefined, origId],
        ['5-0', 'call', 'call_1:call', undefined, undefined, origId],
        ['5-0', 'debit', 'call_2:debit', 'm|ödd|é', undefined, origId],
        ['5-0', 'call', 'call_2:call', undefined, undefined, origId],
        ['5-0', 'debit', 'call_3:debit', 'two\nlines|', '250', origId],
        ['5-0', 'call', 'call_3:call', undefined, '250', origId],
        ['5-0', 'debit', 'call_4:debit', '|\n|', '0', origId],
        ['5-0', 'call', 'call_4:call', undefined, '0', origId],
      ])
    }
    // One line alone reads as its plain entry too.
    expect(parseOutboxEntry('5-0', ['kind', 'packed_charged_calls', 'c', line(CALLS[2]!)])).toEqual(parseOutboxEntry('5-0', plainRaw(CALLS[2]!)))
  })

  test('one line that does not unpack keeps the whole entry its kind (dead-lettered whole, never half filed)', () => {
    const good = line(CALLS[0]!)
    const bad = [
      `${good}\n`,
      `${good}\n\n${good}`,
      // The settle field's length one byte off either way.
      `${good}\n${line(CALLS[1]!).replace(`|${Buffer.byteLength(CALLS[1]!.settle)}|`, `|${Buffer.byteLength(CALLS[1]!.settle) - 1}|`)}`,
      `${good}\n${line(CALLS[1]!).replace(`|${Buffer.byteLength(CALLS[1]!.settle)}|`, `|${Buffer.byteLength(CALLS[1]!.settle) + 1}|`)}`,
      `${good}\nno bars here`,
      `${good}\ncall_9|2|5||3|a|b|{}`,
      `${good}\ncall_9|1|-5||3|a|b|{}`,
      `${good}\ncall_9|1|5|7|3|a|b|{}`,
      `${good}\n|1|5||3|a|b|{}`,
      // A settle that is not one (too few values): the debit would be read wrong.
      `${good}\ncall_9|1|5||3|a|b|{}`,
      '',
    ]
    for (const c of bad) {
      expect(parseOutboxEntry('5-0', ['kind', 'packed_charged_calls', 'c', c])).toEqual([{ streamId: '5-0', kind: 'packed_charged_calls', fields: { kind: 'packed_charged_calls', c } }])
    }
    expect(parseOutboxEntry('5-0', ['kind', 'packed_charged_calls']).map((e) => e.kind)).toEqual(['packed_charged_calls'])
  })
})

describe('the remainder a rebuild restores', () => {
  const lineOf = (id: string, streamId: string, balanceAfter: number, remainder: number): LedgerLine =>
    ({ id, kind: 'debit', account: 'acc_x', agent: null, amount: 0, balanceAfter, callId: id, refId: null, target: null, uncredited: null, at: 0, remainder, in: 'postgres', streamId }) as LedgerLine
  const led = (lines: LedgerLine[]): AccountLedger => ({ account: 'acc_x', lines, sum: 0, postgres: { count: 0, sum: 0 }, outbox: { count: 0, sum: 0 } }) as AccountLedger

  test('of settles sharing a stream id is the last one\'s: the lowest balance, then the highest remainder', () => {
    // In the batch's order: 495 (r 10), 495 (r 900: charged 0), 490 (r 20), then 490 (r 400).
    const lines = [lineOf('a', '7-0', 495, 10), lineOf('b', '7-0', 495, 900), lineOf('c', '7-0', 490, 20), lineOf('d', '7-0', 490, 400), lineOf('z', '6-3', 100, 5)]
    for (const order of [lines, [...lines].reverse(), [lines[2]!, lines[0]!, lines[4]!, lines[3]!, lines[1]!]]) expect(lastRemainder(led(order))).toBe(400)
    expect(lastRemainder(led([lineOf('a', '7-0', 495, 10), lineOf('y', '8-0', 600, 3)]))).toBe(3)
  })
})
