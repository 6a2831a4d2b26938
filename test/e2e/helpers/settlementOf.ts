import { waitFor } from '@ai-backend/test-utils';
import type { AiServer } from './aiGateway.js';

/** Output tokens the test upstream answers with in the /v1 metering suites (its `outputTokens`). */
export const OUTPUT_TOKENS = 16;
/** The platform fee on top of a platform-paid call's tokens (10 %, rounded up: the servers' default). */
export const fee = (tokens: number): number => Math.ceil(tokens * 0.1);
/** The tokens the test upstream reports for a prompt of `content` alone: a token per four characters, plus OUTPUT_TOKENS. */
export const usageOf = (content: string): number => Math.ceil(content.length / 4) + OUTPUT_TOKENS;

/** How the one call of a user was closed in the ledger, and what it held. */
export interface Settlement {
  /** Tokens the hold reserved, fee included (0 for BYOK: nothing is held). */
  held: number;
  kind: 'settle' | 'release' | 'byok_usage';
  /** Tokens charged (0 when released, and for BYOK). */
  charged: number;
  /** The usage recorded (settle and BYOK). */
  usage: { tokensUsed: number; tokensCharged: number; provider: string; model: string } | undefined;
  /** Closes recorded for the call: exactly one when the call is settled once. */
  closes: number;
}

/**
 * The settlement of the only call `sub` made (each test call uses a fresh user), or of its call
 * `requestId`: its hold and the one settle, release or BYOK record that closed it, once one has
 * landed. Checks the ledger audit.
 */
export async function settlementOf(server: AiServer, sub: string, requestId?: string): Promise<Settlement> {
  const entries = await waitFor(
    async () => {
      const all = (await server.runtime.billing.ledger.entries(sub)).filter((e) => requestId === undefined || e.requestId === requestId);
      return all.some((e) => e.kind === 'settle' || e.kind === 'release' || e.kind === 'byok_usage') ? all : undefined;
    },
    { what: `the settlement of ${sub}'s call` },
  );
  const held = -entries
    .filter((e) => e.kind === 'reserve')
    .flatMap((e) => e.lines)
    .reduce((sum, l) => sum + l.delta, 0);
  const closes = entries.filter((e) => e.kind === 'settle' || e.kind === 'release' || e.kind === 'byok_usage');
  const close = closes[0]!;
  const audit = await server.runtime.billing.ledger.audit(sub);
  if (!audit.consistent) throw new Error(`the ledger of ${sub} is not consistent`);
  return {
    held,
    kind: close.kind as Settlement['kind'],
    charged: close.kind === 'settle' ? close.usage!.tokensCharged : 0,
    usage: close.usage as Settlement['usage'],
    closes: closes.length,
  };
}
