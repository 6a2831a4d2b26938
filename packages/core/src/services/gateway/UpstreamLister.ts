import type { Logger } from '../../kernel/Logger.js';
import type { OpenedUpstream } from './openUpstream.js';
import { ENVELOPE_BYTES } from './upstreamLists.js';
import { listPages, type ListMethod } from './listPages.js';
import type { Prompt, Resource, ResourceTemplate, Tool } from './mcpWire.js';
import { usableTools } from './usableTools.js';
import type { ListKind, UpstreamLists } from './upstreamLists.js';
import { describe } from './upstreamFailure.js';

export interface UpstreamListerOptions {
  /** The server's configured name. */
  server: string;
  maxResultBytes: number;
  timeoutMs: number;
  logger: Logger;
  /** Cuts the connection's credentials out of an upstream's text. */
  scrub: (text: string) => string;
}

/** Reads an open upstream's lists (one connection's): every page, bounded, its unusable tools left out. */
export class UpstreamLister {
  constructor(private readonly opts: UpstreamListerOptions) {}

  /**
   * Every list the upstream offers (its capabilities), as a connect reads them. Its tools must
   * list (the connect fails otherwise); a prompts or resources list that fails is empty for now and
   * named in `failed`, for the connection to list it again later.
   */
  async all(opened: OpenedUpstream): Promise<{ lists: UpstreamLists; failed: ListKind[] }> {
    const caps = opened.client.getServerCapabilities() ?? {};
    const failed: ListKind[] = [];
    const unlisted = (kind: ListKind, method: ListMethod) => (err: unknown) => {
      this.failed(method, err);
      failed.push(kind);
      return [];
    };
    const [tools, prompts, resources, templates] = await Promise.all([
      caps.tools ? this.tools(opened) : [],
      caps.prompts ? this.list<Prompt>(opened, 'prompts/list').catch(unlisted('prompts', 'prompts/list')) : [],
      caps.resources ? this.list<Resource>(opened, 'resources/list').catch(unlisted('resources', 'resources/list')) : [],
      caps.resources ? this.templates(opened, []) : [],
    ]);
    return { lists: { tools, prompts, resources, templates }, failed };
  }

  /** A list failed (no answer, a malformed one, an error): its administrator is told why. */
  failed(method: ListMethod | ListKind, err: unknown): void {
    this.opts.logger.warn('MCP upstream list failed', {
      server: this.opts.server,
      method,
      error: this.opts.scrub(describe(err, this.opts.timeoutMs)),
    });
  }

  /** One of the upstream's lists, every page, bounded as a whole by gateway.maxResultBytes (listPages). */
  list<T>(opened: OpenedUpstream, method: ListMethod): Promise<T[]> {
    // As much as one stdio answer may hold: a list is not bounded more tightly for coming in pages.
    const maxBytes = this.opts.maxResultBytes + ENVELOPE_BYTES;
    return listPages<T>(opened.client, method, { server: this.opts.server, maxBytes, timeout: this.opts.timeoutMs });
  }

  /** The upstream's tools that clients can use (usableTools); the rest are logged, by name, for its administrator. */
  async tools(opened: OpenedUpstream): Promise<Tool[]> {
    const { tools, dropped } = usableTools(await this.list<Tool>(opened, 'tools/list'));
    if (dropped.length > 0)
      this.opts.logger.warn('MCP upstream tools left out', {
        server: this.opts.server,
        tools: dropped.slice(0, 20).map((d) => `${d.name.slice(0, 100)}: ${d.why}`),
        count: dropped.length,
      });
    return tools;
  }

  /** Its resources and resource templates (a refresh after resources/list_changed); `had`: the templates it had. */
  async resources(opened: OpenedUpstream, had: ResourceTemplate[]): Promise<{ resources: Resource[]; templates: ResourceTemplate[] }> {
    const [resources, templates] = await Promise.all([this.list<Resource>(opened, 'resources/list'), this.templates(opened, had)]);
    return { resources, templates };
  }

  /**
   * Its resource templates; when it answers no list (many servers with resources have no
   * templates, and say so with an error), those it had: none at connect, the last ones on a refresh.
   */
  private templates(opened: OpenedUpstream, had: ResourceTemplate[]): Promise<ResourceTemplate[]> {
    return this.list<ResourceTemplate>(opened, 'resources/templates/list').catch(() => had);
  }
}
