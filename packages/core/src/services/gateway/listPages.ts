import type { Client } from '@modelcontextprotocol/client';
import { CoreError } from '../../kernel/CoreError.js';
import { invalidAnswer } from './checkedAnswer.js';

export type ListMethod = 'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list';

/** The field of each list's answer that holds its items. */
const ITEMS: Record<ListMethod, string> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
};

type PageRequest = (
  request: { method: ListMethod; params: { cursor?: string } },
  options: { timeout: number },
) => Promise<Record<string, unknown> & { nextCursor?: string }>;

/** More pages than any server needs (100 items a page: 100,000 items); an upstream that never stops paging is cut off. */
const MAX_PAGES = 1000;

/**
 * Every page of an upstream's list, requested one by one so that the whole list is bounded by
 * `maxBytes` (gateway.maxResultBytes and an answer's envelope) as one answer is. The SDK client's own walk gathers up to
 * 64 pages of up to `maxBytes` each: an upstream paging its tools could make the gateway hold,
 * and answer every client's tools/list with, 64 times the limit.
 */
export async function listPages<T>(
  client: Client,
  method: ListMethod,
  opts: { server: string; maxBytes: number; timeout: number },
): Promise<T[]> {
  const out: T[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    // A spec method: the client checks each page as its own list methods do.
    const request = client.request.bind(client) as unknown as PageRequest;
    const page = await request({ method, params: cursor === undefined ? {} : { cursor } }, { timeout: opts.timeout }).catch(
      (err: unknown) => {
        const invalid = invalidAnswer(err);
        if (invalid === undefined) throw err;
        throw new CoreError('UPSTREAM_ERROR', `MCP server "${opts.server}" answered ${method} with no valid result: ${invalid}`, {
          details: { reason: 'upstream_invalid_result', server: opts.server },
        });
      },
    );
    const items = (page[ITEMS[method]] ?? []) as T[];
    bytes += JSON.stringify(items).length;
    if (bytes > opts.maxBytes)
      throw new CoreError(
        'PAYLOAD_TOO_LARGE',
        `MCP server "${opts.server}" lists more than ${opts.maxBytes} bytes in its ${method} pages (gateway.maxResultBytes and 64 KiB)`,
        { details: { reason: 'upstream_result_too_large', server: opts.server } },
      );
    out.push(...items);
    if (typeof page.nextCursor !== 'string' || page.nextCursor === cursor) return out;
    cursor = page.nextCursor;
  }
  throw new CoreError('UPSTREAM_ERROR', `MCP server "${opts.server}" answered ${method} with more than ${MAX_PAGES} pages`, {
    details: { reason: 'upstream_error', server: opts.server },
  });
}
