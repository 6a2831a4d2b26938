import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import { keyResourceRefusal, keyToolRefusal } from '../apiKeys/keyRules.js';
import { compileUriTemplate } from '../../lib/uriTemplate.js';
import { keyAllowsServer, keyAllowsTool, serverAllows, splitExposedName } from './gatewayAccess.js';
import { asListed, exposedItems, findExposed } from './exposedItems.js';
import type { Completion, CompletionRef, GetPromptResult, Prompt, ReadResourceResult, ResourceTemplate } from './mcpWire.js';
import type { UpstreamConnection } from './UpstreamConnection.js';
import type { ResourceSubscriber } from './ResourceSubscriber.js';

export interface ServerEntry {
  name: string;
  config: McpServerConfig;
  source: 'config' | 'api';
  /** The shared connection (servers that are not perUser). */
  shared: UpstreamConnection | undefined;
}

/**
 * What the gateway's upstreams offer besides tools (docs/mcp-gateway.md, "What clients see"):
 * prompts under `<server>__<prompt>`, resources and resource templates under their own URIs,
 * completions of both, each for the callers the server and their API key admit. Shared
 * connections only: perUser servers list per user.
 */
export class UpstreamContent {
  constructor(private readonly servers: ReadonlyMap<string, ServerEntry>) {}

  /**
   * Upstream prompts under `<server>__<prompt>` (shortened where that is no valid name, as tool
   * names are: exposedMcpName), for the servers this caller may use (shared connections only); an
   * API key's `tools` rule applies to these names as to tool names.
   */
  listPrompts(identity: Identity | null): Prompt[] {
    const out: Prompt[] = [];
    for (const e of this.servers.values()) {
      if (!e.shared || !serverAllows(e.config, identity)) continue;
      for (const [name, p] of exposedItems(e.name, e.shared.lists.prompts))
        if (keyAllowsTool(identity, name)) out.push(asListed(p, e.name, name));
    }
    return out;
  }

