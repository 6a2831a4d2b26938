const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const SECRET_FIELD = /secret|password|apikey|api_key|authorization|token|systemprompt|key$/i;

/** A count of model tokens (`tokens`, `tokensUsed`, `maxTokens`): a number, not a credential. */
const TOKEN_COUNT = /tokens/i;

/** Drop secret-looking fields before they reach a log line (token counts stay: they are numbers). */
function scrub(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields))
    out[k] = SECRET_FIELD.test(k) && !(typeof v === 'number' && TOKEN_COUNT.test(k)) ? '[redacted]' : v;
  return out;
}

/** A JSON-lines logger on stderr. Small on purpose; swap in pino through `createServer({ logger })`. */
export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l + '\n')): Logger {
  const min = LEVELS[level];
  const emit = (lvl: Exclude<LogLevel, 'silent' | 'trace'>, msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < min) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...(fields ? scrub(fields) : {}) }));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
