import { createHash, randomBytes } from 'node:crypto';
import { createRequestStateCodec, type RequestStateCodec, type ServerContext } from '@modelcontextprotocol/server';
import type { Runtime } from '@ai-backend/core';
import type { McpRequestFacts } from './callContext.js';

/** The caller a sealed state belongs to: another caller replaying it is refused. */
export function callerOf(ctx: ServerContext): string {
  const scope = (ctx.http?.authInfo?.extra?.facts as McpRequestFacts | undefined)?.scope;
  return scope?.identity ? `sub:${scope.identity.sub}` : `ip:${scope?.facts.ip ?? ''}`;
}

/**
 * The `requestState` seal of multi round-trip requests (MCP 2026-07-28): the client carries the
 * state between rounds and must not be able to alter it, so it is sealed with the SDK's HMAC
 * codec, bound to the caller and short-lived. The key is derived from jwt.secret when one is
 * configured, so every instance sharing the config accepts every other's state (no sticky
 * routing); without it, a per-process key (one instance, or sticky routing).
 */
export function createRequestStateSeal(runtime: Runtime): RequestStateCodec<unknown> {
  const secret = runtime.config.jwt.secret;
  const key = secret ? createHash('sha256').update('ai-backend mcp requestState\n').update(secret).digest() : randomBytes(32);
  return createRequestStateCodec<unknown>({ key, ttlSeconds: 15 * 60, bind: callerOf });
}
