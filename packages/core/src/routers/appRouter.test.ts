import { describe, expect, it } from 'vitest';
import type { AnyProcedure } from '@trpc/server';
import { builtinRouter } from './appRouter.js';

/** A zod schema's kind (`lazy`, `object`, ...), or why it is not a zod schema. */
const kind = (schema: unknown): string => (schema as { _zod?: { def?: { type?: string } } })?._zod?.def?.type ?? typeof schema;

describe('built-in procedures', () => {
  // A start-up builds no procedure schema (docs/architecture.md, Conventions: "Heavy dependencies
  // load on first use"): each is z.lazy and built on the procedure's first call or JSON Schema.
  it('take their input and output schemas as z.lazy', () => {
    const eager: string[] = [];
    const procedures = Object.entries(builtinRouter._def.procedures as unknown as Record<string, AnyProcedure>);
    expect(procedures.length).toBeGreaterThan(50);
    for (const [path, procedure] of procedures) {
      const def = procedure._def as { inputs?: unknown[]; output?: unknown };
      for (const input of def.inputs ?? []) if (kind(input) !== 'lazy') eager.push(`${path} input (${kind(input)})`);
      if (def.output !== undefined && kind(def.output) !== 'lazy') eager.push(`${path} output (${kind(def.output)})`);
    }
    expect(eager).toEqual([]);
  });
});
