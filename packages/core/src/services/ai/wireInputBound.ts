import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import { ATTACHMENT_TOKENS, attachmentBytes } from './buildPrompt.js';
import { MESSAGE_OVERHEAD_TOKENS, PER_MESSAGE_OVERHEAD_TOKENS, TOOL_USE_OVERHEAD_TOKENS, utf8 } from './callModel.js';
import type { WireRequest } from './passThrough/wireRequest.js';

type Json = Record<string, unknown>;
type AiLimits = Pick<ResolvedConfig['ai'], 'maxContentChars' | 'maxAttachments' | 'maxAttachmentBytes'>;

/** Top-level fields that carry no input tokens (or that the forwarded body rewrites). */
const NOT_INPUT = new Set([
  'model',
  'models',
  'stream',
  'stream_options',
  'metadata',
  'user',
  'max_tokens',
  'max_completion_tokens',
  'max_output_tokens',
]);
/** Top-level fields the tool-use overhead is for and the content limit leaves out, as for the translated `tools`. */
const TOOL_FIELDS = new Set(['tools', 'functions', 'response_format', 'text', 'tool_choice', 'function_call']);
/** Keys whose string values are short enums (`"user"`, `"text"`), covered by the per-message overhead. */
const ENUM_KEYS = new Set(['type', 'role']);
/** Keys whose strings name or link parts (ids, tool names): input, but not content for `ai.maxContentChars`, as in the translation. */
const NAME_KEYS = new Set(['id', 'name', 'tool_call_id', 'tool_use_id', 'call_id']);
/** Content parts of the three wire formats that a provider bills by what they show, not by their bytes. */
const ATTACHMENT_TYPES = new Set(['image', 'image_url', 'input_image', 'document', 'file', 'input_file', 'input_audio']);
/** Where an attachment's payload (a URL, a data: URL or base64) sits. */
const PAYLOAD_KEYS = new Set(['data', 'url', 'image_url', 'file_data', 'file_url']);

/**
 * Top-level fields that make the provider act on the account that pays (the operator's key on a
 * platform-paid call): its stored prompts, its MCP connectors, its code containers. The
 * translation does not carry them, and the pass-through path must not forward them.
 */
const ACCOUNT_FIELDS: Record<WireRequest['format'], readonly string[]> = {
  'openai-chat': [],
  'openai-responses': ['prompt'],
  'anthropic-messages': ['mcp_servers', 'container'],
};

/**
 * Top-level fields whose values make the provider bill above the pricing table's prices (OpenAI's
 * priority processing, Anthropic's fast mode): the hold, every money budget (the user's, an API
 * key's) and the charge are made at the table's prices, so such a call would spend more of the
 * operator's money than any of them counts. Only the values listed are forwarded (absent or null
 * too); `flex` costs less than the table says, never more.
 */
const PRICE_FIELDS: Record<WireRequest['format'], Readonly<Record<string, readonly string[]>>> = {
  'openai-chat': { service_tier: ['auto', 'default', 'flex'] },
  'openai-responses': { service_tier: ['auto', 'default', 'flex'] },
  'anthropic-messages': { speed: ['standard'] },
};

/**
 * Top-level fields that buy what the provider bills beyond tokens (a web search per call or per
 * result: OpenAI's and OpenRouter's `web_search_options`, OpenRouter's `plugins`): the pricing
 * table prices tokens only, so no hold, budget or recorded cost would count it. The other formats'
 * such tools are refused where tools are read (server tools, non-function tools).
 */
const BILLED_FIELDS: Record<WireRequest['format'], readonly string[]> = {
  'openai-chat': ['web_search_options', 'plugins'],
  'openai-responses': [],
  'anthropic-messages': [],
};

const bad = (message: string, param: string) => new CoreError('INVALID_PARAMS', message, { details: { reason: 'invalid_request', param } });

interface Tally {
  /** UTF-8 bytes of every key and string the provider may turn into input tokens. */
  bytes: number;
  /** Characters of the content (text outside the tool fields), for `ai.maxContentChars`. */
  chars: number;
  attachments: number;
}

/**
 * An upper bound of the input tokens of a /v1 body as sent, whatever of it the translation
 * understood: the pass-through path forwards the caller's body, so the hold (and the content
 * limits) must cover every part of it, not only what was translated (a legacy `functions` list,
 * an image in a system message, a document inside an Anthropic `tool_result`, a vendor field).
 * Counted as the translation counts (UTF-8 bytes of text, keys included, plus the same
 * per-call, per-message and tool-use overheads; ATTACHMENT_TOKENS per image, file or document
 * part), so for a body the translation read whole it is at most the translation's own estimate,
 * and prepareCall takes the larger of the two. Refuses (before anything is held or sent) a
 * body over the content or attachment limits and a reference to something stored at the
 * provider (`file_id`, a `file` source, the fields of ACCOUNT_FIELDS): those would be served from
 * the paying account's own files, prompts or connectors; a price tier above the table's
 * (PRICE_FIELDS); and what is billed beyond tokens (BILLED_FIELDS).
 */
