import { CoreError } from '../../errors/CoreError.js';

/** A resource the server publishes (mcp.getResources, MCP resources/list). */
export interface ResourceDefinition {
  uri: string;
  name: string;
  description?: string;
  category?: string;
  mimeType?: string;
  /** Inline content; when absent the scheme handler for the URI loads it. */
  read?: (signal?: AbortSignal) => Promise<ResourceContent> | ResourceContent;
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
 */
export interface SchemeHandler {
  scheme: string;
  read(uri: URL, signal?: AbortSignal): Promise<ResourceContent>;
}

export class ResourceRegistry {
  private readonly resources = new Map<string, ResourceDefinition>();
  private readonly handlers = new Map<string, SchemeHandler>();
  private readonly listeners = new Set<(uri: string) => void>();

  register(resource: ResourceDefinition): void {
    this.resources.set(resource.uri, resource);
  }

  unregister(uri: string): boolean {
    return this.resources.delete(uri);
  }

  registerScheme(handler: SchemeHandler): void {
    this.handlers.set(handler.scheme.replace(/:$/, '').toLowerCase(), handler);
  }

  list(filter: { category?: string; search?: string } = {}): ResourceDefinition[] {
    const search = filter.search?.toLowerCase();
    return [...this.resources.values()].filter(
      (r) =>
        (!filter.category || r.category === filter.category) &&
        (!search || r.name.toLowerCase().includes(search) || (r.description ?? '').toLowerCase().includes(search)),
    );
  }

  get(uri: string): ResourceDefinition | undefined {
    return this.resources.get(uri);
  }

  async read(uri: string, signal?: AbortSignal): Promise<ResourceContent & { uri: string }> {
    const def = this.resources.get(uri);
    if (!def) throw new CoreError('NOT_FOUND', 'resource not found');
    if (def.read) return { uri, ...(await def.read(signal)) };
    const url = new URL(uri);
    const handler = this.handlers.get(url.protocol.replace(/:$/, ''));
    if (!handler) throw new CoreError('NOT_FOUND', `no handler for scheme ${url.protocol}`);
    return { uri, ...(await handler.read(url, signal)) };
  }

  /** Tell subscribers (MCP resources/subscribe) that a resource changed. */
  notifyUpdated(uri: string): void {
    for (const l of this.listeners) l(uri);
  }

  onUpdated(listener: (uri: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
