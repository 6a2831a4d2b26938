import type { AnyRouter } from '@trpc/server';
import { JSONRPC_CODE_BY_TRPC, JSONRPC_STANDARD } from '../pipeline/errorTable.js';
import { describeProcedures, type DescribedProcedure } from './procedureSchemas.js';

/** What both API descriptions need besides the router. */
export interface ApiDescriptionOptions {
  /** Absolute base URL of the server (e.g. https://api.example.com); the entry point is appended. */
  baseUrl: string;
  /** Document title. Default 'ai-backend'. */
  title?: string;
  /** Version of the described API. Default '1.0.0'. */
  version?: string;
}

type Json = Record<string, unknown>;

/** OpenRPC version of the documents produced (its meta-schema is JSON Schema draft 7). */
export const OPENRPC_VERSION = '1.3.2';

const ACCESS_TEXT = {
  public: 'Callable without authentication.',
  user: 'Needs an authenticated caller (Authorization: Bearer <token>).',
  admin: 'Needs an administrator (Authorization: Bearer <token> of an administrator).',
} as const;

function method(p: DescribedProcedure): Json {
  const input = p.input;
  const props = (input?.type === 'object' ? (input.properties as Record<string, Json> | undefined) : undefined) ?? {};
  const required = new Set((input?.required as string[] | undefined) ?? []);
  // /rpc takes the procedure input as a params object: one named param per input field. A
  // non-object input cannot be sent by name: it is the single positional param (params: [input]).
  const byPosition = input !== undefined && input.type !== 'object';
  const params =
    input === undefined
      ? []
      : input.type === 'object'
        ? Object.entries(props).map(([name, schema]) => ({
            name,
            schema,
            required: required.has(name),
            ...(typeof schema.description === 'string' ? { description: schema.description } : {}),
          }))
        : [{ name: 'input', schema: input, required: p.inputRequired }];
  return {
    name: p.path,
    ...(p.description ? { summary: p.description } : {}),
    description: `${p.type === 'query' ? 'Query' : 'Mutation'}. ${ACCESS_TEXT[p.access]}`,
    tags: [{ name: p.path.split('.')[0]! }],
    paramStructure: byPosition ? 'by-position' : 'by-name',
    params,
    result: { name: 'result', schema: p.output ?? {} },
    errors: [
      ...(p.input ? [{ $ref: '#/components/errors/InvalidParams' }] : []),
      ...(p.access !== 'public' ? [{ $ref: '#/components/errors/Unauthorized' }] : []),
      ...(p.access === 'admin' ? [{ $ref: '#/components/errors/Forbidden' }] : []),
    ],
    'x-access': p.access,
    'x-kind': p.type,
  };
}

/**
 * The OpenRPC document of /rpc: one method per procedure (built-in and custom routers), with the
 * input fields as named params. Served at GET /openrpc.json and as `rpc.discover` on /rpc.
 */
export function openRpcDocument(router: AnyRouter, opts: ApiDescriptionOptions): Json {
  const { procedures, components } = describeProcedures(router, 'draft-7');
  return {
    openrpc: OPENRPC_VERSION,
    info: {
      title: opts.title ?? 'ai-backend',
      version: opts.version ?? '1.0.0',
      description:
        'JSON-RPC 2.0 over HTTP POST. Authentication: Authorization: Bearer <token>; each method says who may call it (x-access: public | user | admin).',
    },
    servers: [{ name: 'json-rpc', url: `${opts.baseUrl}/rpc` }],
    methods: procedures.map(method),
    components: {
      schemas: components,
      errors: {
        InvalidParams: { code: JSONRPC_STANDARD.INVALID_PARAMS, message: 'invalid params' },
        MethodNotFound: { code: JSONRPC_STANDARD.METHOD_NOT_FOUND, message: 'method not found' },
        Unauthorized: { code: JSONRPC_CODE_BY_TRPC.UNAUTHORIZED, message: 'authentication required (error.data.code UNAUTHORIZED)' },
        Forbidden: { code: JSONRPC_CODE_BY_TRPC.FORBIDDEN, message: 'administrator access required (error.data.code FORBIDDEN)' },
        TooManyRequests: { code: JSONRPC_CODE_BY_TRPC.TOO_MANY_REQUESTS, message: 'rate limited (error.data.code TOO_MANY_REQUESTS)' },
      },
    },
  };
}
