import type { AnyRouter } from '@trpc/server';
import type { ApiDescriptionOptions } from './openRpcDocument.js';
import { describeProcedures, type DescribedProcedure } from './procedureSchemas.js';

type Json = Record<string, unknown>;

/** superjson's wire envelope: the value under `json`, type hints (Date, Map...) under `meta`. */
const envelope = (value: Json | undefined, required: boolean): Json => ({
  type: 'object',
  properties: {
    json: value ?? {},
    meta: { type: 'object', description: 'superjson type annotations (only for Date, Map, Set, BigInt... values)' },
  },
  ...(required ? { required: ['json'] } : {}),
});

const SECURITY = {
  // Public procedures also take a token: the caller's identity may change what they return.
  public: [{}, { bearerAuth: [] }],
  user: [{ bearerAuth: [] }],
  admin: [{ bearerAuth: [] }],
} as const;

function operation(p: DescribedProcedure): Json {
  const op: Json = {
    operationId: p.path,
    ...(p.description ? { summary: p.description } : {}),
    tags: [p.path.split('.')[0]!],
    security: SECURITY[p.access],
    'x-access': p.access,
    responses: {
      '200': {
        description: 'The procedure result, in the superjson envelope',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['result'],
              properties: { result: { type: 'object', properties: { data: envelope(p.output, false) } } },
            },
          },
        },
      },
      default: {
        description: 'An error (HTTP status from the error code)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/TrpcError' } } },
      },
    },
  };
  if (p.type === 'query') {
    if (p.input) {
      op.parameters = [
        {
          name: 'input',
          in: 'query',
          required: p.inputRequired,
          description: 'The input as URL-encoded JSON in the superjson envelope: ?input={"json":{...}}',
          content: { 'application/json': { schema: envelope(p.input, true) } },
        },
      ];
    }
  } else {
    op.requestBody = {
      required: p.inputRequired,
      content: { 'application/json': { schema: envelope(p.input, p.input !== undefined) } },
    };
  }
  return op;
}

/**
 * The OpenAPI 3.1 document of the tRPC HTTP forms: queries as GET /trpc/<path>?input=<envelope>,
 * mutations as POST /trpc/<path> with the envelope as body. Built-in and custom routers alike.
 */
export function openApiDocument(router: AnyRouter, opts: ApiDescriptionOptions): Json {
  const { procedures, components } = describeProcedures(router, 'draft-2020-12');
  const paths: Record<string, Json> = {};
  for (const p of procedures) paths[`/trpc/${p.path}`] = { [p.type === 'query' ? 'get' : 'post']: operation(p) };
  return {
    openapi: '3.1.0',
    info: {
      title: opts.title ?? 'ai-backend',
      version: opts.version ?? '1.0.0',
      description:
        'tRPC over HTTP (superjson transformer). Each operation says who may call it (x-access: public | user | admin). The same procedures are on /rpc (see /openrpc.json) and, when published, on /mcp.',
    },
    servers: [{ url: opts.baseUrl }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'A JWT or an OAuth access token of this server' } },
      schemas: {
        ...components,
        TrpcError: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              properties: {
                json: {
                  type: 'object',
                  required: ['message', 'code', 'data'],
                  properties: {
                    message: { type: 'string' },
                    code: { type: 'integer', description: 'JSON-RPC style number' },
                    data: {
                      type: 'object',
                      properties: {
                        code: { type: 'string', description: 'tRPC code, e.g. UNAUTHORIZED, BAD_REQUEST' },
                        httpStatus: { type: 'integer' },
                        path: { type: 'string' },
                        appCode: { type: 'string', description: 'Application error code' },
                        details: { type: 'object' },
                        issues: { type: 'array', description: 'Validation issues for invalid input' },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  };
}
