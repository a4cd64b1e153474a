/**
 * The tools of the MCP endpoint: the service's own (owner-only ones hidden from agent tokens) and
 * one per live capability. The catalog's capabilities are fixed at boot and only their pause state
 * moves, so the listing is built once per pause state and role and reused until a pause changes it.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { Services } from '../services'
import { ProviderKeys } from '../vault/provider-key'
import { capabilityTool } from './capability-tools'
import type { RouteLike } from '../route-table'
import { routeSchemas } from './route-schemas'
import { serviceTools } from './service-tools'
import type { McpTool } from './tool'

interface Listing {
  pauseState: string
  owner: Tool[]
  agent: Tool[]
}

export class ToolRegistry {
  private service: Map<string, McpTool> | null = null
  /** Every capability's tool, live or not: a paused one is unlisted but still answers API_PAUSED. */
  private capabilities = new Map<string, { tool: McpTool; slug: string }>()
  private listing: Listing | null = null

  constructor(
    private s: Services,
    private routes: () => RouteLike[],
  ) {}

  /** tools/list for an owner token or an agent token. */
  list(owner: boolean): Tool[] {
    const pauseState = this.s.catalog.pausedSlugs().join('\n')
    if (this.listing?.pauseState !== pauseState) this.listing = this.build(pauseState)
    return owner ? this.listing.owner : this.listing.agent
  }

  find(name: string): McpTool | undefined {
    this.init()
    return this.service!.get(name) ?? this.capabilities.get(name)?.tool
  }

  private build(pauseState: string): Listing {
    this.init()
    const { catalog } = this.s
    const live = [...this.capabilities.values()].filter((c) => catalog.state(catalog.capabilities.get(c.slug)!) === 'live').map((c) => c.tool)
    const tools = [...this.service!.values(), ...live]
    // An agent token does not see the tools it could not call (owner token only).
    return { pauseState, owner: tools.map(listed), agent: tools.filter((t) => t.access !== 'operator').map(listed) }
  }

  /** Built at the first request: the route table (the tools' schemas) is complete only once the app is. */
  private init(): void {
    if (this.service) return
    // As POST /v1/call: the vault's lookup is read on each call (tests swap it in after boot).
    const keys = new ProviderKeys(() => this.s.vaultedKey, this.s.log)
    this.service = new Map(serviceTools(this.s, routeSchemas(this.routes), keys).map((t) => [t.name, t]))
    for (const cap of this.s.catalog.capabilities.values()) {
      const tool = capabilityTool(this.s, keys, cap)
      // The service's own tools keep their names; of two slugs that meet on one name, the first wins.
      if (this.service.has(tool.name) || this.capabilities.has(tool.name)) {
        this.s.log.warn('mcp_tool_name_taken', { slug: cap.slug, name: tool.name })
        continue
      }
      this.capabilities.set(tool.name, { tool, slug: cap.slug })
    }
  }
}

const listed = (t: McpTool): Tool => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as Tool['inputSchema'] })
