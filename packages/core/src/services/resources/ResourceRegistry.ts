import { CoreError } from '../../kernel/CoreError.js';
import { compileUriTemplate, type UriTemplate } from '../../lib/uriTemplate.js';

/**
 * The caller's context as the pipeline built it. Registries only hand it to the readers and
 * renderers registered with them (the procedure adapters in routers/adapters), so it is opaque
 * here and services stay below the pipeline.
 */
export type CallContext = unknown;

/** A resource the server publishes (mcp.getResources, MCP resources/list). */
export interface ResourceDefinition {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  category?: string;
  mimeType?: string;
  /** The procedure that serves it (set for `meta.mcp.resource`): its access rules apply. */
  procedure?: string;
  /** Inline content; when absent the scheme handler for the URI loads it. */
  read?: (signal?: AbortSignal, ctx?: CallContext) => Promise<ResourceContent> | ResourceContent;
}

/** A family of resources addressed by an RFC 6570 level-1 template (`test://items/{id}`). */
export interface ResourceTemplateDefinition {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  /** The procedure that serves it (set for `meta.mcp.resource`): its access rules apply. */
  procedure?: string;
  read(uri: string, variables: Record<string, string>, signal?: AbortSignal, ctx?: CallContext): Promise<ResourceContent> | ResourceContent;
  /** Suggest values for a template variable (completion/complete with ref/resource). */
  complete?(variable: string, value: string): Promise<string[]> | string[];
}

export interface ResourceContent {
  /** Text, or base64 when `blob` is true. */
  content: string;
  mimeType: string;
  blob?: boolean;
}

/**
 * Loads content for URIs of one scheme (http, https, workspace, or an operator's smb/sftp...).
 * Only called for URIs that were registered: the registry never reads arbitrary URIs.
 * Throw CoreError: NOT_FOUND when the target is gone, ACCESS_DENIED when a rule refuses it,
 * UPSTREAM_ERROR / UPSTREAM_TIMEOUT when a remote end fails. Honour `signal` (the MCP request
 * may be cancelled) and bound what you read (size, time).
 */
export interface SchemeHandler {
  /** URI scheme without the colon, e.g. `sftp`. */
  scheme: string;
  /**
   * `raw` is the URI exactly as registered: the URL parser lowercases hosts of special schemes
   * and resolves `.`/`..` (also `%2e%2e`) segments, so a handler that must read the URI
   * literally parses `raw`.
   */
  read(uri: URL, signal?: AbortSignal, raw?: string): Promise<ResourceContent>;
}

interface CompiledTemplate {
  def: ResourceTemplateDefinition;
  template: UriTemplate;
}

export class ResourceRegistry {
  private readonly resources = new Map<string, ResourceDefinition>();
  private readonly templates = new Map<string, CompiledTemplate>();
  private readonly handlers = new Map<string, SchemeHandler>();
  private readonly listeners = new Set<(uri: string) => void>();
  private readonly listListeners = new Set<() => void>();

  register(resource: ResourceDefinition): void {
    this.resources.set(resource.uri, resource);
    this.listChanged();
  }

  unregister(uri: string): boolean {
    const removed = this.resources.delete(uri) || this.templates.delete(uri);
    if (removed) this.listChanged();
    return removed;
  }

  registerTemplate(def: ResourceTemplateDefinition): void {
    this.templates.set(def.uriTemplate, { def, template: compileUriTemplate(def.uriTemplate) });
    this.listChanged();
  }

  registerScheme(handler: SchemeHandler): void {
    this.handlers.set(handler.scheme.replace(/:$/, '').toLowerCase(), handler);
  }

  /** Is there a handler for this scheme (`https`, `workspace`...)? */
  hasScheme(scheme: string): boolean {
    return this.handlers.has(scheme.replace(/:$/, '').toLowerCase());
  }

  list(filter: { category?: string; search?: string } = {}): ResourceDefinition[] {
    const search = filter.search?.toLowerCase();
    return [...this.resources.values()].filter(
      (r) =>
        (!filter.category || r.category === filter.category) &&
        (!search || r.name.toLowerCase().includes(search) || (r.description ?? '').toLowerCase().includes(search)),
    );
  }

  listTemplates(): ResourceTemplateDefinition[] {
    return [...this.templates.values()].map((t) => t.def);
  }

  get(uri: string): ResourceDefinition | undefined {
    return this.resources.get(uri);
  }

  /** Is this URI registered, or matched by a registered template? */
  has(uri: string): boolean {
    if (this.resources.has(uri)) return true;
    for (const { template } of this.templates.values()) if (template.match(uri)) return true;
    return false;
  }

  /**
   * What serves this URI: its resource, else the first template matching it (the procedure
   * serving it, when one does, and the template). Undefined when nothing does.
   */
  targetOf(uri: string): { procedure?: string | undefined; uriTemplate?: string } | undefined {
    const def = this.resources.get(uri);
    if (def) return { procedure: def.procedure };
    for (const { def: t, template } of this.templates.values())
      if (template.match(uri)) return { procedure: t.procedure, uriTemplate: t.uriTemplate };
    return undefined;
  }

  /** The procedure serving this URI, when a procedure does (for the access policy). */
  procedureFor(uri: string): string | undefined {
    const def = this.resources.get(uri);
    if (def) return def.procedure;
    for (const { def: t, template } of this.templates.values()) if (template.match(uri)) return t.procedure;
    return undefined;
  }

  getTemplate(uriTemplate: string): ResourceTemplateDefinition | undefined {
    return this.templates.get(uriTemplate)?.def;
  }

  /**
   * Read a registered resource, or one that a registered template matches. Anything else is
   * NOT_FOUND: an unregistered URI is never fetched, whatever its scheme.
   */
  async read(uri: string, signal?: AbortSignal, ctx?: CallContext): Promise<ResourceContent & { uri: string }> {
    const def = this.resources.get(uri);
    if (def) return { uri, ...(def.read ? await def.read(signal, ctx) : await this.readThroughScheme(uri, signal)) };
    for (const { def: t, template } of this.templates.values()) {
      const vars = template.match(uri);
      if (vars) return { uri, ...(await t.read(uri, vars, signal, ctx)) };
    }
    throw new CoreError('NOT_FOUND', 'resource not found');
  }

  /**
   * Load a URI with the handler of its scheme. For registered resources and templates only (the
   * registry's read and template reads call it): it is not a way to fetch arbitrary URIs.
   */
  async readThroughScheme(uri: string, signal?: AbortSignal): Promise<ResourceContent> {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw new CoreError('NOT_FOUND', 'resource not found');
    }
    const handler = this.handlers.get(url.protocol.replace(/:$/, ''));
    if (!handler) throw new CoreError('NOT_FOUND', `no handler for scheme ${url.protocol}`);
    return handler.read(url, signal, uri);
  }

  /** Tell subscribers (MCP resources/subscribe) that a resource changed. */
  notifyUpdated(uri: string): void {
    for (const l of this.listeners) l(uri);
  }

  onUpdated(listener: (uri: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called when resources or templates are added or removed (notifications/resources/list_changed). */
  onListChanged(listener: () => void): () => void {
    this.listListeners.add(listener);
    return () => this.listListeners.delete(listener);
  }

  private listChanged(): void {
    for (const l of this.listListeners) l();
  }
}