  async getPrompt(
    identity: Identity | null,
    name: string,
    args: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<GetPromptResult | undefined> {
    const found = this.promptOf(identity, name);
    return found instanceof CoreError ? undefined : found?.server.getPrompt(found.prompt, args, signal);
  }

  /**
   * The upstream prompt `name` stands for (by its listed name, or `<server>__<its own name>`), if
   * this caller may get it; the refusal (keyToolRefusal) when only its API key's rule stands in the way.
   */
  private promptOf(identity: Identity | null, name: string): { server: UpstreamConnection; prompt: string } | CoreError | undefined {
    const parts = splitExposedName(name);
    const e = parts && this.servers.get(parts.server);
    if (!e?.shared || !serverAllows(e.config, identity)) return undefined;
    const found = findExposed(e.name, exposedItems(e.name, e.shared.lists.prompts), name);
    if (!found) return undefined;
    return keyAllowsTool(identity, found.exposed) ? { server: e.shared, prompt: found.item.name } : keyToolRefusal(found.exposed);
  }

  /**
   * Why this caller is answered as if an upstream prompt (`ref/prompt`) or resource, resource
   * template or a URI one serves (`ref/resource`) did not exist when it does: the refusal of its
   * API key's rule, for the security log (keyRefusalEvent). Undefined when no server this caller
   * may use offers it, or when the key admits it.
   */
  keyRefusal(identity: Identity | null, ref: CompletionRef): CoreError | undefined {
    if (ref.type === 'ref/prompt') {
      const found = this.promptOf(identity, ref.name);
      return found instanceof CoreError ? found : undefined;
    }
    const serves = (e: ServerEntry) =>
      e.shared !== undefined &&
      serverAllows(e.config, identity) &&
      (e.shared.lists.resources.some((r) => r.uri === ref.uri) ||
        e.shared.lists.templates.some((t) => t.uriTemplate === ref.uri || compileUriTemplate(t.uriTemplate).match(ref.uri)));
    const servers = [...this.servers.values()].filter(serves);
    return servers.length > 0 && !servers.some((e) => keyAllowsServer(identity, e.name)) ? keyResourceRefusal() : undefined;
  }

  /**
   * Upstream resources keep their own URIs (they are the upstream's names); the server they came
   * from is remembered for reads. Through an API key with a `tools` rule, only the servers it
   * admits whole (keyAllowsServer).
   */
  listResources(identity: Identity | null): Array<{ uri: string; name: string; server: string; [k: string]: unknown }> {
    const out: Array<{ uri: string; name: string; server: string }> = [];
    for (const e of this.servers.values()) {
      if (!e.shared || !serverAllows(e.config, identity) || !keyAllowsServer(identity, e.name)) continue;
      for (const r of e.shared.lists.resources) out.push({ ...r, server: e.name });
    }
    return out;
  }

  /**
   * completion/complete of an upstream prompt (`<server>__<prompt>`) or resource template, asked of
   * its server with the same checks as prompts/get and resources/read; undefined when neither is
   * one this caller may use.
   */
  async complete(
    identity: Identity | null,
    ref: CompletionRef,
    argument: { name: string; value: string },
    context: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Completion | undefined> {
    if (ref.type === 'ref/prompt') {
      const found = this.promptOf(identity, ref.name);
      if (found instanceof CoreError) return undefined;
      return found?.server.complete({ type: 'ref/prompt', name: found.prompt }, argument, context, signal);
    }
    for (const e of this.servers.values()) {
      if (!e.shared || !serverAllows(e.config, identity) || !keyAllowsServer(identity, e.name)) continue;
      if (e.shared.lists.templates.some((t) => t.uriTemplate === ref.uri)) return e.shared.complete(ref, argument, context, signal);
    }
    return undefined;
  }

  /** Upstream resource templates (their own URI templates), for the same servers and callers as their resources. */
  listResourceTemplates(identity: Identity | null): Array<ResourceTemplate & { server: string }> {
    const out: Array<ResourceTemplate & { server: string }> = [];
    for (const e of this.servers.values()) {
      if (!e.shared || !serverAllows(e.config, identity) || !keyAllowsServer(identity, e.name)) continue;
      for (const t of e.shared.lists.templates) out.push({ ...t, server: e.name });
    }
    return out;
  }

  /** Read an upstream resource from the server that serves it (serverOf). */
  async readResource(identity: Identity | null, uri: string, signal?: AbortSignal): Promise<ReadResourceResult | undefined> {
    return this.serverOf(identity, uri)?.shared.readResource(uri, signal);
  }

  /**
   * resources/subscribe of an upstream resource (2025 sessions): `who` (the session) hears of its
   * updates, and the server that serves it (as for reads) is subscribed while anyone is. False when
   * no server this caller may use serves the URI; a server without subscriptions refuses.
   */
  async subscribe(identity: Identity | null, uri: string, who: ResourceSubscriber): Promise<boolean> {
    const server = this.serverOf(identity, uri);
    if (!server) return false;
    await server.shared.subscribeResource(uri, who);
    return true;
  }

  /** resources/unsubscribe: `who` hears of `uri` no more (the upstream is unsubscribed with its last subscriber). */
  unsubscribe(uri: string, who: ResourceSubscriber): void {
    for (const e of this.servers.values()) e.shared?.unsubscribeResource(uri, who);
  }

  /** Every subscription of `who`, whose session ended. */
  unsubscribeAll(who: ResourceSubscriber): void {
    for (const e of this.servers.values()) e.shared?.unsubscribeAll(who);
  }

  /**
   * The server an upstream resource is read from: the one that listed the URI, else the first
   * whose resource template matches it (servers list few of the resources they serve: the rest,
   * such as server-everything's `demo://resource/dynamic/text/{resourceId}`, are reached through
   * templates).
   */
  private serverOf(identity: Identity | null, uri: string): (ServerEntry & { shared: UpstreamConnection }) | undefined {
    const usable = [...this.servers.values()].filter(
      (e): e is ServerEntry & { shared: UpstreamConnection } =>
        e.shared !== undefined && serverAllows(e.config, identity) && keyAllowsServer(identity, e.name),
    );
    const listed = usable.find((e) => e.shared.lists.resources.some((r) => r.uri === uri));
    return listed ?? usable.find((e) => e.shared.lists.templates.some((t) => compileUriTemplate(t.uriTemplate).match(uri)));
  }
}
