import type { GenerateTextResult, ToolSet } from 'ai';
import { loadAiSdk } from './aiSdk.js';
import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { SettledUsage } from '../metering/Metering.js';
import { prepareCall, sdkCallArgs, type CallDeps, type PreparedCall, type TextCall, type TextCallInput } from './prepareCall.js';
import { accountCall, textPricing } from './accountCall.js';
import { attemptLoop, settleLoop, type Served } from './attemptLoop.js';
import { assertValidCallSchemas, parseOutput } from './validateOutput.js';
import { loadUpstreamFetch } from './upstreamFetch.js';
import { callTargets, type Attempt, type Target } from './callTargets.js';

export { estimateTokens } from './callModel.js';

/** ai.generateText input, as in the spec plus the chat inputs (provider already un-aliased). */
export type GenerateTextInput = TextCallInput;
export type GenerateTextCall = TextCall;
export type GenerateTextDeps = CallDeps;

/** A tool call the model asked for; the client runs it and sends the result back in `messages`. */
export interface ToolCallOut {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

export interface GenerateTextOutput {
  success: true;
  data: {
    text: string;
    provider: ProviderId;
    model: string;
    finishReason: string;
    usage: { inputTokens: number | null; outputTokens: number | null; totalTokens: number | null };
    requestId: string;
    /** Present when tools were offered and the model called some. */
    toolCalls?: ToolCallOut[];
    /** Structured output (request `output`): the answer parsed and validated against the schema. */
    object?: unknown;
    /** Targets tried before the one that served (`provider`/`model` above), with why they did not. */
    attempts?: Attempt[];
  };
  /** Platform-paid calls. */
  tokenUsage?: SettledUsage;
  /** BYOK calls. */
  usageInfo?: { tokensUsed: number; estimatedCostUsd: number };
}

/**
 * One ai.generateText call: prepareCall (checks, prompt, billing's hold), the attempt loop
 * (targets, fallbacks, breaker), then the accounting step (settle) or the hold's release.
 *
 * Charging rule (see docs/ai.md): a platform-paid call is charged only when the upstream answer
 * is complete while the client is still connected. Any failure, timeout or client disconnect
 * before that releases the whole reservation.
 */
export async function runGenerateText(deps: GenerateTextDeps, input: GenerateTextInput, call: GenerateTextCall): Promise<GenerateTextOutput> {
  const { logger } = deps;
  await assertValidCallSchemas(input);
  const prepared = await prepareCall(deps, input, call);
  const { hold } = prepared;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the output type depends on the request's schema
  let served: Served<Target, GenerateTextResult<ToolSet, any>>;
  try {
    served = await settleLoop(
      // biome-ignore lint/correctness/useYield: attemptLoop takes a generator; a non-streamed attempt yields nothing, it returns its result
      attemptLoop(deps, callTargets(deps, prepared, call), call, async function* (t, ctx) {
        // Load the SDK, the provider and the HTTP client before the clock starts: on a cold server
        // the imports take hundreds of ms, and ai.timeoutMs is the time the upstream gets to answer.
        const [{ ai: sdk }, args] = await Promise.all([loadAiSdk(), sdkCallArgs(deps, t, input, ctx.signal), loadUpstreamFetch()]);
        ctx.start();
        if (ctx.signal.aborted) throw new Error('aborted before the upstream call');
        return await sdk.generateText(args);
      }),
    );
  } catch (err) {
    await hold.release(err instanceof CoreError ? String(err.details?.reason ?? err.appCode) : 'failed');
    throw err;
  }
  const result = served.value;
  // Only the target that answered is charged, under its provider and model.
  const p = served.target;
  const { provider, model, mode, requestId } = p;

  // The client left while the answer was on its way: it will not receive it, so no charge.
  if (call.signal.aborted) {
    await hold.release('cancelled');
    throw new CoreError('CANCELLED', 'the request was cancelled by the client');
  }

  const { inputTokens, outputTokens } = result.usage;
  // Some providers send zeros when the upstream gave no usage; a real call always has input
  // tokens (the prompt is never empty), so zero input counts as "not reported".
  const reported = inputTokens ? (result.usage.totalTokens ?? inputTokens + (outputTokens ?? 0)) : undefined;
  // An upstream that reports no usage is charged the reserved worst case, never less than it may have used.
  const tokensUsed = reported ?? p.estimatedTokens;
  if (reported === undefined) logger.warn('ai: upstream reported no usage; charging the estimate', { requestId, provider, model });
  for (const w of result.warnings ?? []) logger.debug('ai: provider warning', { requestId, provider, warning: w.type });

  const data: GenerateTextOutput['data'] = {
    text: result.text,
    provider,
    model,
    finishReason: result.finishReason,
    usage: reported === undefined ? { inputTokens: null, outputTokens: null, totalTokens: null } : { inputTokens: inputTokens ?? null, outputTokens: outputTokens ?? null, totalTokens: reported },
    requestId,
  };
  if (served.attempts.length > 0) data.attempts = served.attempts;
  if (result.toolCalls.length > 0) data.toolCalls = result.toolCalls.map((t) => ({ toolCallId: t.toolCallId, toolName: t.toolName, input: t.input }));
  // The upstream did the work: it is paid for even when the answer fails the schema below.
  const charged = await accountCall(deps, hold, textPricing(deps, p), call, { provider, model, metadata: input.metadata, route: p.route }, { tokensUsed, inputTokens, outputTokens });
  logger.debug('ai: generateText', { requestId, provider, model, mode, usage: tokensUsed });
  if (input.output && !data.toolCalls) {
    const parsed = await parseOutput(result.text, input.output.schema);
    if (!parsed.ok) throw invalidOutput(parsed.reason, p, charged);
    data.object = parsed.value;
  }
  return { success: true, data, ...charged };
}

export { ownError } from './attemptLoop.js';

/** The model's structured answer failed validation (the call is charged: the upstream did the work). */
export function invalidOutput(reason: string, p: PreparedCall, charged: object): CoreError {
  return new CoreError('UPSTREAM_ERROR', `${p.provider} answered with output that fails the schema: ${reason}`, {
    details: { reason: 'invalid_output', provider: p.provider, requestId: p.requestId, ...charged },
  });
}
