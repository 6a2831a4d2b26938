import { unknownKeysMessage } from './unknownKeysMessage.js';

/**
 * Parse options for schemas parsed once per server: the config (twice with `config check`) and
 * the sections a config's transforms parse themselves. zod's JIT compiles a parser for every
 * object schema on its first parse, which costs more than it saves for a single parse: about
 * 20 ms of start-up CPU for the whole config (docs/performance.md, "Cold start and idle RSS,
 * fifth session"). `jitless` is zod's own per-parse switch; results and issues are the same.
 * `error` words unknown keys with a guess at the key meant; being in the parse options, it reaches
 * the sections that transforms parse themselves too.
 */
export const PARSE_ONCE = { jitless: true, error: unknownKeysMessage } as const;
