import { describe, expect, it } from 'vitest';
import type { Tool } from './mcpWire.js';
import { usableTools } from './usableTools.js';

const tool = (name: string, inputSchema: Record<string, unknown>, outputSchema?: Record<string, unknown>): Tool =>
  ({ name, inputSchema, ...(outputSchema ? { outputSchema } : {}) }) as Tool;

/** A linked list: a $ref loop that descends into the value at each step, which every validator handles. */
const linkedList = {
  type: 'object',
  properties: { head: { $ref: '#/$defs/node' } },
  $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } },
};

describe('usableTools', () => {
  it('keeps ordinary and recursive (descending) schemas, with root references too', () => {
    const { tools, dropped } = usableTools([
      tool('plain', { type: 'object', properties: { q: { type: 'string', format: 'uri' } } }),
      tool('list', linkedList, { type: 'object', properties: { child: { $ref: '#' } } }),
    ]);
    expect(tools.map((t) => t.name)).toEqual(['plain', 'list']);
    expect(dropped).toEqual([]);
  });

  it('leaves out tools whose schemas a client cannot compile: dangling, remote and in-place looping $refs, bad types and patterns, deep nesting', () => {
    let deep: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < 5000; i++) deep = { type: 'object', properties: { a: deep } };
    const { tools, dropped } = usableTools([
      tool('ok', { type: 'object' }),
      tool('dangling-out', { type: 'object' }, { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }),
      tool('dangling-in', { type: 'object', properties: { a: { $ref: '#/definitions/nope' } } }),
      tool('remote', { type: 'object', properties: { a: { $ref: 'https://example.com/schema.json' } } }),
      tool('cycle', { type: 'object', $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } }),
      tool('self', { type: 'object' }, { type: 'object', allOf: [{ $ref: '#' }] }),
      tool('banana', { type: 'banana' }),
      tool('deep', deep),
      tool('bad-pattern', { type: 'object' }, { type: 'object', properties: { a: { type: 'string', pattern: '(' } } }),
      tool('bad-output-keyword', { type: 'object' }, { type: 'object', minProperties: 'two' }),
    ]);
    expect(tools.map((t) => t.name)).toEqual(['ok']);
    expect(dropped.map((d) => d.name)).toEqual([
      'dangling-out',
      'dangling-in',
      'remote',
      'cycle',
      'self',
      'banana',
      'deep',
      'bad-pattern',
      'bad-output-keyword',
    ]);
    expect(dropped[0]!.why).toMatch(/^outputSchema: .*missing/);
    expect(dropped[1]!.why).toMatch(/^inputSchema: /);
  });

  it('keeps the first of two tools with one name', () => {
    const { tools, dropped } = usableTools([
      tool('echo', { type: 'object', properties: { first: { type: 'string' } } }),
      tool('echo', { type: 'object', properties: { second: { type: 'string' } } }),
    ]);
    expect(tools).toHaveLength(1);
    expect(tools[0]!.inputSchema.properties).toHaveProperty('first');
    expect(dropped).toEqual([{ name: 'echo', why: 'a second tool with this name' }]);
  });

  it('judges each tool on its own when several name the same $id', () => {
    const { tools } = usableTools([
      tool('a', { $id: 'https://example.com/shared.json', type: 'object', properties: { x: { type: 'string' } } }),
      tool('b', { $id: 'https://example.com/shared.json', type: 'object', properties: { y: { type: 'number' } } }),
    ]);
    expect(tools.map((t) => t.name)).toEqual(['a', 'b']);
  });

  it('keeps $refs to $id and $anchor names of the schema, and 2020-12 schemas', () => {
    const { tools, dropped } = usableTools([
      tool(
        'anchored',
        { type: 'object', properties: { a: { $ref: '#item' } }, $defs: { item: { $anchor: 'item', type: 'string' } } },
        {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { n: { $ref: 'https://example.com/n.json' } },
          $defs: { n: { $id: 'https://example.com/n.json', type: 'number' } },
        },
      ),
    ]);
    expect(dropped).toEqual([]);
    expect(tools).toHaveLength(1);
  });

  it('checks a long list quickly, and a relisting faster still', () => {
    const many = Array.from({ length: 2000 }, (_, i) =>
      tool(
        `t${i}`,
        { type: 'object', properties: { [`a${i}`]: { type: 'string' } } },
        { type: 'object', properties: { [`r${i}`]: { type: 'string' } } },
      ),
    );
    // CPU time of this process over each synchronous check, which a loaded machine does not stretch
    // as it stretches the wall clock (1,019 ms wall once at load 20 for a check of about 300 ms).
    const cpuMs = (since: NodeJS.CpuUsage) => {
      const { user, system } = process.cpuUsage(since);
      return (user + system) / 1000;
    };
    let started = process.cpuUsage();
    expect(usableTools(many).tools).toHaveLength(2000);
    // Compiling each schema (about a millisecond each) took seconds here.
    expect(cpuMs(started)).toBeLessThan(1000);
    started = process.cpuUsage();
    expect(usableTools(many).tools).toHaveLength(2000);
    expect(cpuMs(started)).toBeLessThan(250);
  });
});
