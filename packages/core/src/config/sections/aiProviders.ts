import { z } from '../../lib/zod.js';
import { PARSE_ONCE } from '../parseOnce.js';
import { once } from '../../lib/once.js';
import { HTTP_TOKEN } from '../../lib/httpToken.js';

/** The four built-in providers (the spec's provider_a..provider_d, in that order). */
export const PROVIDER_IDS = ['anthropic', 'openai', 'google', 'openrouter'] as const;
export type BuiltinProviderId = (typeof PROVIDER_IDS)[number];
/**
 * A provider id: one of the four built-ins or the key of a named provider in `ai.providers`.
 * Plain string, because named ids come from the operator's config.
 */
export type ProviderId = string;

/**
 * Named provider types: any server speaking OpenAI's wire format, or a vendor the Vercel AI SDK
 * has its own provider package for (its auth and wire format stay the SDK's).
 */
export const NAMED_PROVIDER_TYPES = ['openai-compatible', 'azure', 'bedrock', 'vertex', 'mistral', 'groq', 'xai', 'deepseek'] as const;
export type NamedProviderType = (typeof NAMED_PROVIDER_TYPES)[number];

/** Named ids: lower-case, not a built-in and not the spec's neutral `provider_*` names. */
export const NAMED_PROVIDER_ID = /^[a-z][a-z0-9_-]{0,39}$/;
export const isBuiltinProvider = (id: string): id is BuiltinProviderId => (PROVIDER_IDS as readonly string[]).includes(id);

/** One model's registry entry; in `ai.models` every field overrides the bundled value. */
export const modelInfoSchema = once(() =>
  z.strictObject({
    /** Context window in tokens. */
    contextWindow: z.number().int().min(1).optional(),
    /** Largest output the model produces, in tokens. */
    maxOutputTokens: z.number().int().min(1).optional(),
    /** USD per million input tokens (embedding models: the only price). */
    inputUsdPerMTok: z.number().min(0).optional(),
    /** USD per million output tokens. */
    outputUsdPerMTok: z.number().min(0).optional(),
    /** Prices of a call whose input is over `aboveInputTokens` tokens (every token of it), as some providers bill long prompts. */
    longContext: z
      .strictObject({
        aboveInputTokens: z.number().int().min(1),
        inputUsdPerMTok: z.number().min(0),
        outputUsdPerMTok: z.number().min(0),
      })
      .optional(),
    /**
     * The fraction of the input price (long-context prices included) the provider bills an input
     * token read from its prompt cache at; absent: priced as input.
     */
    cachedInputRatio: z.number().min(0).max(1).optional(),
    /** Input the model accepts besides text: 'image' and 'file' parts (chat `messages`). */
    input: z.array(z.enum(['text', 'image', 'file'])).optional(),
    /** 'language' (default) or 'embedding' (served by ai.embed and /v1/embeddings only). */
    kind: z.enum(['language', 'embedding']).optional(),
  }),
);
export type ModelInfoOverride = z.infer<ReturnType<typeof modelInfoSchema>>;

const restrictions = () => ({
  defaultModel: z.string().optional(),
  /** micromatch patterns; when set, only matching models are allowed. */
  allowedModels: z.array(z.string()).optional(),
  /** micromatch patterns that are never allowed. */
  blockedModels: z.array(z.string()).optional(),
});

/** A built-in provider's settings (`ai.providers.anthropic` …). */
export const builtinProviderSchema = once(() =>
  z.strictObject({
    /** Server key; defaults to the provider's usual environment variable. */
    apiKey: z.string().optional(),
    /** Base URL (OpenAI-compatible local servers, test upstreams). */
    baseUrl: z.url().optional(),
    ...restrictions(),
    /** OpenAI only: 'responses' (default, the Responses API) or 'chat' (Chat Completions, for compatible servers). */
    api: z.enum(['responses', 'chat']).optional(),
  }),
);

