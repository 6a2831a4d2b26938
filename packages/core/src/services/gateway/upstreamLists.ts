import type { Prompt, Resource, ResourceTemplate, Tool } from './mcpWire.js';

// Apart from UpstreamLister (which opens nothing, but reads an open upstream): the published types
// of UpstreamConnection name these, and a declaration file that imported the lister's module would
// reach openUpstream's, which names the optional MCP client package's types (an app without it
// failed to type-check against ours: install-smoke, skipLibCheck false).

/** What an upstream offers, as last listed (refreshed on its list_changed notifications). */
export interface UpstreamLists {
  tools: Tool[];
  prompts: Prompt[];
  resources: Resource[];
  /** Its resource templates (resources/templates/list); they change with its resources (resources/list_changed). */
  templates: ResourceTemplate[];
}

export type ListKind = 'tools' | 'prompts' | 'resources';

export const EMPTY_LISTS: UpstreamLists = { tools: [], prompts: [], resources: [], templates: [] };
export const LIST_KINDS: readonly ListKind[] = ['tools', 'prompts', 'resources'];

/** The same definitions in the same order (an upstream's lists are plain JSON). */
const sameList = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a === b || (a.length === b.length && JSON.stringify(a) === JSON.stringify(b));

/** One kind of list unchanged (resources: the resources and their templates). */
export const sameLists = (a: UpstreamLists, b: UpstreamLists, kind: ListKind): boolean =>
  sameList(a[kind], b[kind]) && (kind !== 'resources' || sameList(a.templates, b.templates));

/**
 * What a stdio answer's line may hold beyond gateway.maxResultBytes (the JSON-RPC envelope; a
 * list is an answer with no result limit of its own): also the slack of a whole paged list.
 */
export const ENVELOPE_BYTES = 64 * 1024;
