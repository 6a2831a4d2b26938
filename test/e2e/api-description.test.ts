import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { validateOpenRPCDocument } from '@open-rpc/schema-utils-js';
import { z } from 'zod';
import { adminProcedure, protectedProcedure, publicProcedure, router } from '@ai-backend/core';
import { rpc, startTestServer, type TestServer } from './helpers/testServer.js';

/** An unnamed recursive schema: a category holds categories. */
const Category = z.object({
  name: z.string(),
  get children() {
    return z.array(Category);
  },
});

interface FolderT {
  path: string;
  sub: FolderT[];
}
const Folder: z.ZodType<FolderT> = z.lazy(() => z.object({ path: z.string(), sub: z.array(Folder) }));
interface CommentT {
  text: string;
  replies: CommentT[];
  score: number;
}
const Comment: z.ZodType<CommentT> = z.lazy(() => z.object({ text: z.string(), replies: z.array(Comment), score: z.number() }));

/** An operator's namespace: it must be described like the built-in ones. */
const Address = z.object({ street: z.string(), city: z.string() }).meta({ id: 'Address' });
const shop = router({
  find: publicProcedure
    .meta({ description: 'Find products' })
    .input(z.object({ q: z.string().min(1).describe('search text'), limit: z.number().int().max(50).default(10) }))
    .output(z.object({ items: z.array(z.object({ id: z.string(), name: z.string() })) }))
    .query(({ input }) => ({ items: [{ id: '1', name: `${input.q} x${input.limit}` }] })),
  order: protectedProcedure
    .meta({ description: 'Place an order' })
    .input(z.object({ sku: z.string(), shipTo: Address, billTo: Address.optional() }))
    .mutation(({ input }) => ({ ok: true, sku: input.sku })),
  refund: adminProcedure.input(z.object({ orderId: z.string() })).mutation(() => ({ ok: true })),
  ping: publicProcedure.query(() => 'pong'),
  double: publicProcedure.input(z.number()).query(({ input }) => input * 2),
  count: publicProcedure.input(z.array(z.string())).mutation(({ input }) => input.length),
  maybe: publicProcedure.input(z.object({ a: z.string() }).optional()).query(({ input }) => input?.a ?? 'none'),
  // An unnamed recursive input: zod refers to the schema itself as "#".
  category: publicProcedure.input(Category).query(({ input }) => input.name),
  // Two z.lazy schemas: zod names each one's definition __schema0.
  folder: publicProcedure.input(z.object({ root: Folder })).query(() => 1),
  comment: publicProcedure.input(z.object({ thread: Comment })).query(() => 1),
});

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    customRouters: { shop },
    apiDescription: { title: 'Shop API', version: '2.1.0' },
  });
});
afterAll(() => s.stop());

type Json = Record<string, any>;
const getJson = async (path: string) => {
  const res = await s.fetch(path);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  return (await res.json()) as Json;
};