const namedCommon = () => ({
  /** Display name in listings. Default: the id. */
  name: z.string().min(1).max(100).optional(),
  /** Server key. Bedrock and Vertex without a key use the vendor's credential chain (AWS / Google ADC). */
  apiKey: z.string().optional(),
  /** API base, version path included. Required for openai-compatible; the vendor's public API otherwise. */
  baseUrl: z.url().optional(),
  ...restrictions(),
  /** The provider's models with prices and capabilities; the first language model is the default model. */
  models: z.record(z.string().min(1).max(200), modelInfoSchema()).default({}),
  /** Whether callers may use their own key with this provider. Default false. */
  byok: z.boolean().default(false),
  /** Extra headers sent with every request (never shown in any answer). */
  headers: providerHeaders().optional(),
});

/**
 * Headers the upstream client sets itself, which decide how a request is framed and its connection
 * kept: undici refuses a request that sets them, so in a provider's `headers` they would fail every
 * call. Refused when the config is read instead.
 */
const CLIENT_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'content-length', 'expect']);

/** A provider's extra headers, each refused with its own path and reason (a record key's own error would say only "Invalid key"). */
const providerHeaders = () =>
  z.record(z.string(), z.string()).superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      const problem = !HTTP_TOKEN.test(name)
        ? 'must be an HTTP header name'
        : CLIENT_HEADERS.has(name.toLowerCase())
          ? 'is set by the HTTP client itself and cannot be configured'
          : /[\r\n\0]/.test(value)
            ? 'must not contain line breaks or NUL'
            : undefined;
      if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
    }
  });

/** A named provider (`ai.providers.<id>` with a `type`): one variant per type. */
export const namedProviderSchema = once(() => {
  const common = namedCommon();
  return z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('openai-compatible'), ...common, baseUrl: z.url() }),
    z.strictObject({
      type: z.literal('azure'),
      ...common,
      /** Azure resource name (`https://<resourceName>.openai.azure.com/openai`); or give `baseUrl`. */
      resourceName: z
        .string()
        .regex(/^[a-zA-Z0-9-]{1,64}$/)
        .optional(),
      /** Default 'v1'. */
      apiVersion: z
        .string()
        .regex(/^[A-Za-z0-9.-]{1,40}$/)
        .optional(),
      /** 'responses' (default) or 'chat'. */
      api: z.enum(['responses', 'chat']).optional(),
    }),
    z.strictObject({
      type: z.literal('bedrock'),
      ...common,
      /** AWS region, e.g. us-east-1 (default: the AWS SDK's AWS_REGION). */
      region: z
        .string()
        .regex(/^[a-z0-9-]{1,30}$/)
        .optional(),
      accessKeyId: z.string().optional(),
      secretAccessKey: z.string().optional(),
      sessionToken: z.string().optional(),
    }),
    z.strictObject({
      type: z.literal('vertex'),
      ...common,
      /** Google Cloud project and location (default: the SDK's GOOGLE_VERTEX_PROJECT / _LOCATION). */
      project: z
        .string()
        .regex(/^[a-z0-9-]{1,63}$/)
        .optional(),
      location: z
        .string()
        .regex(/^[a-z0-9-]{1,30}$/)
        .optional(),
      /** Service-account JSON; without it (and without apiKey) Google's application default credentials. */
      credentials: z.record(z.string(), z.string()).optional(),
    }),
    z.strictObject({ type: z.literal('mistral'), ...common }),
    z.strictObject({ type: z.literal('groq'), ...common }),
    z.strictObject({ type: z.literal('xai'), ...common }),
    z.strictObject({ type: z.literal('deepseek'), ...common }),
  ]);
});
export type NamedProviderConfig = z.output<ReturnType<typeof namedProviderSchema>>;
export type BuiltinProviderConfig = z.output<ReturnType<typeof builtinProviderSchema>>;
export type ProviderConfig = BuiltinProviderConfig | NamedProviderConfig;

/**
 * `ai.providers`: the four built-ins by their ids (no `type`), and any number of named providers
 * (any other id, with a `type`).
 */
