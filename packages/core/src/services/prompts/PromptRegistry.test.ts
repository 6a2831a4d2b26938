import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../config/resolveConfig.js';
import { createRuntime } from '../../createRuntime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { router } from '../../pipeline/init.js';
import { publicProcedure } from '../../pipeline/procedures.js';
import { completeFrom, PromptRegistry } from './PromptRegistry.js';
import { promptsFromRouter, toPromptResult } from '../../routers/adapters/promptsFromRouter.js';
import { callContext } from '../../pipeline/callContext.js';

describe('completeFrom', () => {
  it('ranks prefix matches before substring matches, case-insensitively, at most 100', () => {
    expect(completeFrom(['park', 'Paris', 'spa', 'party'], 'pa').values).toEqual(['park', 'Paris', 'party', 'spa']);
    const many = Array.from({ length: 150 }, (_, i) => `v${i}`);
    expect(completeFrom(many, 'v')).toMatchObject({ total: 150, hasMore: true });
    expect(completeFrom(many, 'v').values).toHaveLength(100);
  });
});

describe('promptsFromRouter', () => {
  const r = router({
    hidden: publicProcedure.meta({ mcp: {} }).query(() => 'not a prompt'),
    review: publicProcedure
      .meta({ description: 'Review code', mcp: { prompt: { title: 'Code review' } } })
      .input(
        z.object({
          code: z.string().describe('The code'),
          depth: z.number().int().default(1),
          strict: z.boolean().optional(),
          tone: z.enum(['kind', 'blunt']),
          lang: z
            .string()
            .meta({ examples: ['ts', 'py'] })
            .optional(),
        }),
      )
      .query(({ input }) => ({ prompt: `${input.tone} review at depth ${input.depth}${input.strict ? ' strictly' : ''}: ${input.code}` })),
  });

  it('turns input fields into arguments (required, enum values, suggestions)', () => {
    const [p, ...rest] = promptsFromRouter(r);
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ name: 'review', title: 'Code review', description: 'Review code' });
    expect(p!.arguments).toEqual([
      { name: 'code', description: 'The code', required: true },
      { name: 'depth', required: false },
      { name: 'strict', required: false },
      { name: 'tone', required: true, values: ['kind', 'blunt'] },
      { name: 'lang', required: false, suggestions: ['ts', 'py'] },
    ]);
  });

  it('renders through the procedure, coercing string arguments to the input types', async () => {
    const reg = new PromptRegistry();
    for (const p of promptsFromRouter(r)) reg.register(p);
    // A real runtime (the procedure middleware reads config, stats, limits), with our router.
    const real = await createRuntime(resolveConfig({ mcp: { auth: { authType: 'none' } }, storage: { type: 'memory' } }), {
      storage: new MemoryStorage(),
    });
    const runtime = { ...real, router: r };
    const ctx = callContext(runtime, {
      identity: null,
      credentialError: null,
      req: { transport: 'mcp', ip: '', signal: new AbortController().signal, headers: new Headers() },
    });
    const out = await reg.render('review', { code: 'x', depth: '3', strict: 'true', tone: 'blunt' }, ctx as never);
    expect(out.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'blunt review at depth 3 strictly: x' } }]);
    await expect(reg.render('review', { code: 'x' }, ctx as never)).rejects.toMatchObject({ appCode: 'INVALID_PARAMS' });
    await expect(reg.render('review', { code: 'x', tone: 'rude' }, ctx as never)).rejects.toMatchObject({ appCode: 'INVALID_PARAMS' });
    await expect(reg.render('nope', {}, ctx as never)).rejects.toMatchObject({ appCode: 'NOT_FOUND' });
    expect((await reg.complete('review', 'lang', 'p')).values).toEqual(['py']);
    expect((await reg.complete('review', 'tone', '')).values).toEqual(['kind', 'blunt']);
    expect((await reg.complete('review', 'code', 'a')).values).toEqual([]);
    await real.close();
  });

  it('toPromptResult accepts a string, { prompt }, or { messages }', () => {
    expect(toPromptResult('hi').messages[0]!.content).toEqual({ type: 'text', text: 'hi' });
    expect(toPromptResult({ prompt: 'p' }, 'd')).toEqual({
      description: 'd',
      messages: [{ role: 'user', content: { type: 'text', text: 'p' } }],
    });
    const messages = [{ role: 'assistant', content: { type: 'text', text: 'a' } }];
    expect(toPromptResult({ messages, description: 'x' })).toEqual({ description: 'x', messages });
  });
});

describe('PromptRegistry.register', () => {
  it('refuses a name with "__", which names upstream MCP servers\' prompts on /mcp; one underscore is fine', () => {
    const registry = new PromptRegistry();
    const prompt = (name: string) => ({ name, get: () => ({ messages: [] }) });
    expect(() => registry.register(prompt('every__simple-prompt'))).toThrow(
      'MCP prompt name "every__simple-prompt" contains "__", which names upstream MCP servers\' prompts (<server>__<prompt>)',
    );
    expect(registry.get('every__simple-prompt')).toBeUndefined();
    registry.register(prompt('code_review'));
    expect(registry.get('code_review')?.name).toBe('code_review');
  });
});
