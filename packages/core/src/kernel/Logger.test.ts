import { describe, expect, it } from 'vitest';
import { createLogger } from './Logger.js';

const capture = () => {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: createLogger('debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>)) };
};

describe('createLogger: secret-looking fields', () => {
  it('redacts credentials (tokens, keys, secrets, passwords, authorization, system prompts)', () => {
    const { lines, logger } = capture();
    logger.info('x', {
      token: 'T1',
      accessToken: 'T2',
      refreshToken: 'T3',
      sessionToken: 'T4',
      idToken: 'T5',
      apiKey: 'K1',
      vaultKey: 'K2',
      secret: 'S1',
      clientSecret: 'S2',
      password: 'P1',
      authorization: 'Bearer A',
      systemPrompt: 'SP',
    });
    const text = JSON.stringify(lines);
    for (const s of ['T1', 'T2', 'T3', 'T4', 'T5', 'K1', 'K2', 'S1', 'S2', 'P1', 'Bearer A', 'SP']) expect(text).not.toContain(`"${s}"`);
  });

  it('keeps token counts: an admin credit, a purchase or a stream says how many tokens', () => {
    const { lines, logger } = capture();
    logger.info('billing: admin credit', { by: 'alice', userId: 'bob', tokens: 1000, type: 'one_time' });
    logger.debug('ai: stream ended early', { requestId: 'r1', tokensUsed: 42, maxTokens: 100, estimatedTokens: 7 });
    expect(lines[0]).toMatchObject({ tokens: 1000 });
    expect(lines[1]).toMatchObject({ tokensUsed: 42, maxTokens: 100, estimatedTokens: 7 });
  });
});