describe('OpenRPC (/openrpc.json and rpc.discover)', () => {
  it('is a valid OpenRPC document (official meta-schema) with built-in and custom methods', async () => {
    const doc = await getJson('/openrpc.json');
    expect(validateOpenRPCDocument(doc as never)).toBe(true);
    expect(doc.info).toMatchObject({ title: 'Shop API', version: '2.1.0' });
    expect(doc.servers[0].url).toBe(`${s.url}/rpc`);
    const names = doc.methods.map((m: Json) => m.name);
    expect(names).toEqual(
      expect.arrayContaining(['shop.find', 'shop.order', 'shop.refund', 'ai.generateText', 'admin.statistics', 'mcp.greeting']),
    );
    const find = doc.methods.find((m: Json) => m.name === 'shop.find');
    expect(find.params).toEqual([
      { name: 'q', schema: { type: 'string', minLength: 1, description: 'search text' }, required: true, description: 'search text' },
      { name: 'limit', schema: expect.objectContaining({ type: 'integer', maximum: 50, default: 10 }), required: false },
    ]);
    expect(find.result.schema.properties.items.type).toBe('array');
    expect(find['x-access']).toBe('public');
    expect(doc.methods.find((m: Json) => m.name === 'shop.refund')['x-access']).toBe('admin');
    // A named (registered) schema is lifted into components and referenced from there.
    const order = doc.methods.find((m: Json) => m.name === 'shop.order');
    expect(order['x-access']).toBe('user');
    expect(order.params.find((p: Json) => p.name === 'shipTo').schema).toEqual({ $ref: '#/components/schemas/Address' });
    expect(doc.components.schemas.Address.required).toEqual(['street', 'city']);
  });

  it('is what rpc.discover answers on /rpc, and an invalid document would be refused by the validator', async () => {
    const res = await s.fetch('/rpc', rpc('rpc.discover'));
    const body = (await res.json()) as Json;
    expect(body.result).toEqual(await getJson('/openrpc.json'));
    // The validator is not a rubber stamp: a broken document fails it.
    const broken = { ...body.result, methods: [{ name: 'x', params: 'nope' }] };
    expect(validateOpenRPCDocument(broken as never)).not.toBe(true);
  });

  it('describes methods that really are callable as described (params by name)', async () => {
    const res = await s.fetch('/rpc', rpc('shop.find', { q: 'tea' }));
    expect(((await res.json()) as Json).result).toEqual({ items: [{ id: '1', name: 'tea x10' }] });
  });
});

describe('inputs that are not objects, and optional inputs', () => {
  it('OpenRPC describes a non-object input as one positional param, and /rpc takes it that way', async () => {
    const doc = await getJson('/openrpc.json');
    const double = doc.methods.find((m: Json) => m.name === 'shop.double');
    expect(double.paramStructure).toBe('by-position');
    expect(double.params).toEqual([{ name: 'input', schema: { type: 'number' }, required: true }]);
    expect(((await (await s.fetch('/rpc', rpc('shop.double', [21]))).json()) as Json).result).toBe(42);
    expect(((await (await s.fetch('/rpc', rpc('shop.count', [['a', 'b']]))).json()) as Json).result).toBe(2);
    // An object input may be sent by position too; more than one element is refused.
    expect(((await (await s.fetch('/rpc', rpc('shop.find', [{ q: 'tea' }]))).json()) as Json).result).toEqual({
      items: [{ id: '1', name: 'tea x10' }],
    });
    expect(((await (await s.fetch('/rpc', rpc('shop.double', [1, 2]))).json()) as Json).error.code).toBe(-32602);
    // rpc.discover as OpenRPC clients send it: "params": [].
    expect(((await (await s.fetch('/rpc', rpc('rpc.discover', []))).json()) as Json).result.openrpc).toBe('1.3.2');
  });

  it('an input is required exactly when the procedure refuses a call without it', async () => {
    const rpcDoc = await getJson('/openrpc.json');
    const api = await getJson('/openapi.json');
    const q = (path: string) => api.paths[`/trpc/shop.${path}`];
    expect(q('double').get.parameters[0].required).toBe(true);
    expect(q('count').post.requestBody.required).toBe(true);
    expect(q('maybe').get.parameters[0].required).toBe(false);
    expect(q('find').get.parameters[0].required).toBe(true);
    expect(rpcDoc.methods.find((m: Json) => m.name === 'shop.double').params[0].required).toBe(true);
    // As described: no input is refused for double, accepted for maybe.
    expect((await s.fetch('/trpc/shop.double')).status).toBe(400);
    expect(((await (await s.fetch('/trpc/shop.maybe')).json()) as Json).result.data.json).toBe('none');
  });
});