export function wireInputBound(req: WireRequest, ai: AiLimits): number {
  const body = req.body;
  for (const field of ACCOUNT_FIELDS[req.format]) {
    if (body[field] !== undefined && body[field] !== null)
      throw bad(`${field} is not supported: it refers to what is stored in the provider account; send it in the request`, field);
  }
  for (const field of BILLED_FIELDS[req.format]) {
    if (body[field] !== undefined && body[field] !== null)
      throw bad(`${field} is not supported: the provider bills it beyond the tokens this server prices`, field);
  }
  for (const [field, allowed] of Object.entries(PRICE_FIELDS[req.format])) {
    const v = body[field];
    if (v !== undefined && v !== null && !allowed.includes(v as string))
      throw bad(
        `${field} ${JSON.stringify(v).slice(0, 50)} is not supported: it is billed above the prices this server charges by (use ${allowed.join(', ')}, or leave it out)`,
        field,
      );
  }
  const t: Tally = { bytes: 0, chars: 0, attachments: 0 };
  let tools = false;
  for (const [key, value] of Object.entries(body)) {
    if (NOT_INPUT.has(key)) continue;
    const tool = TOOL_FIELDS.has(key);
    if (tool && value !== null && value !== undefined && (!Array.isArray(value) || value.length > 0)) tools = true;
    t.bytes += utf8(key);
    walk(value, key, tool, t, ai, key);
  }
  if (t.chars > ai.maxContentChars)
    throw new CoreError('PAYLOAD_TOO_LARGE', `the messages are longer than ${ai.maxContentChars} characters`);
  const turns = Array.isArray(body.messages) ? body.messages.length : Array.isArray(body.input) ? body.input.length : 1;
  return t.bytes + MESSAGE_OVERHEAD_TOKENS + turns * PER_MESSAGE_OVERHEAD_TOKENS + (tools ? TOOL_USE_OVERHEAD_TOKENS : 0);
}

function walk(value: unknown, path: string, tool: boolean, t: Tally, ai: AiLimits, key = ''): void {
  if (typeof value === 'string') {
    t.bytes += utf8(value);
    if (!tool && !NAME_KEYS.has(key)) t.chars += value.length;
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, `${path}.${i}`, tool, t, ai, key));
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const o = value as Json;
  if (typeof o.file_id === 'string') throw storedFile(`${path}.file_id`);
  if (typeof o.type === 'string' && ATTACHMENT_TYPES.has(o.type) && !tool) {
    attachment(o, path, t, ai);
    return;
  }
  for (const [key, v] of Object.entries(o)) {
    t.bytes += utf8(key);
    if (ENUM_KEYS.has(key) && typeof v === 'string') continue;
    walk(v, `${path}.${key}`, tool, t, ai, key);
  }
}

/**
 * One image, file or document part: ATTACHMENT_TOKENS, its payload checked against the
 * attachment limits, and any text it carries (an Anthropic text document, a title) counted as text.
 */
function attachment(o: Json, path: string, t: Tally, ai: AiLimits): void {
  if (++t.attachments > ai.maxAttachments)
    throw new CoreError('PAYLOAD_TOO_LARGE', `at most ${ai.maxAttachments} image or file parts per request`);
  t.bytes += ATTACHMENT_TOKENS;
  const source = o.source && typeof o.source === 'object' ? (o.source as Json) : undefined;
  if (source?.type === 'file' || typeof source?.file_id === 'string') throw storedFile(`${path}.source`);
  // A text document's data is its text; a content document's blocks are text blocks.
  const textSource = source?.type === 'text' || source?.type === 'content';
  const visit = (v: unknown, key: string, p: string): void => {
    if (typeof v === 'string') {
      if (PAYLOAD_KEYS.has(key) && !textSource) {
        if (attachmentBytes(v) > ai.maxAttachmentBytes)
          throw new CoreError('PAYLOAD_TOO_LARGE', `an image or file part is larger than ${ai.maxAttachmentBytes} bytes`);
        return;
      }
      if (ENUM_KEYS.has(key) || key === 'media_type' || key === 'mediaType' || key === 'detail') return;
      t.bytes += utf8(v);
      t.chars += v.length;
      return;
    }
    if (Array.isArray(v)) v.forEach((x, i) => visit(x, key, `${p}.${i}`));
    else if (v && typeof v === 'object') {
      if (typeof (v as Json).file_id === 'string') throw storedFile(`${p}.file_id`);
      for (const [k, x] of Object.entries(v as Json)) visit(x, k, `${p}.${k}`);
    }
  };
  for (const [k, v] of Object.entries(o)) visit(v, k, `${path}.${k}`);
}

const storedFile = (param: string) =>
  bad('files stored at the provider (file_id, a file source) are not supported: send the file itself (base64 or a URL)', param);

/**
 * Whether an Anthropic Messages body asks the provider to cache its prompt (`cache_control` at the
 * top, or on a system, tool or message block, or a block inside one): a cache write is billed at
 * up to twice the input price (the hour's cache), so such a call's cost bound counts its input
 * twice (prepareCall). Only where the format can carry one; a shallow look, not a walk.
 */
export function asksProviderCache(req: WireRequest): boolean {
  if (req.format !== 'anthropic-messages') return false;
  const b = req.body;
  if (b.cache_control != null) return true;
  const marked = (v: unknown): boolean => typeof v === 'object' && v !== null && (v as Json).cache_control != null;
  const inBlocks = (v: unknown): boolean =>
    Array.isArray(v) && v.some((x) => marked(x) || (typeof x === 'object' && x !== null && inList((x as Json).content)));
  const inList = (v: unknown): boolean => Array.isArray(v) && v.some(marked);
  return (
    inBlocks(b.system) ||
    inBlocks(b.tools) ||
    (Array.isArray(b.messages) && b.messages.some((m) => marked(m) || inBlocks((m as Json)?.content)))
  );
}
