import type { EmbeddingModel, LanguageModel } from 'ai';
import type { NamedProviderConfig } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import { importOptional, OPTIONAL_PACKAGES } from '../../config/optionalPackages.js';
import type { FetchFunction } from './upstreamFetch.js';

/**
 * Named providers (`ai.providers.<id>` with a `type`) through the AI SDK's own provider
 * packages: their auth and wire formats stay the SDK's. Each package is imported on first use
 * (docs/architecture.md: heavy dependencies load lazily), so a server without Bedrock never
 * loads the AWS signing code.
 */

/** The vendor's public API base, used for pinning when `baseUrl` is not set. */
export function NAMED_DEFAULT_BASE_URLS(p: NamedProviderConfig): string {
  switch (p.type) {
    case 'openai-compatible':
      return p.baseUrl;
    case 'mistral':
      return 'https://api.mistral.ai/v1';
    case 'groq':
      return 'https://api.groq.com/openai/v1';
    case 'xai':
      return 'https://api.x.ai/v1';
    case 'deepseek':
      return 'https://api.deepseek.com';
    case 'azure':
      return `https://${p.resourceName}.openai.azure.com/openai`;
    case 'bedrock':
      // The config requires region when baseUrl is not set.
      return `https://bedrock-runtime.${p.region}.amazonaws.com`;
    case 'vertex': {
      // As @ai-sdk/google-vertex builds it: express mode (an API key) has one global base;
      // otherwise the project's regional (or global / multi-region) endpoint.
      if (p.apiKey && !p.project) return 'https://aiplatform.googleapis.com/v1/publishers/google';
      const region = p.location ?? 'us-central1';
      const host =
        region === 'global'
          ? 'aiplatform.googleapis.com'
          : region === 'eu' || region === 'us'
            ? `aiplatform.${region}.rep.googleapis.com`
            : `${region}-aiplatform.googleapis.com`;
      return `https://${host}/v1beta1/projects/${p.project}/locations/${region}/publishers/google`;
    }
  }
}

/**
 * Providers that authenticate without a key of ours: Bedrock and Vertex fall back to the vendor's
 * credential chain (AWS environment credentials, Google application default credentials), and an
 * OpenAI-compatible server may need no key at all (a local vLLM or Ollama).
 */
export function usesCredentialChain(p: NamedProviderConfig): boolean {
  return p.type === 'bedrock' || p.type === 'vertex' || p.type === 'openai-compatible';
}

/** A provider package, or the error naming it when it is not installed (a server checks at start: createRuntime). */
function providerPackage<T>(type: NamedProviderConfig['type'], id: string, load: () => Promise<T>): Promise<T> {
  return importOptional(OPTIONAL_PACKAGES[type], `ai.providers.${id} (type '${type}')`, load);
}

interface ModelArgs {
  model: string;
  /** Undefined: no key (credential chain or a keyless server). */
  apiKey: string | undefined;
  baseURL: string;
  fetch: FetchFunction;
}

/** Keys the SDK packages would otherwise read from their environment variables. */
const noEnvKey = (apiKey: string | undefined) => apiKey ?? '';

export async function createNamedLanguageModel(p: NamedProviderConfig, id: string, a: ModelArgs): Promise<LanguageModel> {
  const headers = p.headers;
  switch (p.type) {
    case 'openai-compatible': {
      const { createOpenAICompatible } = await providerPackage('openai-compatible', id, () => import('@ai-sdk/openai-compatible'));
      return createOpenAICompatible({
        name: id,
        baseURL: a.baseURL,
        ...(a.apiKey ? { apiKey: a.apiKey } : {}),
        headers,
        fetch: a.fetch,
        includeUsage: true,
        supportsStructuredOutputs: true,
      }).chatModel(a.model);
    }
    case 'mistral': {
      const { createMistral } = await providerPackage('mistral', id, () => import('@ai-sdk/mistral'));
      return createMistral({ apiKey: noEnvKey(a.apiKey), baseURL: a.baseURL, headers, fetch: a.fetch })(a.model);
    }
    case 'groq': {
      const { createGroq } = await providerPackage('groq', id, () => import('@ai-sdk/groq'));
      return createGroq({ apiKey: noEnvKey(a.apiKey), baseURL: a.baseURL, headers, fetch: a.fetch })(a.model);
    }
    case 'xai': {
      const { createXai } = await providerPackage('xai', id, () => import('@ai-sdk/xai'));
      return createXai({ apiKey: noEnvKey(a.apiKey), baseURL: a.baseURL, headers, fetch: a.fetch }).chat(a.model);
    }
    case 'deepseek': {
      const { createDeepSeek } = await providerPackage('deepseek', id, () => import('@ai-sdk/deepseek'));
      return createDeepSeek({ apiKey: noEnvKey(a.apiKey), baseURL: a.baseURL, headers, fetch: a.fetch })(a.model);
    }
    case 'azure': {
      const { createAzure } = await providerPackage('azure', id, () => import('@ai-sdk/azure'));
      const azure = createAzure({
        apiKey: noEnvKey(a.apiKey),
        baseURL: a.baseURL,
        headers,
        fetch: a.fetch,
        ...(p.apiVersion ? { apiVersion: p.apiVersion } : {}),
      });
      return p.api === 'chat' ? azure.chat(a.model) : azure(a.model);
    }
    case 'bedrock': {
      const { createAmazonBedrock } = await providerPackage('bedrock', id, () => import('@ai-sdk/amazon-bedrock'));
      return createAmazonBedrock(await bedrockSettings(p, a))(a.model);
    }
    case 'vertex': {
      const { createVertex } = await providerPackage('vertex', id, () => import('@ai-sdk/google-vertex'));
      return createVertex(vertexSettings(p, a))(a.model);
    }
  }
}

