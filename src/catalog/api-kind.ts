/** Which API a metered route speaks, from its dialect and path: where its ceiling is named and its usage reported. */
export type Dialect = 'openai' | 'anthropic'
export type ApiKind = 'chat' | 'responses' | 'embeddings' | 'messages'

export function apiKindOf(dialect: Dialect, path: string): ApiKind {
  if (dialect === 'anthropic') return 'messages'
  if (path.endsWith('/responses')) return 'responses'
  if (path.endsWith('/embeddings')) return 'embeddings'
  return 'chat'
}
