import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { router } from '../../pipeline/init.js';
import { publicProcedure } from '../../pipeline/procedures.js';
import { promptsFromRouter } from './promptsFromRouter.js';

const prompt = (input: z.ZodType) =>
  publicProcedure
    .meta({ description: 'd', mcp: { prompt: true } })
    .input(input)
    .query(() => 'text');
// Two different schemas with one meta id: z.toJSONSchema refuses it ("Duplicate schema id").
const clashing = () => z.object({ a: z.string().meta({ id: 'same' }), b: z.number().meta({ id: 'same' }) });

describe('promptsFromRouter: arguments from the input schema', () => {
  it('lists the input fields as arguments (required unless optional or defaulted; enums as values)', () => {
    const [p] = promptsFromRouter(
      router({
        mcp: router({
          explain: prompt(
            z.object({
              topic: z.string().describe('what'),
              level: z.enum(['basic', 'expert']).default('basic'),
              note: z.string().optional(),
            }),
          ),
        }),
      }),
    );
    expect(p!.arguments).toEqual([
      { name: 'topic', description: 'what', required: true },
      { name: 'level', required: false, values: ['basic', 'expert'] },
      { name: 'note', required: false },
    ]);
  });

  it("converts a built-in namespace's prompt input on first use, not when the registry is built", () => {
    const [p] = promptsFromRouter(router({ mcp: router({ odd: prompt(clashing()) }) }));
    expect(p!.name).toBe('odd');
    expect(() => p!.arguments).toThrow(/Duplicate schema id/);
  });

  it("converts a custom router's prompt input at once, so a schema zod cannot convert still fails start-up", () => {
    expect(() => promptsFromRouter(router({ custom: router({ odd: prompt(clashing()) }) }))).toThrow(/Duplicate schema id/);
  });
});