export async function createNamedEmbeddingModel(p: NamedProviderConfig, id: string, a: ModelArgs): Promise<EmbeddingModel> {
  switch (p.type) {
    case 'openai-compatible': {
      const { createOpenAICompatible } = await providerPackage('openai-compatible', id, () => import('@ai-sdk/openai-compatible'));
      return createOpenAICompatible({
        name: id,
        baseURL: a.baseURL,
        ...(a.apiKey ? { apiKey: a.apiKey } : {}),
        headers: p.headers,
        fetch: a.fetch,
      }).embeddingModel(a.model);
    }
    case 'mistral': {
      const { createMistral } = await providerPackage('mistral', id, () => import('@ai-sdk/mistral'));
      return createMistral({ apiKey: noEnvKey(a.apiKey), baseURL: a.baseURL, headers: p.headers, fetch: a.fetch }).embedding(a.model);
    }
    case 'azure': {
      const { createAzure } = await providerPackage('azure', id, () => import('@ai-sdk/azure'));
      return createAzure({
        apiKey: noEnvKey(a.apiKey),
        baseURL: a.baseURL,
        headers: p.headers,
        fetch: a.fetch,
        ...(p.apiVersion ? { apiVersion: p.apiVersion } : {}),
      }).embedding(a.model);
    }
    case 'bedrock': {
      const { createAmazonBedrock } = await providerPackage('bedrock', id, () => import('@ai-sdk/amazon-bedrock'));
      return createAmazonBedrock(await bedrockSettings(p, a)).embedding(a.model);
    }
    case 'vertex': {
      const { createVertex } = await providerPackage('vertex', id, () => import('@ai-sdk/google-vertex'));
      return createVertex(vertexSettings(p, a)).textEmbeddingModel(a.model);
    }
    default:
      throw new CoreError('INVALID_PARAMS', `${id} (${p.type}) has no embedding models`, {
        details: { reason: 'no_embeddings', provider: id },
      });
  }
}

type BedrockP = Extract<NamedProviderConfig, { type: 'bedrock' }>;
type VertexP = Extract<NamedProviderConfig, { type: 'vertex' }>;

/**
 * An API key (Bedrock API keys), explicit AWS credentials, or else the AWS credential chain
 * (`fromNodeProviderChain`: environment, shared config and SSO profiles, web identity, ECS and
 * EC2 instance roles), as the AI SDK's Bedrock docs recommend. One chain per process: it caches
 * and refreshes its credentials itself.
 */
async function bedrockSettings(p: BedrockP, a: ModelArgs) {
  const explicit =
    p.accessKeyId && p.secretAccessKey
      ? { accessKeyId: p.accessKeyId, secretAccessKey: p.secretAccessKey, ...(p.sessionToken ? { sessionToken: p.sessionToken } : {}) }
      : undefined;
  return {
    baseURL: a.baseURL,
    fetch: a.fetch,
    headers: p.headers,
    ...(p.region ? { region: p.region } : {}),
    ...(a.apiKey ? { apiKey: a.apiKey } : explicit ? explicit : { credentialProvider: await awsChain() }),
  };
}

let chain: Promise<() => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>> | undefined;
function awsChain() {
  chain ??= importOptional(
    OPTIONAL_PACKAGES.awsCredentials,
    'a bedrock provider without apiKey or accessKeyId/secretAccessKey (the AWS credential chain)',
    () => import('@aws-sdk/credential-providers'),
  ).then(({ fromNodeProviderChain }) => {
    const provider = fromNodeProviderChain();
    return async () => {
      const c = await provider();
      return {
        accessKeyId: c.accessKeyId,
        secretAccessKey: c.secretAccessKey,
        ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}),
      };
    };
  });
  return chain;
}

/** An express-mode API key, a service-account JSON, or Google's application default credentials. */
function vertexSettings(p: VertexP, a: ModelArgs) {
  return {
    baseURL: a.baseURL,
    fetch: a.fetch,
    headers: p.headers,
    ...(p.project ? { project: p.project } : {}),
    ...(p.location ? { location: p.location } : {}),
    ...(a.apiKey ? { apiKey: a.apiKey } : {}),
    ...(p.credentials ? { googleAuthOptions: { credentials: p.credentials } } : {}),
  };
}