const buildProvidersSchema = () =>
  z
    .record(z.string(), z.unknown())
    .default({})
    .transform((raw, ctx) => {
      const out: Record<string, ProviderConfig> = {};
      for (const [id, value] of Object.entries(raw)) {
        const builtin = isBuiltinProvider(id);
        if (!builtin && (!NAMED_PROVIDER_ID.test(id) || /^provider_/.test(id))) {
          ctx.issues.push({
            code: 'custom',
            input: id,
            path: [id],
            message: `provider ids use a-z, 0-9, _ and - (at most 40, starting with a letter), and "provider_*" names are the spec's aliases`,
          });
          continue;
        }
        const schema = builtin ? builtinProviderSchema() : namedProviderSchema();
        const parsed = schema.safeParse(value, PARSE_ONCE);
        if (!parsed.success) {
          for (const issue of parsed.error.issues) ctx.issues.push({ ...issue, path: [id, ...issue.path] } as never);
          if (builtin && typeof value === 'object' && value !== null && 'type' in value) {
            ctx.issues.push({
              code: 'custom',
              input: value,
              path: [id, 'type'],
              message: `"${id}" is a built-in provider; named providers use another id`,
            });
          }
          continue;
        }
        const p = parsed.data as ProviderConfig;
        if ('type' in p) {
          const hasLanguage = Object.values(p.models).some((m) => (m.kind ?? 'language') === 'language');
          if (!p.defaultModel && !hasLanguage && Object.keys(p.models).length === 0) {
            ctx.issues.push({
              code: 'custom',
              input: value,
              path: [id, 'models'],
              message: 'a named provider needs defaultModel or at least one model',
            });
          }
          if (p.type === 'azure' && !p.resourceName && !p.baseUrl)
            ctx.issues.push({ code: 'custom', input: value, path: [id, 'resourceName'], message: 'azure needs resourceName or baseUrl' });
          // Without an API key (express mode) Vertex calls a project's endpoint: it must be named.
          if (p.type === 'vertex' && !p.apiKey && !p.baseUrl && !p.project)
            ctx.issues.push({
              code: 'custom',
              input: value,
              path: [id, 'project'],
              message: 'vertex needs project (or apiKey for express mode, or baseUrl)',
            });
          if (p.type === 'bedrock' && !p.region && !p.baseUrl)
            ctx.issues.push({ code: 'custom', input: value, path: [id, 'region'], message: 'bedrock needs region (or baseUrl)' });
        }
        out[id] = p;
      }
      return out;
    });

/** What users write under `ai.providers`: typed, though parsing goes by id (built-in or named). */
export type ProvidersInput = Record<
  string,
  z.input<ReturnType<typeof builtinProviderSchema>> | z.input<ReturnType<typeof namedProviderSchema>>
>;
/**
 * The parse checks each entry against the schema its id calls for, so an error names the exact
 * field; typed here as what it accepts and returns, so a TypeScript config is checked too.
 */
export const providersSchema = once(
  () => buildProvidersSchema() as unknown as z.ZodDefault<z.ZodType<Record<string, ProviderConfig>, ProvidersInput>>,
);

/**
 * The spec's neutral provider names, accepted as input aliases of the real ids
 * (provider_a..provider_d are, in order, anthropic, openai, google, openrouter).
 */
export const PROVIDER_ALIASES: Readonly<Record<string, (typeof PROVIDER_IDS)[number]>> = {
  provider_a: 'anthropic',
  provider_b: 'openai',
  provider_c: 'google',
  provider_d: 'openrouter',
};

/** A provider input as its real id when it is one of the spec's neutral names; anything else as given (the enum then judges it). */
export const unaliasProvider = (v: unknown): unknown =>
  typeof v === 'string' && Object.hasOwn(PROVIDER_ALIASES, v) ? PROVIDER_ALIASES[v] : v;

/**
 * The one reading of a model reference (after alias lookup): `provider/model`, where the model
 * may itself contain slashes (`openrouter/anthropic/claude-sonnet-4.5`), or a bare provider
 * (its default model: `model` is ''). The provider part is un-aliased (provider_b → openai).
 * Used by the config's checks of aliases and fallbacks and by the ai service at call time.
 */
export function splitModelRef(ref: string): { provider: string; model: string } {
  const slash = ref.indexOf('/');
  const head = slash < 0 ? ref : ref.slice(0, slash);
  return { provider: unaliasProvider(head) as string, model: slash < 0 ? '' : ref.slice(slash + 1) };
}
