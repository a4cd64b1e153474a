/**
 * The parts of a metered request whose tokens its bytes do not bound (docs/api.md §7's input bound is
 * the body's UTF-8 bytes, sound for text: a token is at least a byte of what it encodes). An image
 * costs tokens by its pixels, not its bytes: a URL of 60 bytes, or a tiny PNG of one colour, can be
 * a 2048-pixel image of thousands of tokens. A file or document (a PDF) costs its pages, text and
 * page images, whatever its size or reference. Without this, a request of many image URLs reserved a
 * few credits and cost the house many more, past every cap (the excess only recorded as uncharged).
 */
import { ApiError } from '../errors'

/**
 * The most tokens one image costs on most models we price, with room: OpenAI's tiled models up to
 * 1,445 (gpt-4o, high detail), its patch-based ones up to 1,536 patches × 2.46 ≈ 3,780 (gpt-4.1-nano),
 * Anthropic's ~1,600 (1.15 megapixels / 750). Added to the input bound per image part, unless the
 * model's catalog entry names its own `image_tokens`: gpt-4o-mini bills 2,833 + 5,667 a tile, up to
 * 48,169 for one image (2 × 4 tiles), eight times this.
 */
export const IMAGE_TOKENS_BOUND = 6_000

/** Content part types that carry an image, across the three APIs (and a computer-use screenshot). */
const IMAGE_TYPES = new Set(['image_url', 'input_image', 'image', 'computer_screenshot'])
/** Content part types that carry a file or document: no bound from the request, so refused. */
const FILE_TYPES = new Set(['file', 'input_file', 'document', 'container_upload'])
/**
 * An item of an earlier response named by its id (Responses API): its content is input the
 * provider holds and the request does not carry, so nothing bounds it either: refused with files.
 */
const STORED_TYPES = new Set(['item_reference'])
/**
 * Audio input: its tokens are billed at the model's audio rate, which the catalog does not price
 * (charged at the text rate, the house would pay the difference), so refused too.
 */
const AUDIO_TYPES = new Set(['input_audio'])

export interface MediaParts {
  images: number
  /** Files, documents, audio and stored items: parts a metered route refuses. */
  files: number
}

/** Counts the image and file parts anywhere in what it is given (tool results included), without recursion. */
export function mediaParts(body: unknown): MediaParts {
  const parts: MediaParts = { images: 0, files: 0 }
  const stack: unknown[] = [body]
  while (stack.length) {
    const v = stack.pop()
    if (Array.isArray(v)) {
      for (const x of v) if (x && typeof x === 'object') stack.push(x)
    } else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>
      if (typeof o.type === 'string') {
        if (IMAGE_TYPES.has(o.type)) parts.images++
        else if (FILE_TYPES.has(o.type) || AUDIO_TYPES.has(o.type) || STORED_TYPES.has(o.type)) parts.files++
      }
      for (const k in o) {
        const x = o[k]
        if (x && typeof x === 'object') stack.push(x)
      }
    }
  }
  return parts
}

/**
 * The prompt a provider adds, unseen in the request, once tools are present: Anthropic's tool-use
 * system prompt (~350 tokens) and its built-in client tools' (bash ~245, text editor ~700, computer
 * ~735 each), with room. Added to the input bound of a request that carries tools.
 */
export const TOOLS_PROMPT_BOUND = 3_000

/**
 * Tools the client runs (their results come back in a later request, bounded there): functions and
 * custom tools, Anthropic's typeless custom tools and its bash, text editor, computer and memory
 * tools, OpenAI's computer use and local shell. A server-side tool (web search, code execution,
 * file search, a remote MCP server) feeds its results into the input and may add a fee per use:
 * nothing in the request bounds either.
 */
const CLIENT_TOOL = /^(function|custom|computer_use_preview|local_shell|(bash|text_editor|computer|memory)_\d+)$/

/** The input bound tools add (0 without tools); server-side tools are refused. */
export function toolsBound(body: Record<string, unknown>): number {
  for (const field of ['web_search_options', 'mcp_servers'])
    if (body[field] !== undefined && body[field] !== null) throw serverSide(field)
  const tools = body.tools
  if (!Array.isArray(tools) || tools.length === 0) return 0
  for (const t of tools) {
    const type = t && typeof t === 'object' ? (t as Record<string, unknown>).type : null
    if (type !== undefined && (typeof type !== 'string' || !CLIENT_TOOL.test(type))) throw serverSide('tools')
  }
  return TOOLS_PROMPT_BOUND
}

const serverSide = (field: string) => new ApiError('BAD_REQUEST', { field, expected: 'client-side tools only (a server-side tool feeds the input and may charge per use: nothing in the request bounds it)' })
