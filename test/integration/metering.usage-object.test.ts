/**
 * Where the cost is written (docs/api.md §7; src/metering/usage-object.ts): the usage object
 * JSON.parse keeps, in the shapes a provider's text can take that the properties of
 * metering.cost-splice.property.test.ts do not draw: an event whose data spans several `data:`
 * lines, a pretty-printed answer, an empty usage object, a key spelt with an escape.
 */
import { expect, test } from 'bun:test'
import { JsonMeter, SseMeter } from '../../src/metering/meter'
import { insertionAt, objectEndAt } from '../../src/metering/usage-object'

const M = '"cost":1,"cost_details":{"credits":"0.000001"}'
const writer = () => M
const enc = new TextEncoder()
const run = (m: JsonMeter | SseMeter, text: string) => Buffer.concat([m.push(enc.encode(text)), m.flush()]).toString('utf8')

test('the last member of the name, as JSON.parse keeps it; an escaped key is read as JSON.parse reads it', () => {
  const s = '{"usage":{"a":1},"x":{"usage":{"b":2}},"us\\u0061ge":{"c":3} }'
  expect(s.slice(0, objectEndAt(s, 0, ['usage']) + 1)).toBe('{"usage":{"a":1},"x":{"usage":{"b":2}},"us\\u0061ge":{"c":3}')
  expect(objectEndAt('{"usage":null}', 0, ['usage'])).toBe(-1)
  expect(objectEndAt('{"response":{"usage":{}}}', 0, ['response', 'usage'])).toBe(22)
  expect(objectEndAt('{"usage":{"a":"}"}', 0, ['usage'])).toBe(-1)
  expect(insertionAt('{"usage":{  }}', 12, 'M')).toEqual({ at: 10, text: 'M' })
  expect(insertionAt('{"usage":{"a":1\n  }}', 18, 'M')).toEqual({ at: 15, text: ',M' })
})

test('a pretty-printed answer: the members after the usage object\'s last one, its indentation kept', () => {
  const text = '{\n  "id": "x",\n  "usage": {\n    "prompt_tokens": 5,\n    "completion_tokens": 2\n  },\n  "metadata": {}\n}\n'
  expect(run(new JsonMeter('chat', writer), text)).toBe(text.replace('"completion_tokens": 2', `"completion_tokens": 2,${M}`))
})

test('an empty usage object gains the members without a comma', () => {
  expect(run(new JsonMeter('embeddings', writer), '{"data":[],"usage":{}}')).toBe(`{"data":[],"usage":{${M}}}`)
})

test('a message_delta whose data spans two data: lines: the members on the line of the usage object\'s last member', () => {
  const event = 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},\ndata: "usage":{"output_tokens":7}}\n\n'
  const got = run(new SseMeter('messages', false, writer), event)
  expect(got).toBe(event.replace('"output_tokens":7', `"output_tokens":7,${M}`))
})

test('a usage chunk framed by \\r\\n, with an id line and a comment: only the data line changes', () => {
  const event = ': c\r\nid: 9\r\ndata: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\r\n\r\ndata: [DONE]\r\n\r\n'
  expect(run(new SseMeter('chat', false, writer), event)).toBe(event.replace('"completion_tokens":1', `"completion_tokens":1,${M}`))
})