describe('recursive schemas', () => {
  /** Every $ref of a document, which must point inside that document's components. */
  const refs = (doc: unknown): string[] =>
    JSON.stringify(doc)
      .match(/"\$ref":"[^"]*"/g)
      ?.map((m) => m.slice(8, -1)) ?? [];
  const resolves = (doc: Json, ref: string) =>
    ref.startsWith('#/components/') &&
    ref
      .slice(2)
      .split('/')
      .reduce<any>((node, key) => node?.[key], doc) !== undefined;

  it('an unnamed recursive input refers to a component, never to "#" (the document root)', async () => {
    for (const doc of [await getJson('/openrpc.json'), await getJson('/openapi.json')]) {
      const all = refs(doc);
      expect(all).not.toContain('#');
      for (const ref of all) expect(resolves(doc, ref), ref).toBe(true);
    }
    const rpcDoc = await getJson('/openrpc.json');
    const children = rpcDoc.methods.find((m: Json) => m.name === 'shop.category').params.find((p: Json) => p.name === 'children');
    expect(children.schema.items).toEqual({ $ref: '#/components/schemas/shop.category.input' });
    expect(rpcDoc.components.schemas['shop.category.input'].required).toEqual(['name', 'children']);
    expect(validateOpenRPCDocument(rpcDoc as never)).toBe(true);
    // Two procedures' z.lazy definitions each keep their own component.
    const target = (method: string, param: string) =>
      rpcDoc.components.schemas[
        rpcDoc.methods
          .find((m: Json) => m.name === method)
          .params.find((p: Json) => p.name === param)
          .schema.$ref.split('/')
          .pop()
      ];
    expect(Object.keys(target('shop.folder', 'root').properties)).toEqual(['path', 'sub']);
    expect(Object.keys(target('shop.comment', 'thread').properties)).toEqual(['text', 'replies', 'score']);
    await expect(SwaggerParser.validate(structuredClone(await getJson('/openapi.json')) as never)).resolves.toBeTruthy();
  });
});

describe('OpenAPI 3.1 (/openapi.json)', () => {
  it('is a valid OpenAPI 3.1 document (official schema, references resolved)', async () => {
    const doc = await getJson('/openapi.json');
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: s.url }]);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/trpc/shop.find', '/trpc/shop.order', '/trpc/ai.generateText', '/trpc/admin.statistics']),
    );
    expect(doc.paths['/trpc/shop.find'].get.parameters[0]).toMatchObject({ name: 'input', in: 'query', required: true });
    expect(doc.paths['/trpc/shop.order'].post.requestBody.content['application/json'].schema.properties.json.properties.shipTo).toEqual({
      $ref: '#/components/schemas/Address',
    });
    expect(doc.paths['/trpc/shop.order'].post.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/trpc/shop.find'].get.security).toEqual([{}, { bearerAuth: [] }]);
    expect(doc.paths['/trpc/shop.ping'].get.parameters).toBeUndefined();
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('a broken document fails the validator', async () => {
    const doc = await getJson('/openapi.json');
    doc.paths['/trpc/shop.find'].get.responses = 'nope';
    await expect(SwaggerParser.validate(doc as never)).rejects.toThrow();
  });

  it('describes the real wire forms: GET with ?input={json} for queries, POST {json} for mutations', async () => {
    const doc = await getJson('/openapi.json');
    const op = doc.paths['/trpc/shop.find'].get;
    expect(op.parameters[0].content['application/json'].schema.required).toEqual(['json']);
    const res = await s.fetch('/trpc/shop.find?input=' + encodeURIComponent(JSON.stringify({ json: { q: 'tea', limit: 2 } })));
    expect(((await res.json()) as Json).result.data.json).toEqual({ items: [{ id: '1', name: 'tea x2' }] });
    const post = await s.fetch('/trpc/shop.order', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ json: { sku: 'a', shipTo: { street: 's', city: 'c' } } }),
    });
    // Described as needing a bearer token, and it does.
    expect(post.status).toBe(401);
    expect(((await post.json()) as Json).error.json.data.code).toBe('UNAUTHORIZED');
  });
});

describe('apiDescription.enabled: false', () => {
  it('removes both documents and rpc.discover', async () => {
    const off = await startTestServer({ mcp: { auth: { authType: 'none' } }, apiDescription: { enabled: false } });
    try {
      expect((await off.fetch('/openrpc.json')).status).toBe(404);
      expect((await off.fetch('/openapi.json')).status).toBe(404);
      const body = (await (await off.fetch('/rpc', rpc('rpc.discover'))).json()) as Json;
      expect(body.error.code).toBe(-32601);
    } finally {
      await off.stop();
    }
  });
});
