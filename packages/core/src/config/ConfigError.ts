export interface ConfigProblem {
  /** Dotted path, e.g. `oauth.encryptionKey`. */
  path: string;
  message: string;
  /** For an object with keys the schema does not know: those keys (`path` is the object's). */
  unknownKeys?: string[];
}

/** Thrown when a config does not validate; carries every problem with its path. */
export class ConfigError extends Error {
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p.path || '(root)'}: ${p.message}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
