import { CoreError } from '../../kernel/CoreError.js';
import type { ResourceContent, ResourceRegistry, SchemeHandler } from './ResourceRegistry.js';

/** The part of the workspaces service this handler uses; every read goes through its path guard. */
export interface WorkspaceFiles {
  readFile(workspaceId: string, rel: string, encoding: 'base64'): Promise<{ content: string; mimeType: string }>;
  onChange(listener: (change: { workspaceId: string; path: string }) => void): () => void;
}

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|yaml|x-yaml|toml|x-sh)|[^;]*\+(json|xml))/i;

/** `workspace://<workspaceId>/<path>` for a file inside a server workspace. */
export function workspaceResourceUri(workspaceId: string, path: string): string {
  return `workspace://${workspaceId}/${path.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * Split `workspace://<id>/<path>` taken literally from the URI text: the id keeps its case
 * (never `URL.hostname`, which lowercases the host of special schemes) and the path keeps its
 * `.`/`..` and `%2e%2e` segments, which the URL parser would resolve away, so the guard sees
 * (and refuses) them just as it does for readFile. Each segment is percent-decoded once.
 */
export function parseWorkspaceUri(uri: string): { workspaceId: string; rel: string } {
  const m = /^workspace:\/\/([^/?#]*)\/([^?#]*)$/i.exec(uri);
  if (!m) throw new CoreError('NOT_FOUND', 'resource not found');
  let workspaceId: string;
  let rel: string;
  try {
    workspaceId = decodeURIComponent(m[1] as string);
    rel = (m[2] as string).split('/').map(decodeURIComponent).join('/');
  } catch {
    throw new CoreError('ACCESS_DENIED', 'access denied');
  }
  if (!workspaceId || !rel) throw new CoreError('NOT_FOUND', 'resource not found');
  return { workspaceId, rel };
}

/**
 * Files inside server workspaces as resources: `workspace://<id>/<relative path>`. The path is
 * handed to the workspaces service, whose guard applies every rule (root containment, symlinks,
 * blocked paths and extensions, size limit), so a registered URI can never reach further than
 * a readFile call could.
 */
export function createWorkspaceSchemeHandler(files: WorkspaceFiles): SchemeHandler {
  return {
    scheme: 'workspace',
    async read(uri: URL, _signal?: AbortSignal, raw?: string): Promise<ResourceContent> {
      const { workspaceId, rel } = parseWorkspaceUri(raw ?? uri.href);
      const r = await files.readFile(workspaceId, rel, 'base64');
      if (TEXTUAL.test(r.mimeType)) return { content: Buffer.from(r.content, 'base64').toString('utf8'), mimeType: r.mimeType };
      return { content: r.content, mimeType: r.mimeType, blob: true };
    },
  };
}

/**
 * Register the workspace scheme and turn workspace watching (enableWatching) into resource
 * updates: a change to a watched file notifies subscribers of its `workspace://` URI.
 */
export function connectWorkspaceResources(files: WorkspaceFiles, registry: ResourceRegistry): () => void {
  registry.registerScheme(createWorkspaceSchemeHandler(files));
  return files.onChange((change) => registry.notifyUpdated(workspaceResourceUri(change.workspaceId, change.path)));
}
